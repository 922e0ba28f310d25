package profile

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/acptest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestRecognize(t *testing.T) {
	tests := []struct {
		name, version, want string
	}{
		{"@zed-industries/claude-agent-acp", "0.23.1", "claude-agent-acp"},
		{"@agentclientprotocol/claude-agent-acp", "0.101.0", "claude-agent-acp"},
		{"@agentclientprotocol/claude-agent-acp", "", "claude-agent-acp"},
		{"@zed-industries/claude-agent-acp", "0.9.0", "generic"}, // older than any shape known
		{"codex-acp", "0.16.0", "codex-acp"},
		{"@agentclientprotocol/codex-acp", "2.6.0", "codex-acp"},
		{"@agentclientprotocol/codex-acp", "0.9.0", "generic"},
		{"gemini-cli", "0.61.0", "gemini-cli"},
		{"gemini-cli", "0.62.0-preview.1", "gemini-cli"},
		{"gemini-cli", "0.60.9", "generic"},
		{"qwen-code", "0.24.4", "qwen-code"},
		{"qwen-code", "v1.0", "qwen-code"},
		{"Qwen-Code", "0.24.4", "generic"}, // names match exactly
		{"", "", "generic"},                // the ACP SDK example agent sends no agentInfo
		{"my-agent", "1.0.0", "generic"},
		{"gemini-cli", "not a version", "gemini-cli"},
	}
	for _, tt := range tests {
		if got := Recognize(tt.name, tt.version).Name; got != tt.want {
			t.Errorf("Recognize(%q, %q) = %s, want %s", tt.name, tt.version, got, tt.want)
		}
	}
}

func TestInRange(t *testing.T) {
	tests := []struct {
		v, min, max string
		want        bool
	}{
		{"1.2.3", "1.2.3", "", true},
		{"1.2.2", "1.2.3", "", false},
		{"2.0.0", "1.0.0", "2.0.0", false},
		{"1.99.99", "1.0.0", "2.0.0", true},
		{"1.10", "1.9.0", "", true},
		{"x", "1.0.0", "", true},
		{"1.2.3.4", "9.0.0", "", true},
	}
	for _, tt := range tests {
		if got := inRange(tt.v, tt.min, tt.max); got != tt.want {
			t.Errorf("inRange(%q, %q, %q) = %v", tt.v, tt.min, tt.max, got)
		}
	}
}

var families = []string{abi.FamilyShell, abi.FamilyEdit, abi.FamilyRead, abi.FamilyDelete, abi.FamilyMove,
	abi.FamilyFetch, abi.FamilySearch, abi.FamilyMCP, abi.FamilySwitchMode, abi.FamilyOther}

