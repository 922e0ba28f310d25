package profile

import (
	"encoding/json"
	"path"
	"slices"
	"testing"
)

// FuzzRead: a tool call from the agent (untrusted) never makes Read panic;
// whatever it reads, the family is one of the ten, every path is absolute
// and clean, a command comes with a directory, and only Gemini's shell
// family ever takes the title as the command.
func FuzzRead(f *testing.F) {
	f.Add("gemini-cli", []byte(`{"toolCallId":"run_shell_command__run_shell_command_1_0","title":"rm -rf build","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"[current working directory /p] x"}}]}`))
	f.Add("codex-acp", []byte(`{"toolCallId":"c","kind":"edit","rawInput":{"command":["/bin/bash","-lc","ls"],"cwd":"sub","changes":{"a":{"move_path":"~/b"}}}}`))
	f.Add("claude-agent-acp", []byte(`{"toolCallId":"t","name":"Read","kind":"read","rawInput":{"file_path":"~/.ssh/id_rsa"},"locations":[{"path":"x"},{"path":7}]}`))
	f.Add("qwen-code", []byte(`{"toolCallId":"t","kind":"fetch","rawInput":{"url":["a","b"]},"_meta":{"toolName":"web_fetch"}}`))
	f.Add("generic", []byte(`{"toolCallId":"t","title":"see https://x.example/a","kind":"fetch","rawInput":null}`))
	f.Fuzz(func(t *testing.T, name string, toolCall []byte) {
		p := ByName(name)
		if p == nil {
			p = Generic
		}
		facts, err := p.Read(toolCall, "/home/dev/project", "/home/dev")
		if err != nil {
			return
		}
		if !slices.Contains(families, facts.Action.Family) {
			t.Fatalf("family %q", facts.Action.Family)
		}
		for _, q := range facts.Action.Paths {
			if !path.IsAbs(q) || path.Clean(q) != q {
				t.Fatalf("path %q", q)
			}
		}
		if facts.Command != nil && (facts.Action.Cwd == "" || !json.Valid(facts.Command)) {
			t.Fatalf("command %s, cwd %q", facts.Command, facts.Action.Cwd)
		}
		if facts.Action.Command != "" && (p != gemini || facts.Action.Family != "shell") {
			var tc struct {
				RawInput map[string]json.RawMessage `json:"rawInput"`
			}
			if json.Unmarshal(toolCall, &tc) != nil || tc.RawInput == nil {
				t.Fatalf("%s: command %q without a rawInput", p.Name, facts.Action.Command)
			}
		}
	})
}
