package pdk

import (
	"encoding/json"
	"strings"

	"github.com/permhost/permhost/abi"
)

// InputString returns the string value of key in the tool call's rawInput,
// or "" when rawInput is not an object or the value is not a string.
func InputString(req abi.Request, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(req.ToolCall.RawInput, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil {
		return ""
	}
	return s
}

// CommandText returns the shell script of the tool call: the action's
// command, which permhost found wherever the agent put it (ABI 1.1); for a
// request without an action (a 1.0 host, or one built by hand), the
// analysed source, else rawInput.command as claude-agent-acp sends it (a
// string) or as codex-acp 0.16 sends it (an argv such as
// ["/bin/bash","-lc","rm -rf build"], whose script is returned). It returns
// "" when the call carries no command.
func CommandText(req abi.Request) string {
	if req.Action != nil {
		return req.Action.Command
	}
	if req.Shell != nil && req.Shell.Source != "" {
		return req.Shell.Source
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(req.ToolCall.RawInput, &m) != nil {
		return ""
	}
	raw := m["command"]
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) != nil || len(argv) == 0 {
		return ""
	}
	// A shell invoked with -c (or a combined flag such as -lc) runs the word
	// after it as its script.
	if len(argv) >= 3 && isShell(argv[0]) && strings.HasPrefix(argv[1], "-") && strings.HasSuffix(argv[1], "c") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

func isShell(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	switch name {
	case "sh", "bash", "zsh", "dash", "ksh", "fish":
		return true
	}
	return false
}

// Feeds reports whether the output of command a can reach the input of
// command b through pipes, as the shell analysis tells it (ABI 1.1): both in
// the same pipeline, b at a higher stage. In "curl x | sh" curl feeds sh; in
// "curl x; echo hi | sh" it does not. Commands the analysis did not place
// (pipeline 0, from a 1.0 host) feed nothing: check Command.Pipeline before
// relying on a false.
func Feeds(a, b abi.Command) bool {
	return a.Pipeline > 0 && a.Pipeline == b.Pipeline && a.Stage > 0 && a.Stage < b.Stage
}