// TestProfilesAreConsistent checks the data of every profile: known
// families and scopes, an asking mode that the profile lists as asking, a
// {name} rule only with a pattern that has a group, and no two grants that
// could both apply to one option.
func TestProfilesAreConsistent(t *testing.T) {
	names := map[string]bool{}
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			if names[p.Name] {
				t.Errorf("duplicate profile name")
			}
			names[p.Name] = true
			if p != Generic && len(p.Agents) == 0 {
				t.Error("matches no agent")
			}
			if _, ok := p.Fields[""]; !ok {
				t.Error(`no default Fields (key "")`)
			}
			for fam := range p.Fields {
				if fam != "" && !slices.Contains(families, fam) {
					t.Errorf("Fields of unknown family %q", fam)
				}
			}
			for tool, fam := range p.Tools {
				if !slices.Contains(families, fam) {
					t.Errorf("tool %s: unknown family %q", tool, fam)
				}
			}
			seen := map[string]bool{}
			for _, m := range p.Modes {
				if seen[m.ID] {
					t.Errorf("mode %s listed twice", m.ID)
				}
				seen[m.ID] = true
				if !m.Asks && m.Decides == "" {
					t.Errorf("mode %s decides by itself but does not say what", m.ID)
				}
			}
			if p.AskingMode != "" && !p.Asks(p.AskingMode, "") {
				t.Errorf("asking mode %s does not ask", p.AskingMode)
			}
			if p.AskingMode != "" && !seen[p.AskingMode] {
				t.Errorf("asking mode %s is not among its modes", p.AskingMode)
			}
			if len(p.ModeSwitch) == 0 {
				t.Error("no way to switch modes")
			}
			for i, g := range p.Grants {
				switch g.Scope {
				case abi.GrantScopeSession, abi.GrantScopeWorkspace, abi.GrantScopeUser:
				default:
					t.Errorf("grant %s: scope %q", g.OptionID, g.Scope)
				}
				if strings.Contains(g.Rule, "{name}") && (g.Name == nil || g.Name.NumSubexp() < 1) {
					t.Errorf("grant %s: rule %q without a name pattern with a group", g.OptionID, g.Rule)
				}
				if g.Rule == "" && g.Mode == "" {
					t.Errorf("grant %s: neither a rule nor a mode", g.OptionID)
				}
				for _, f := range g.Families {
					if !slices.Contains(families, f) {
						t.Errorf("grant %s: unknown family %q", g.OptionID, f)
					}
				}
				for _, h := range p.Grants[:i] {
					if h.OptionID == g.OptionID && overlap(h.Families, g.Families) {
						t.Errorf("grants %s overlap for families %v and %v", g.OptionID, h.Families, g.Families)
					}
				}
			}
		})
	}
}

func overlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// TestReadRecorded reads the toolCall of every permission request of every
// recorded transcript with the profile its agentInfo selects, and compares
// the facts with testdata/recorded.golden.
func TestReadRecorded(t *testing.T) {
	var out bytes.Buffer
	for _, file := range acptest.TranscriptFiles(t) {
		tr, err := acptest.LoadTranscript(file)
		if err != nil {
			t.Fatal(err)
		}
		var p *Profile = Generic
		for _, e := range tr.Entries {
			var m struct {
				Method string `json:"method"`
				Result struct {
					AgentInfo *struct{ Name, Version string } `json:"agentInfo"`
				} `json:"result"`
				Params struct {
					ToolCall json.RawMessage `json:"toolCall"`
				} `json:"params"`
			}
			if err := json.Unmarshal(e.Msg, &m); err != nil {
				t.Fatal(err)
			}
			if a := m.Result.AgentInfo; a != nil {
				p = Recognize(a.Name, a.Version)
			}
			if m.Method != "session/request_permission" {
				continue
			}
			f, err := p.Read(m.Params.ToolCall, "/home/dev/project", "/home/dev")
			if err != nil {
				t.Fatalf("%s seq %d: %v", tr.Name, e.Seq, err)
			}
			act, _ := json.Marshal(f.Action)
			fmt.Fprintf(&out, "%s #%d %s tool=%q dir=%q\n  %s\n", tr.Name, e.Seq, p.Name, f.ToolName, f.Dir, act)
		}
	}
	golden(t, "recorded.golden", out.Bytes())

	// What the golden must show, whatever else changes.
	for _, want := range []string{
		// Gemini's command is its title, its cwd in the content text.
		`gemini-allow #8 gemini-cli tool="run_shell_command" dir="/home/dev/project"` + "\n" + `  {"family":"shell","command":"rm -rf build","cwd":"/home/dev/project"}`,
		// Qwen's title is "rm -rf build (Remove build dir)": never a command.
		`qwen-allow #11 qwen-code tool="run_shell_command" dir=""` + "\n" + `  {"family":"shell","command":"rm -rf build","cwd":"/home/dev/project"}`,
		// codex 2.6 patch: its file only in locations.
		`codexts-allow #18 codex-acp tool="" dir=""` + "\n" + `  {"family":"edit","paths":["/home/dev/project/hello.txt"]}`,
		`claude101-plan-mode #16 claude-agent-acp tool="ExitPlanMode" dir=""` + "\n" + `  {"family":"switch_mode"}`,
		`sdk-example-allow #11 generic tool="" dir=""` + "\n" + `  {"family":"edit","paths":["/home/user/project/config.json"]}`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("recorded facts lack\n%s", want)
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/profile -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./internal/profile -update to rewrite):\n%s", path, got)
	}
}

