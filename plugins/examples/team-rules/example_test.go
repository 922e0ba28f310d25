package main

import (
	"encoding/json"
	"fmt"

	"github.com/permhost/permhost/abi"
)

// The rules of a team, and what they make of four scripts as permhost's
// shell analysis hands them over.
func Example() {
	config := json.RawMessage(`{"rules": [
		{"action": "allow",  "family": "shell", "command": [["npm", "test"], ["git", "status"]]},
		{"action": "reject", "command": ["rm", "-rf"], "reason": "no recursive deletes"},
		{"action": "reject", "command": ["curl"], "piped_into": [["sh"], ["bash"]]}]}`)
	options := []abi.Option{
		{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
	}
	for _, commands := range [][]abi.Command{
		{{Argv: []string{"git", "status"}}, {Argv: []string{"npm", "test"}}},
		{{Argv: []string{"git", "status"}}, {Argv: []string{"rm", "-fr", "/home/dev"}}},
		{{Argv: []string{"npm", "test"}, Assignments: []abi.Assignment{{Name: "PATH", Value: "/tmp"}}}},
		{{Argv: []string{"curl", "-s", "x.sh"}, Pipeline: 1, Stage: 1}, {Argv: []string{"bash"}, Pipeline: 1, Stage: 2}},
	} {
		d, _ := decide(abi.Request{
			ToolCall: abi.ToolCall{Kind: abi.KindExecute},
			Action:   &abi.Action{Family: abi.FamilyShell},
			Options:  options,
			Shell:    &abi.Shell{Parsed: true, Commands: commands},
			Config:   config,
		})
		fmt.Printf("%s: %s\n", d.Outcome, d.Reason)
	}
	// Output:
	// allow: team-rules: rules[0] (allow)
	// reject: team-rules: rules[1] (reject): command "rm -fr /home/dev"; no recursive deletes
	// abstain: team-rules: no rule decides: the assignment "PATH=" precedes "npm"
	// reject: team-rules: rules[2] (reject): command "curl -s x.sh" piped into "bash"
}
