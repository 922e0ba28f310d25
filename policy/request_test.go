package policy_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/profile"
	"github.com/permhost/permhost/policy"
)

func TestBuildRequestAnalysesShell(t *testing.T) {
	tests := []struct {
		name, params string
		argv0        string
		commands     int
	}{
		{"claude Bash", claudeBash, "rm", 1},
		{"codex argv", `{"sessionId":"s","toolCall":{"toolCallId":"c","kind":"execute","title":"x","rawInput":{"command":["/bin/bash","-lc","git status && curl x | sh"],"cwd":"/home/dev/project"}},"options":[{"optionId":"approved","name":"Yes","kind":"allow_once"},{"optionId":"abort","name":"No","kind":"reject_once"}]}`, "git", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := policy.BuildRequest(permissionRequest(t, tt.params), "d-1", "/home/dev")
			if err != nil {
				t.Fatal(err)
			}
			if req.Shell == nil || !req.Shell.Parsed || len(req.Shell.Commands) != tt.commands || req.Shell.Commands[0].Argv[0] != tt.argv0 {
				t.Fatalf("shell = %+v", req.Shell)
			}
			if req.DecisionID != "d-1" || req.Session.Cwd != "/home/dev/project" || req.Session.Agent == nil || len(req.Options) == 0 {
				t.Fatalf("request = %+v", req)
			}
		})
	}
}

func TestBuildRequestPathsAndDurable(t *testing.T) {
	params := `{"sessionId":"s","toolCall":{"toolCallId":"w","kind":"edit","title":"Write .env","rawInput":{"file_path":"/home/dev/project/.env","content":"X=1"},"locations":[{"path":"/home/dev/project/.env"}]},"options":[{"optionId":"allow_always","name":"Always","kind":"allow_always"},{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`
	req, err := policy.BuildRequest(permissionRequest(t, params), "d-2", "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Paths) == 0 || req.Paths[0].Path != "/home/dev/project/.env" || req.Paths[0].Access != "write" || !req.Paths[0].InsideCwd {
		t.Fatalf("paths = %+v", req.Paths)
	}
	if !req.Options[0].Durable || req.Options[1].Durable || req.Options[2].Durable {
		t.Fatalf("durable flags = %+v", req.Options)
	}
	if req.Shell != nil {
		t.Fatalf("an edit has no shell: %+v", req.Shell)
	}
}

// agentRequest is permissionRequest from the named agent.
func agentRequest(t *testing.T, params, name, version string) *acp.PermissionRequest {
	t.Helper()
	pr := permissionRequest(t, params)
	pr.Session.Agent = acp.Peer{Name: name, Version: version}
	return pr
}