// toolCall builds a tool call object from alternating keys and values.
func toolCall(kv ...any) json.RawMessage {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

// TestRead checks what each profile reads from requests in each agent's
// shape, including the shapes no transcript records.
func TestRead(t *testing.T) {
	type obj = map[string]any
	tests := []struct {
		name    string
		profile *Profile
		call    json.RawMessage
		want    abi.Action
		tool    string
	}{
		{"claude Bash", claude, toolCall("toolCallId", "toolu_1", "name", "Bash", "kind", "execute", "title", "npm test",
			"rawInput", obj{"command": "npm test", "description": "Run tests"}),
			abi.Action{Family: "shell", Command: "npm test", Cwd: "/home/dev/project"}, "Bash"},
		{"claude 0.23 Bash (name in _meta only)", claude, toolCall("toolCallId", "toolu_1", "kind", "execute", "title", "ls",
			"rawInput", obj{"command": "ls"}, "_meta", obj{"claudeCode": obj{"toolName": "Bash"}}),
			abi.Action{Family: "shell", Command: "ls", Cwd: "/home/dev/project"}, "Bash"},
		{"claude WebFetch", claude, toolCall("toolCallId", "toolu_2", "name", "WebFetch", "kind", "fetch", "title", "Fetch https://example.com/docs",
			"rawInput", obj{"url": "https://example.com/docs", "prompt": "sum up"}),
			abi.Action{Family: "fetch", URLs: []string{"https://example.com/docs"}}, "WebFetch"},
		{"claude Read outside the cwd", claude, toolCall("toolCallId", "toolu_3", "name", "Read", "kind", "read", "title", "Read /home/dev/.ssh/id_rsa",
			"rawInput", obj{"file_path": "/home/dev/.ssh/id_rsa"}, "locations", []obj{{"path": "/home/dev/.ssh/id_rsa", "line": 1}}),
			abi.Action{Family: "read", Paths: []string{"/home/dev/.ssh/id_rsa"}}, "Read"},
		{"claude mcp tool", claude, toolCall("toolCallId", "toolu_4", "name", "mcp__github__create_issue", "kind", "other", "title", "create issue"),
			abi.Action{Family: "mcp"}, "mcp__github__create_issue"},
		{"codex 0.16 exec argv", codex, toolCall("toolCallId", "0199-uuid", "kind", "execute", "title", "rm -rf build",
			"rawInput", obj{"command": []string{"/bin/bash", "-lc", "rm -rf build"}, "cwd": "/home/dev/project/sub"}),
			abi.Action{Family: "shell", Command: "rm -rf build", Cwd: "/home/dev/project/sub"}, ""},
		{"codex 0.16 exec plain argv", codex, toolCall("toolCallId", "0199-uuid", "kind", "execute",
			"rawInput", obj{"command": []string{"git", "log", "--format=%H %s"}}),
			abi.Action{Family: "shell", Command: "git log '--format=%H %s'", Cwd: "/home/dev/project"}, ""},
		{"codex 0.16 patch changes", codex, toolCall("toolCallId", "c", "kind", "edit", "title", "Edit /home/dev/project/a.go",
			"rawInput", obj{"changes": obj{"/home/dev/project/b.go": obj{"type": "update", "move_path": "/home/dev/project/c.go"}, "/home/dev/project/a.go": obj{"type": "add"}}}),
			abi.Action{Family: "edit", Paths: []string{"/home/dev/project/a.go", "/home/dev/project/b.go", "/home/dev/project/c.go"}}, ""},
		{"gemini shell: the title is the command", gemini, toolCall("toolCallId", "run_shell_command__run_shell_command_1_0", "kind", "execute", "title", "npm test",
			"content", []obj{{"type": "content", "content": obj{"type": "text", "text": "[current working directory /home/dev/project/web] (Run tests)"}}}),
			abi.Action{Family: "shell", Command: "npm test", Cwd: "/home/dev/project/web"}, "run_shell_command"},
		{"gemini web_fetch: URLs in the title", gemini, toolCall("toolCallId", "web_fetch__web_fetch_1_0", "kind", "fetch",
			"title", `Processing URLs and instructions from prompt: "Summarize https://example.com/docs, and http://b.example."`),
			abi.Action{Family: "fetch", URLs: []string{"https://example.com/docs", "http://b.example"}}, "web_fetch"},
		{"gemini edit: a title is not a command", gemini, toolCall("toolCallId", "write_file__write_file_1_0", "kind", "edit", "title", "Writing to rm -rf ~",
			"locations", []obj{{"path": "/home/dev/project/x"}}),
			abi.Action{Family: "edit", Paths: []string{"/home/dev/project/x"}}, "write_file"},
		{"gemini exit_plan_mode of kind other", gemini, toolCall("toolCallId", "exit_plan_mode__exit_plan_mode_1_0", "kind", "other", "title", "Plan"),
			abi.Action{Family: "switch_mode"}, "exit_plan_mode"},
		{"gemini mcp-like name holding the separator", gemini, toolCall("toolCallId", "srv__tool__srv__tool_17_0", "kind", "other"),
			abi.Action{Family: "other"}, "srv__tool"},
		{"qwen shell: title is not read", qwen, toolCall("toolCallId", "call_1", "kind", "execute", "title", "rm -rf ~ (Clean)",
			"rawInput", obj{"command": "ls", "directory": "sub"}, "_meta", obj{"toolName": "run_shell_command"}),
			abi.Action{Family: "shell", Command: "ls", Cwd: "/home/dev/project/sub"}, "run_shell_command"},
		{"qwen web_fetch", qwen, toolCall("toolCallId", "call_2", "kind", "fetch", "title", "Fetching https://x.example",
			"rawInput", obj{"url": "https://example.com/docs", "prompt": "p"}, "_meta", obj{"toolName": "web_fetch"}),
			abi.Action{Family: "fetch", URLs: []string{"https://example.com/docs"}}, "web_fetch"},
		{"generic: a title is never a command", Generic, toolCall("toolCallId", "t", "kind", "execute", "title", "rm -rf ~"),
			abi.Action{Family: "shell"}, ""},
		{"generic: ~ and relative paths", Generic, toolCall("toolCallId", "t", "kind", "read",
			"rawInput", obj{"path": "~/.ssh/id_rsa", "paths": []any{"a.txt", 7, "/etc/hosts"}}),
			abi.Action{Family: "read", Paths: []string{"/home/dev/.ssh/id_rsa", "/home/dev/project/a.txt", "/etc/hosts"}}, ""},
		{"a reader name never turns a command into a read", claude, toolCall("toolCallId", "t", "name", "Read", "kind", "execute", "rawInput", obj{"command": "cat x"}),
			abi.Action{Family: "shell", Command: "cat x", Cwd: "/home/dev/project"}, "Read"},
		{"no kind", Generic, toolCall("toolCallId", "t"), abi.Action{Family: "other"}, ""},
		// kimi-cli 1.x: no kind, no rawInput; the arguments only as the
		// JSON text of the tool call's content.
		{"kimi-cli: command as JSON text in the content", kimi, toolCall("toolCallId", "turn/call_1", "title", "Shell: rm -rf build",
			"content", []obj{{"type": "content", "content": obj{"type": "text", "text": `{"command": "rm -rf build && ls", "timeout": 60}`}}}),
			abi.Action{Family: "shell", Command: "rm -rf build && ls", Cwd: "/home/dev/project"}, "Shell"},
		// Its permission request replaces that content with its own text;
		// a command holding backticks is read to the final one.
		{"kimi-cli: command as text of the request's content", kimi, toolCall("toolCallId", "turn/call_1", "title", "Shell: echo",
			"content", []obj{{"type": "content", "content": obj{"type": "text", "text": "Requesting approval to perform: Run command `echo `id` > x`"}}}),
			abi.Action{Family: "shell", Command: "echo `id` > x", Cwd: "/home/dev/project"}, "Shell"},
		{"kimi-cli: content JSON with a duplicate key is not read", kimi, toolCall("toolCallId", "turn/call_1",
			"content", []obj{{"type": "content", "content": obj{"type": "text", "text": `{"command": "ls", "command": "rm -rf ~"}`}}}),
			abi.Action{Family: "other"}, ""},
		{"kimi-code 0.x Bash", kimi, toolCall("toolCallId", "3:call_1", "kind", "execute", "title", "Bash",
			"rawInput", obj{"command": "npm test", "cwd": "sub"}),
			abi.Action{Family: "shell", Command: "npm test", Cwd: "/home/dev/project/sub"}, ""},
		// Mistral Vibe: rawInput is the arguments' JSON text.
		{"vibe: rawInput as JSON text", vibe, toolCall("toolCallId", "c1", "kind", "execute", "title", "bash",
			"rawInput", `{"command":"rm -rf build","timeout":null}`),
			abi.Action{Family: "shell", Command: "rm -rf build", Cwd: "/home/dev/project"}, ""},
		{"vibe: write_file path in rawInput JSON text", vibe, toolCall("toolCallId", "c2", "kind", "edit",
			"rawInput", `{"path":"a.txt","content":"hi"}`),
			abi.Action{Family: "edit", Paths: []string{"/home/dev/project/a.txt"}}, ""},
		{"opencode bash", opencode, toolCall("toolCallId", "call_1", "kind", "execute", "title", "bash", "status", "pending",
			"rawInput", obj{"command": "rm -rf build"}),
			abi.Action{Family: "shell", Command: "rm -rf build", Cwd: "/home/dev/project"}, ""},
		{"opencode edit", opencode, toolCall("toolCallId", "call_2", "kind", "edit", "title", "a.go",
			"locations", []obj{{"path": "/home/dev/project/a.go"}}, "rawInput", obj{"filepath": "/home/dev/project/a.go", "diff": "…"}),
			abi.Action{Family: "edit", Paths: []string{"/home/dev/project/a.go"}}, ""},
		{"empty command", claude, toolCall("toolCallId", "t", "kind", "execute", "rawInput", obj{"command": "  "}),
			abi.Action{Family: "shell"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := tt.profile.Read(tt.call, "/home/dev/project", "/home/dev")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(f.Action)
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("action %s\nwant   %s", got, want)
			}
			if f.ToolName != tt.tool {
				t.Errorf("tool name %q, want %q", f.ToolName, tt.tool)
			}
			if (f.Command != nil) != (tt.want.Command != "") {
				t.Errorf("command %s with action command %q", f.Command, tt.want.Command)
			}
		})
	}
}

