// Command protect-secrets is a permhost plugin that rejects any tool call
// reading or writing a protected file (by default .env files, keys and
// ~/.ssh), wherever the call names it: the paths permhost found, the files
// the action names, shell argv words, redirect targets and assignment
// values, and the words of the action's command. It abstains on everything
// else. "~" is the session's home (session.home); when permhost does not
// know it, any home directory.
//
// Config (optional):
//
//	globs = [".env", "*.pem", "~/.ssh/**"]  # replaces the defaults
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"

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
	// Home is refused with a message: permhost gives session.home.
	Home *json.RawMessage `json:"home"`
}

func init() {
	pdk.Register(pdk.Plugin{
		Info: abi.Info{
			Name:        "protect-secrets",
			Version:     "1.0.0",
			Description: "Rejects reads and writes of files matching protected globs (.env, *.pem, id_rsa, ~/.ssh/** by default).",
			ConfigKeys:  []string{"globs", "paths"},
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
	if cfg.Home != nil {
		return abi.Decision{}, errors.New("home is no longer a config key: permhost tells the plugin the user's home directory (session.home)")
	}
	home := ""
	if path.IsAbs(req.Session.Home) {
		home = path.Clean(req.Session.Home)
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
			if p.match(c, home) {
				return abi.Decision{
					Outcome: abi.OutcomeReject,
					Reason:  fmt.Sprintf("protect-secrets: %s matches protected pattern %q", pdk.Clean(c.shown, 200), p.glob),
				}, nil
			}
		}
	}
	return abi.Decision{Outcome: abi.OutcomeAbstain}, nil
}
