// Command plan-mode is a permhost plugin that keeps an agent to planning: it
// rejects every edit, delete, move and command execution, and abstains on
// everything else (reads, searches, fetches, leaving plan mode), leaving
// those to the rest of the chain.
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

// blocked are the tool kinds that change the workspace or run code.
var blocked = map[string]string{
	abi.KindEdit:    "edits",
	abi.KindDelete:  "deletes",
	abi.KindMove:    "moves",
	abi.KindExecute: "commands",
}

// claudeTools maps claude-agent-acp's tool names to their kind, for a call
// whose kind the agent left out.
var claudeTools = map[string]string{
	"Bash":         abi.KindExecute,
	"Write":        abi.KindEdit,
	"Edit":         abi.KindEdit,
	"MultiEdit":    abi.KindEdit,
	"NotebookEdit": abi.KindEdit,
}

func decide(req abi.Request) (abi.Decision, error) {
	var cfg config
	if err := pdk.DecodeConfig(req, &cfg); err != nil {
		return abi.Decision{}, err
	}
	if cfg.OnlyInMode != "" && req.Session.Mode != cfg.OnlyInMode {
		return abi.Decision{Outcome: abi.OutcomeAbstain}, nil
	}
	kind := req.ToolCall.Kind
	if kind == "" || kind == abi.KindOther {
		if k, ok := claudeTools[req.ToolCall.ToolName]; ok {
			kind = k
		}
	}
	what, ok := blocked[kind]
	if !ok {
		return abi.Decision{Outcome: abi.OutcomeAbstain}, nil
	}
	return abi.Decision{
		Outcome: abi.OutcomeReject,
		Reason:  fmt.Sprintf("plan mode: %s are not allowed while planning (%s)", what, describe(req.ToolCall)),
	}, nil
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