// TestTitleIsACommandOnlyForGemini: a tool call whose only text is a title
// gets a command from the Gemini profile in the shell family and from no
// other profile or family.
func TestTitleIsACommandOnlyForGemini(t *testing.T) {
	for _, p := range All() {
		for _, kind := range []string{"execute", "edit", "read", "delete", "move", "fetch", "search", "other", "switch_mode", "think", ""} {
			f, err := p.Read(toolCall("toolCallId", "run_shell_command__run_shell_command_1_0", "kind", kind, "title", "rm -rf ~"), "/p", "/h")
			if err != nil {
				t.Fatal(err)
			}
			want := p == gemini && f.Action.Family == abi.FamilyShell
			if got := f.Action.Command != ""; got != want {
				t.Errorf("%s, kind %q (family %s): command %q, want one: %v", p.Name, kind, f.Action.Family, f.Action.Command, want)
			}
		}
	}
}

func TestReadRefusesAmbiguousJSON(t *testing.T) {
	for _, bad := range []string{
		`{"toolCallId":"t","rawInput":{"command":"ls","Command":"rm -rf ~"}}`,
		`{"toolCallId":"t","kind":"execute","kind":"read"}`,
		`{"toolCallId":"t",}`,
		`[]`,
	} {
		if _, err := claude.Read(json.RawMessage(bad), "/p", "/h"); err == nil {
			t.Errorf("%s: read, want an error", bad)
		}
	}
	if f, err := claude.Read(nil, "/p", "/h"); err != nil || f.Action.Family != abi.FamilyOther {
		t.Errorf("no tool call: %+v, %v", f, err)
	}
}

