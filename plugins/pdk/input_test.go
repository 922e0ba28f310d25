package pdk

import (
	"encoding/json"
	"testing"

	"github.com/permhost/permhost/abi"
)

func TestCommandText(t *testing.T) {
	tests := []struct {
		name     string
		rawInput string
		shell    *abi.Shell
		action   *abi.Action
		want     string
	}{
		// A 1.1 host's action is the answer, wherever the agent put the
		// command (here Gemini's title) and even when it says there is none.
		{name: "action", rawInput: ``, action: &abi.Action{Family: abi.FamilyShell, Command: "rm -rf build"}, want: "rm -rf build"},
		{name: "action without a command", rawInput: `{"command":"rm -rf ~"}`, action: &abi.Action{Family: abi.FamilyEdit}, want: ""},
		{name: "claude Bash", rawInput: `{"command":"rm -rf build","description":"Remove build dir"}`, want: "rm -rf build"},
		{name: "codex argv", rawInput: `{"command":["/bin/bash","-lc","rm -rf build"],"cwd":"/home/dev/project"}`, want: "rm -rf build"},
		{name: "plain argv", rawInput: `{"command":["git","status"]}`, want: "git status"},
		{name: "shell source wins", rawInput: `{"command":"ls"}`, shell: &abi.Shell{Source: "ls -la"}, want: "ls -la"},
		{name: "write has none", rawInput: `{"file_path":"/home/dev/project/hello.txt","content":"x"}`, want: ""},
		{name: "not an object", rawInput: `"rm"`, want: ""},
		{name: "absent", rawInput: ``, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := abi.Request{ToolCall: abi.ToolCall{RawInput: json.RawMessage(tt.rawInput)}, Shell: tt.shell, Action: tt.action}
			if got := CommandText(req); got != tt.want {
				t.Errorf("CommandText = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInputString(t *testing.T) {
	req := abi.Request{ToolCall: abi.ToolCall{RawInput: json.RawMessage(`{"file_path":"/a/.env","n":3}`)}}
	for key, want := range map[string]string{"file_path": "/a/.env", "n": "", "missing": ""} {
		if got := InputString(req, key); got != want {
			t.Errorf("InputString(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestFeeds(t *testing.T) {
	at := func(pipeline, stage int) abi.Command {
		return abi.Command{Argv: []string{"x"}, Pipeline: pipeline, Stage: stage}
	}
	tests := []struct {
		a, b abi.Command
		want bool
	}{
		{at(1, 1), at(1, 2), true},
		{at(1, 1), at(1, 3), true},
		{at(1, 2), at(1, 1), false},
		{at(1, 1), at(1, 1), false},
		{at(1, 1), at(2, 2), false},
		{at(0, 0), at(0, 0), false},
		{at(0, 1), at(0, 2), false},
	}
	for _, tt := range tests {
		if got := Feeds(tt.a, tt.b); got != tt.want {
			t.Errorf("Feeds(%d.%d, %d.%d) = %v", tt.a.Pipeline, tt.a.Stage, tt.b.Pipeline, tt.b.Stage, got)
		}
	}
}