// TestBuildRequestReadsEachAgentsShape: the same rm -rf build, as each agent
// sends it, gives the same action and the same analysed command.
func TestBuildRequestReadsEachAgentsShape(t *testing.T) {
	const opts = `"options":[{"optionId":"o1","name":"Allow","kind":"allow_once"},{"optionId":"o2","name":"Reject","kind":"reject_once"}]`
	tests := []struct {
		agent, version, toolCall string
		toolName, dir            string
	}{
		{"@zed-industries/claude-agent-acp", "0.23.1", `{"toolCallId":"toolu_1","rawInput":{"command":"rm -rf build","description":"Remove build dir"},"title":"rm -rf build","kind":"execute","_meta":{"claudeCode":{"toolName":"Bash"}}}`, "Bash", ""},
		{"@agentclientprotocol/claude-agent-acp", "0.101.0", `{"toolCallId":"toolu_1","name":"Bash","status":"pending","rawInput":{"command":"rm -rf build","description":"Remove build dir"},"title":"rm -rf build","kind":"execute","locations":[{"path":"/home/dev/project/build"}]}`, "Bash", ""},
		{"codex-acp", "0.16.0", `{"toolCallId":"0199a1b2","title":"rm -rf build","kind":"execute","rawInput":{"command":["/bin/bash","-lc","rm -rf build"],"cwd":"/home/dev/project"}}`, "", "/home/dev/project"},
		{"@agentclientprotocol/codex-acp", "2.6.0", `{"toolCallId":"call_1","title":"rm -rf build","rawInput":{"command":"rm -rf build","cwd":"/home/dev/project"},"kind":"execute","status":"pending"}`, "", "/home/dev/project"},
		{"gemini-cli", "0.61.0", `{"toolCallId":"run_shell_command__run_shell_command_1796111364791_0","status":"pending","title":"rm -rf build","content":[{"type":"content","content":{"type":"text","text":"[current working directory /home/dev/project] (Remove build dir)"}}],"locations":[],"kind":"execute"}`, "run_shell_command", "/home/dev/project"},
		{"qwen-code", "0.24.4", `{"toolCallId":"call_1","status":"pending","title":"rm -rf build (Remove build dir)","content":[],"locations":[],"kind":"execute","rawInput":{"command":"rm -rf build","description":"Remove build dir"},"_meta":{"toolName":"run_shell_command"}}`, "run_shell_command", ""},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			pr := agentRequest(t, `{"sessionId":"s","toolCall":`+tt.toolCall+`,`+opts+`}`, tt.agent, tt.version)
			req, err := policy.BuildRequest(pr, "d", "/home/dev")
			if err != nil {
				t.Fatal(err)
			}
			a := req.Action
			if a == nil || a.Family != abi.FamilyShell || a.Command != "rm -rf build" || a.Cwd != "/home/dev/project" {
				t.Fatalf("action %+v", a)
			}
			sh := req.Shell
			if sh == nil || !sh.Parsed || len(sh.Commands) != 1 || strings.Join(sh.Commands[0].Argv, " ") != "rm -rf build" {
				t.Fatalf("shell %+v", sh)
			}
			if req.ToolCall.ToolName != tt.toolName {
				t.Errorf("tool name %q, want %q", req.ToolCall.ToolName, tt.toolName)
			}
			if req.Session.Home != "/home/dev" || req.Session.Agent == nil || req.Session.Agent.Profile == "generic" {
				t.Errorf("session %+v agent %+v", req.Session, req.Session.Agent)
			}
			if req.ABI != abi.Current || abi.Current.Minor < abi.MinorACPv2 {
				t.Errorf("abi %v", req.ABI)
			}
		})
	}
}

// TestBuildRequestTitleIsNotACommand: a title is analysed as a command only
// for Gemini CLI's shell calls. The same Gemini-shaped request from an agent
// that is not Gemini carries no command at all.
func TestBuildRequestTitleIsNotACommand(t *testing.T) {
	params := `{"sessionId":"s","toolCall":{"toolCallId":"run_shell_command__x_1_0","title":"rm -rf ~","kind":"execute"},"options":[]}`
	for _, agent := range []string{"", "qwen-code", "@agentclientprotocol/claude-agent-acp", "my-agent"} {
		req, err := policy.BuildRequest(agentRequest(t, params, agent, "1.0.0"), "d", "/home/dev")
		if err != nil {
			t.Fatal(err)
		}
		if req.Shell != nil || req.Action.Command != "" || req.Action.Family != abi.FamilyShell {
			t.Errorf("%q: shell %+v action %+v", agent, req.Shell, req.Action)
		}
	}
	req, err := policy.BuildRequest(agentRequest(t, params, "gemini-cli", "0.61.0"), "d", "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	if req.Shell == nil || strings.Join(req.Shell.Commands[0].Argv, " ") != "rm -rf /home/dev" {
		t.Errorf("gemini: shell %+v", req.Shell)
	}
}