func TestModes(t *testing.T) {
	tests := []struct {
		p        *Profile
		id, name string
		asks     bool
	}{
		{claude, "default", "Manual", true},
		{claude, "plan", "Plan", true},
		{claude, "auto", "Auto", false},
		{claude, "acceptEdits", "Accept edits", false},
		{claude, "bypassPermissions", "", false},
		{claude, "dontAsk", "Don't Ask", false},
		{codex, "read-only", "Read-only", true},
		{codex, "workspace-write", "Workspace access", false},
		{codex, "agent", "Auto review", false},
		{codex, "agent-full-access", "Full access", false},
		{gemini, "default", "Default", true},
		{gemini, "autoEdit", "Auto Edit", false},
		{gemini, "yolo", "YOLO", false},
		{qwen, "auto", "Auto", false},
		{qwen, "auto-edit", "Auto Edit", false},
		{qwen, "plan", "Plan", true},
		// A mode a profile does not list, and unknown agents: by the words.
		{claude, "turbo", "Auto pilot", false},
		{claude, "review", "Review", true},
		{Generic, "default", "Default", true},
		{Generic, "autopilot", "", false},
		{Generic, "x", "YOLO mode", false},
		{Generic, "full-access", "", false},
		{Generic, "acceptAll", "", false},
		{Generic, "bypass", "", false},
		{Generic, "ask", "Always ask", true},
		{Generic.WithDeciding([]string{"turbo"}), "auto", "", true},
		{Generic.WithDeciding([]string{"turbo"}), "Turbo", "", false},
	}
	for _, tt := range tests {
		if got := tt.p.Asks(tt.id, tt.name); got != tt.asks {
			t.Errorf("%s: Asks(%q, %q) = %v", tt.p.Name, tt.id, tt.name, got)
		}
	}
	if len(Generic.Deciding) != len(DefaultDeciding) {
		t.Error("WithDeciding changed Generic")
	}
}

