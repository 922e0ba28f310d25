// Command plan-mode is a permhost plugin that keeps an agent to planning: it
// rejects every edit, delete, move and shell command, and abstains on
// everything else (reads, searches, fetches, leaving plan mode), leaving
// those to the rest of the chain. It goes by the action's family, which
// permhost reads from each agent's own shape (a claude-agent-acp Write of
// kind "other" is still an edit).
//
// Config (optional):
//
//	only_in_mode = "plan"   # act only while the session's mode is this id
package main

import (
	"fmt"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/plugins/pdk"
)

type config struct {
	// OnlyInMode restricts the plugin to sessions in this mode; empty means
	// always.
	OnlyInMode string `json:"only_in_mode"`
}

func init() {
	pdk.Register(pdk.Plugin{
		Info: abi.Info{
			Name:        "plan-mode",
			Version:     "1.0.0",
			Description: "Rejects every edit, delete, move and execute; abstains otherwise.",
			ConfigKeys:  []string{"only_in_mode"},
		},
		Decide: decide,
	})
}

func main() {}

// blocked are the families that change the workspace or run code.
var blocked = map[string]string{
	abi.FamilyEdit:   "edits",
	abi.FamilyDelete: "deletes",
	abi.FamilyMove:   "moves",
	abi.FamilyShell:  "commands",
}

func decide(req abi.Request) (abi.Decision, error) {
	var cfg config
	if err := pdk.DecodeConfig(req, &cfg); err != nil {
		return abi.Decision{}, err
	}
	if cfg.OnlyInMode != "" && req.Session.Mode != cfg.OnlyInMode {
		return abi.Decision{Outcome: abi.OutcomeAbstain}, nil
	}
	what, ok := blocked[family(req)]
	if !ok {
		return abi.Decision{Outcome: abi.OutcomeAbstain}, nil
	}
	return abi.Decision{
		Outcome: abi.OutcomeReject,
		Reason:  fmt.Sprintf("plan mode: %s are not allowed while planning (%s)", what, describe(req.ToolCall)),
	}, nil
}

// family is the action's; a request without an action (built by hand; a
// 1.1 host always sends one) takes it from the ACP kind.
func family(req abi.Request) string {
	if req.Action != nil {
		return req.Action.Family
	}
	if req.ToolCall.Kind == abi.KindExecute {
		return abi.FamilyShell
	}
	return req.ToolCall.Kind
}

// describe names the call in a reason: the agent's title (for a Bash call,
// the whole command) cut to a readable length.
func describe(tc abi.ToolCall) string {
	for _, s := range []string{tc.Title, tc.ToolName, tc.Kind} {
		if s != "" {
			return pdk.Clean(s, 200)
		}
	}
	return "unknown tool"
}
