// Command protect-secrets is a permhost plugin that rejects any tool call
// reading or writing a protected file (by default .env files, keys and
// ~/.ssh), wherever the call names it: the paths permhost found, the tool
// call's locations and diffs, rawInput fields, shell argv words and redirect
// targets. It abstains on everything else.
//
// Config (optional):
//
//	globs = [".env", "*.pem", "~/.ssh/**"]  # replaces the defaults
//	home  = "/home/dev"                      # what ~ means; default: any home
package main

import (
	"fmt"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/plugins/pdk"
)

// defaultGlobs are protected when the config names no globs.
var defaultGlobs = []string{
	".env", ".env.*", "*.pem", "*.key", "*.p12",
	"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
	"~/.ssh/**", "~/.aws/credentials", "~/.netrc", "~/.gnupg/**",
}

type config struct {
	Globs []string `json:"globs"`
	// Paths is accepted as another name for Globs; both lists apply.
	Paths []string `json:"paths"`
	Home  string   `json:"home"`
}

func init() {
	pdk.Register(pdk.Plugin{
		Info: abi.Info{
			Name:        "protect-secrets",
			Version:     "1.0.0",
			Description: "Rejects reads and writes of files matching protected globs (.env, *.pem, id_rsa, ~/.ssh/** by default).",
			ConfigKeys:  []string{"globs", "paths", "home"},
		},
		Decide: decide,
	})
}

func main() {}

func decide(req abi.Request) (abi.Decision, error) {
	var cfg config
	if err := pdk.DecodeConfig(req, &cfg); err != nil {
		return abi.Decision{}, err
	}
	globs := append(append([]string(nil), cfg.Globs...), cfg.Paths...)
	if cfg.Globs == nil && cfg.Paths == nil {
		globs = defaultGlobs
	}
	patterns := make([]pattern, 0, len(globs))
	for _, g := range globs {
		p, err := compile(g)
		if err != nil {
			return abi.Decision{}, err
		}
		patterns = append(patterns, p)
	}
	for _, c := range candidates(req) {
		for _, p := range patterns {
			if p.match(c, cfg.Home) {
				return abi.Decision{
					Outcome: abi.OutcomeReject,
					Reason:  fmt.Sprintf("protect-secrets: %s matches protected pattern %q", pdk.Clean(c.shown, 200), p.glob),
				}, nil
			}
		}
	}
	return abi.Decision{Outcome: abi.OutcomeAbstain}, nil
}