func TestAskingModeOf(t *testing.T) {
	claude101 := []Offered{{"default", "Manual"}, {"acceptEdits", "Accept edits"}, {"plan", "Plan"}, {"auto", "Auto"}}
	codex26 := []Offered{{"read-only", "Read-only"}, {"workspace-write", "Workspace access"}, {"agent", "Auto review"}, {"agent-full-access", "Full access"}}
	qwen24 := []Offered{{"plan", "Plan"}, {"default", "Default"}, {"auto-edit", "Auto Edit"}, {"auto", "Auto"}, {"yolo", "YOLO"}}
	tests := []struct {
		p       *Profile
		offered []Offered
		want    string
		ok      bool
	}{
		{claude, claude101, "default", true},
		{codex, codex26, "read-only", true},
		{qwen, qwen24, "default", true},
		{gemini, []Offered{{"default", "Default"}, {"autoEdit", "Auto Edit"}, {"yolo", "YOLO"}, {"plan", "Plan"}}, "default", true},
		{Generic, []Offered{{"yolo", "YOLO"}, {"careful", "Careful"}, {"default", "Default"}}, "default", true},
		{Generic, []Offered{{"yolo", "YOLO"}, {"careful", "Careful"}}, "careful", true},
		{Generic, []Offered{{"yolo", "YOLO"}, {"auto", "Auto"}}, "", false},
		{Generic, nil, "", false},
		// A known agent whose asking mode is not offered: the first that asks.
		{codex, []Offered{{"agent", "Auto review"}, {"safe", "Safe"}}, "safe", true},
	}
	for _, tt := range tests {
		got, ok := tt.p.AskingModeOf(tt.offered)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: AskingModeOf(%v) = %q, %v; want %q, %v", tt.p.Name, tt.offered, got, ok, tt.want, tt.ok)
		}
	}
}