// TestBuildRequestGrants: durable options carry what they really grant;
// an unknown agent's are "unknown"; a one-time option carries nothing.
func TestBuildRequestGrants(t *testing.T) {
	gem := `{"sessionId":"s","options":[{"optionId":"proceed_always","name":"Allow for this session","kind":"allow_always"},{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],"toolCall":{"toolCallId":"run_shell_command__run_shell_command_1_0","status":"pending","title":"git status && rm -rf build","kind":"execute"}}`
	req, err := policy.BuildRequest(agentRequest(t, gem, "gemini-cli", "0.61.0"), "d", "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	if g := req.Options[0].Grants; g == nil || *g != (abi.Grant{Scope: abi.GrantScopeSession, Rule: "command root: git, rm"}) {
		t.Errorf("gemini proceed_always grants %+v", g)
	}
	if req.Options[1].Grants != nil || req.Options[1].Durable || req.Options[2].Grants != nil {
		t.Errorf("one-time options: %+v", req.Options[1:])
	}
	req, err = policy.BuildRequest(agentRequest(t, gem, "some-agent", "1.0"), "d", "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	if g := req.Options[0].Grants; g == nil || g.Scope != abi.GrantScopeUnknown || g.Rule != "" {
		t.Errorf("unknown agent grants %+v", g)
	}
	// Qwen's one-time allow that switches to default mode is durable.
	qw := `{"sessionId":"s","options":[{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"proceed_once_and_switch_to_default","name":"Switch to Default Mode and allow once","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],"toolCall":{"toolCallId":"call_1","kind":"execute","title":"ls","rawInput":{"command":"ls"},"_meta":{"toolName":"run_shell_command"}}}`
	req, err = policy.BuildRequest(agentRequest(t, qw, "qwen-code", "0.24.4"), "d", "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	if o := req.Options[1]; !o.Durable || o.Grants == nil || o.Grants.Mode != "default" {
		t.Errorf("switch to default: %+v", o)
	}
	if o := req.Options[0]; o.Durable || o.Grants != nil {
		t.Errorf("plain allow once: %+v", o)
	}
	// The allow the host picks for "allow once" skips the durable one.
	if o, _ := (abi.Decision{Outcome: abi.OutcomeAllow}).Option(req.Options); o.OptionID != "proceed_once" {
		t.Errorf("allow once picks %q", o.OptionID)
	}
}

// TestBuildRequestRefusesAmbiguousToolCall: a tool call other parsers could
// read differently is not shown to plugins.
func TestBuildRequestRefusesAmbiguousToolCall(t *testing.T) {
	params := `{"sessionId":"s","toolCall":{"toolCallId":"t","kind":"execute","rawInput":{"command":"ls","COMMAND":"rm -rf ~"}},"options":[]}`
	if _, err := policy.BuildRequest(permissionRequest(t, params), "d", "/home/dev"); err == nil || !errors.Is(err, profile.ErrToolCall) {
		t.Errorf("err %v, want profile.ErrToolCall", err)
	}
}

// BenchmarkBuildRequest is the cost of reading one request: the profile's
// strict read of the tool call, the shell analysis, options and grants.
func BenchmarkBuildRequest(b *testing.B) {
	large := strings.Repeat("x", 1<<20)
	for _, bc := range []struct{ name, agent, version, params string }{
		{"gemini-shell", "gemini-cli", "0.61.0", `{"sessionId":"s","options":[{"optionId":"proceed_always","name":"Allow for this session","kind":"allow_always"},{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],"toolCall":{"toolCallId":"run_shell_command__run_shell_command_1_0","status":"pending","title":"git status && npm test","content":[{"type":"content","content":{"type":"text","text":"[current working directory /home/dev/project]"}}],"locations":[],"kind":"execute"}}`},
		{"claude-write-1MiB", "@agentclientprotocol/claude-agent-acp", "0.101.0", `{"sessionId":"s","options":[{"optionId":"allow-once","name":"Yes","kind":"allow_once"},{"optionId":"reject","name":"No","kind":"reject_once"}],"toolCall":{"toolCallId":"toolu_1","name":"Write","kind":"edit","title":"Write a.txt","rawInput":{"file_path":"/home/dev/project/a.txt","content":"` + large + `"},"content":[{"type":"diff","path":"/home/dev/project/a.txt","oldText":null,"newText":"` + large + `"}],"locations":[{"path":"/home/dev/project/a.txt"}]}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var p struct {
				ToolCall json.RawMessage `json:"toolCall"`
			}
			if err := json.Unmarshal([]byte(bc.params), &p); err != nil {
				b.Fatal(err)
			}
			pr := &acp.PermissionRequest{Params: json.RawMessage(bc.params), SessionID: "s", ToolCall: p.ToolCall,
				Session: acp.SessionInfo{ID: "s", Cwd: "/home/dev/project", Agent: acp.Peer{Name: bc.agent, Version: bc.version}}}
			b.SetBytes(int64(len(bc.params)))
			for b.Loop() {
				if _, err := policy.BuildRequest(pr, "d", "/home/dev"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
