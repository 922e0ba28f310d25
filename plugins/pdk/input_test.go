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
		want     string
	}{
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
			req := abi.Request{ToolCall: abi.ToolCall{RawInput: json.RawMessage(tt.rawInput)}, Shell: tt.shell}
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