// TestGrantOf describes the recorded durable options as their agents really
// grant them (docs/agents.md of the shared notes).
func TestGrantOf(t *testing.T) {
	shell := abi.Action{Family: abi.FamilyShell, Command: "rm -rf build"}
	edit := abi.Action{Family: abi.FamilyEdit, Paths: []string{"/home/dev/project/hello.txt"}}
	plan := abi.Action{Family: abi.FamilySwitchMode}
	durable := func(id, name string) abi.Option {
		return abi.Option{OptionID: id, Name: name, Kind: abi.OptionAllowAlways, Durable: true}
	}
	tests := []struct {
		name   string
		p      *Profile
		option abi.Option
		action abi.Action
		root   string
		want   *abi.Grant
	}{
		{"claude 0.101 Write: acceptEdits, silently", claude, durable("allow-with-updates", "Yes, allow all edits during this session"), edit, "",
			&abi.Grant{Scope: "session", Mode: "acceptEdits"}},
		{"claude 0.101 Bash: a rule in the workspace", claude, durable("allow-with-updates", "Yes, and allow access to /home/dev/project/ and echo hi * commands"), shell, "echo",
			&abi.Grant{Scope: "workspace", Rule: "Bash(echo hi *)"}},
		{"claude 0.101 Bash without directories", claude, durable("allow-with-updates", "Yes, and allow npm run:* commands"), shell, "npm",
			&abi.Grant{Scope: "workspace", Rule: "Bash(npm run:*)"}},
		{"claude 0.101 Bash, a name it does not know", claude, durable("allow-with-updates", "Always"), shell, "rm",
			&abi.Grant{Scope: "workspace"}},
		{"claude 0.101 exit-plan-auto", claude, durable("exit-plan-auto", "Yes, and use auto mode"), plan, "", &abi.Grant{Scope: "session", Mode: "auto"}},
		{"claude 0.101 keep planning", claude, abi.Option{OptionID: "reject", Kind: abi.OptionRejectOnce, Durable: true}, plan, "", &abi.Grant{Scope: "session", Mode: "plan"}},
		{"claude 0.23 Write", claude, durable("allow_always", "Always Allow"), edit, "", &abi.Grant{Scope: "session", Mode: "acceptEdits"}},
		{"claude 0.23 Bash: not known", claude, durable("allow_always", "Always Allow"), shell, "rm", &abi.Grant{Scope: "unknown"}},
		{"claude 0.23 ExitPlanMode acceptEdits", claude, durable("acceptEdits", "Yes, and auto-accept edits"), plan, "", &abi.Grant{Scope: "session", Mode: "acceptEdits"}},
		{"codex 2.6 exec policy amendment", codex, durable("accept_execpolicy_amendment", "Yes, and don't ask again for commands that start with `rm -rf build`"), shell, "rm",
			&abi.Grant{Scope: "user", Rule: "prefix: rm -rf build"}},
		{"codex 0.16 exec policy amendment", codex, durable("approved-execpolicy-amendment", "Yes, and don't ask again for commands that start with `rm -rf build`"), shell, "rm",
			&abi.Grant{Scope: "user", Rule: "prefix: rm -rf build"}},
		{"codex 2.6 patch for the session", codex, durable("allow_for_session", "Yes, and don't ask again for these files"), edit, "",
			&abi.Grant{Scope: "session", Rule: "files: /home/dev/project/hello.txt"}},
		{"gemini shell: the command root", gemini, durable("proceed_always", "Allow for this session"), shell, "rm",
			&abi.Grant{Scope: "session", Rule: "command root: rm"}},
		{"gemini shell with no analysed root", gemini, durable("proceed_always", "Allow for this session"), shell, "",
			&abi.Grant{Scope: "session"}},
		{"gemini edit: autoEdit", gemini, durable("proceed_always", "Allow for this session"), edit, "", &abi.Grant{Scope: "session", Mode: "autoEdit"}},
		{"qwen project", qwen, durable("proceed_always_project", "Always Allow in project: rm *"), shell, "rm", &abi.Grant{Scope: "workspace", Rule: "Bash(rm *)"}},
		{"qwen user", qwen, durable("proceed_always_user", "Always Allow for user: rm *"), shell, "rm", &abi.Grant{Scope: "user", Rule: "Bash(rm *)"}},
		{"qwen edits", qwen, durable("proceed_always", "Allow All Edits"), edit, "", &abi.Grant{Scope: "session", Mode: "auto-edit"}},
		{"qwen switch to default is a one-time allow that switches the mode", qwen,
			abi.Option{OptionID: "proceed_once_and_switch_to_default", Name: "Switch to Default Mode and allow once", Kind: abi.OptionAllowOnce}, shell, "rm",
			&abi.Grant{Scope: "session", Mode: "default"}},
		{"unknown agent: unknown", Generic, durable("allow_always", "Always Allow"), shell, "rm", &abi.Grant{Scope: "unknown"}},
		{"one-time options grant nothing", claude, abi.Option{OptionID: "allow-once", Name: "Yes", Kind: abi.OptionAllowOnce}, shell, "rm", nil},
		{"gemini one-time", gemini, abi.Option{OptionID: "proceed_once", Name: "Allow", Kind: abi.OptionAllowOnce}, shell, "rm", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.GrantOf(tt.option, tt.action, tt.root)
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tt.want)
			if string(g) != string(w) {
				t.Errorf("grant %s, want %s", g, w)
			}
		})
	}
}

func TestIsApprovalElicitation(t *testing.T) {
	tests := []struct {
		p    *Profile
		meta string
		want bool
	}{
		{codex, `{"codex_approval_kind":"mcp_tool_call","persist":["session","always"]}`, true},
		{codex, `{"codex":{"autoResolutionMs":null}}`, false}, // request_user_input, recorded: a question
		{codex, `{"codex_approval_kind":"other"}`, false},
		{codex, `{"codex_approval_kind":"mcp_tool_call","CODEX_APPROVAL_KIND":"x"}`, false}, // ambiguous
		{codex, `null`, false},
		{codex, ``, false},
		{claude, `{"codex_approval_kind":"mcp_tool_call"}`, false},
	}
	for _, tt := range tests {
		if got := tt.p.IsApprovalElicitation(json.RawMessage(tt.meta)); got != tt.want {
			t.Errorf("%s: IsApprovalElicitation(%s) = %v", tt.p.Name, tt.meta, got)
		}
	}
}

// TestDescribe keeps testdata/profiles.golden, the profiles as a person
// reads them, in step with the data.
func TestDescribe(t *testing.T) {
	var b bytes.Buffer
	for _, p := range All() {
		Describe(&b, p)
	}
	golden(t, "profiles.golden", b.Bytes())
}
