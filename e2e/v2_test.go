package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// The ACP v2 tests run `permhost proxy` between a v2 editor (the recorded
// client's initialize, testdata/transcripts/v2) and likeagent speaking v2
// as claude-agent-acp 0.101 and codex-acp 2.6 do (-v2), or only v1.

const v2EditorInit = `{"protocolVersion":2,"info":{"name":"e2e-v2","version":"0.2.0"},"capabilities":{}}`

// TestV2EditorV2Agent: the v2 initialize reaches the agent unchanged and
// both sides speak v2; the session, which the agent starts in a mode that
// decides, is moved to one that asks with v2's
// session/set_config_option; the agent's v2 permission request reaches
// the editor with its title, description and subject as sent, between
// requires_action and running, and the editor's allow reaches the agent.
func TestV2EditorV2Agent(t *testing.T) {
	for _, c := range []struct {
		agent, start, title, allow, ran string
	}{
		{"claude101", "auto", `"title":"rm -rf build","subject":{"type":"tool_call","toolCall":{"toolCallId":"toolu_fake_0005","name":"Bash","status":"pending","rawInput":{"command":"rm -rf build","description":"step"},"title":"rm -rf build","kind":"execute"`, "allow-once", "run: rm -rf build"},
		{"codex", "agent", `"title":"Run command?","description":"The model's reason.","subject":{"type":"tool_call","toolCall":{"toolCallId":"call_fake_5","title":"rm -rf build","rawInput":{"command":"rm -rf build","cwd":`, "allow_once", "run: rm -rf build"},
	} {
		t.Run(c.agent, func(t *testing.T) {
			r := startLikeWith(t, likeOpts{agent: c.agent, session: `modes = "govern"`, plugins: protectSecrets, initialize: v2EditorInit, agentArgs: []string{"-v2"}})
			if init := r.reportLines(`"method":"initialize"`); len(init) != 1 || !strings.Contains(init[0], `"params":`+v2EditorInit) {
				t.Fatalf("the agent read the initialize %q, want the editor's v2 one", init)
			}
			var res struct {
				ProtocolVersion int             `json:"protocolVersion"`
				Info            json.RawMessage `json:"info"`
				AgentInfo       json.RawMessage `json:"agentInfo"`
			}
			if err := json.Unmarshal(r.initialized.Result, &res); err != nil || res.ProtocolVersion != 2 || res.Info == nil || res.AgentInfo != nil {
				t.Fatalf("the editor's initialize answer %s", r.initialized.Raw)
			}
			// Governed in v2's shape: the agent refuses set_config_option
			// without type "id".
			_, mode := sessionModes(t, r.started.Result)
			if mode == "" || mode == c.start {
				t.Fatalf("the session stays in %q: %s", mode, r.started.Raw)
			}
			r.waitEvent("set_config_option: " + mode)
			if sw := r.reportLines(`"method":"session/set_config_option"`, `"type":"id"`, `"value":"`+mode+`"`); len(sw) != 1 {
				t.Errorf("permhost's switches %q", r.reportLines(`session/set_config_option`))
			}

			r.mu.Lock()
			r.answer = allowOnce(t)
			r.mu.Unlock()
			from := len(r.client.received())
			resp := r.call("session/prompt", `{"sessionId":`+quote(r.session)+`,"prompt":[{"type":"text","text":"run: rm -rf build"}]}`)
			if !strings.Contains(string(resp.Result), `"messageId"`) {
				t.Fatalf("the prompt was answered %s", resp.Raw)
			}
			idle, _ := r.client.waitFor("state_update idle", func(m *wireMsg) bool {
				return m.Method == "session/update" && strings.Contains(string(m.Params), `"state":"idle"`)
			})
			ev := r.waitEvent(c.ran)
			if ev["answer"] != c.allow || ev["ran"] != true {
				t.Errorf("the agent's step %v", ev)
			}
			// What the editor saw of the turn, in order.
			var seen []string
			for _, m := range r.client.received()[from : idle+1] {
				p := string(m.Params)
				switch {
				case m.Method == "session/request_permission":
					seen = append(seen, "request")
					if !strings.Contains(p, c.title) || strings.Contains(p, `"toolCall":{"toolCallId"`) && !strings.Contains(p, `"subject":{"type":"tool_call","toolCall":{"toolCallId"`) {
						t.Errorf("the editor's request %s, want %s", m.Raw, c.title)
					}
				case strings.Contains(p, `"state_update"`):
					var u struct {
						Update struct{ State string } `json:"update"`
					}
					json.Unmarshal(m.Params, &u)
					seen = append(seen, u.Update.State)
				case strings.Contains(p, `"sessionUpdate":"tool_call"`):
					t.Errorf("a v1 tool_call reached the v2 editor: %s", m.Raw)
				}
			}
			if got := strings.Join(seen, " "); got != "running requires_action request running idle" {
				t.Errorf("the editor saw %q", got)
			}
			r.entries("the person's allow", func(m map[string]any) bool { return m["decidedBy"] == "person" && m["optionId"] == c.allow })

			// A plugin's reject: the agent gets its reject option, the
			// editor no request, only the decision on the tool call.
			earlier := map[*wireMsg]bool{}
			for _, m := range r.client.received() {
				earlier[m] = true
			}
			from = len(earlier)
			r.call("session/prompt", `{"sessionId":`+quote(r.session)+`,"prompt":[{"type":"text","text":"write: .env"}]}`)
			idle, _ = r.client.waitFor("the second state_update idle", func(m *wireMsg) bool {
				return !earlier[m] && m.Method == "session/update" && strings.Contains(string(m.Params), `"state":"idle"`)
			})
			ev = r.waitEvent("write: .env")
			if a, _ := ev["answer"].(string); !strings.Contains(a, "reject") && a != "cancel" || ev["ran"] != false {
				t.Errorf("the agent's step %v", ev)
			}
			// The editor never saw the request, yet it saw the agent's
			// requires_action: what follows says it was decided (the
			// decision on the tool call), then the agent's own state after
			// the answer, so the editor is not left in requires_action
			// (docs/acp-v2.md, "requires_action").
			var states []string
			for _, m := range r.client.received()[from : idle+1] {
				p := string(m.Params)
				switch {
				case m.Method == "session/request_permission":
					t.Errorf("the editor was asked: %s", m.Raw)
				case strings.Contains(p, `"decidedBy":"protect-secrets"`):
					states = append(states, "decided")
				case strings.Contains(p, `"state_update"`):
					var u struct {
						Update struct{ State string } `json:"update"`
					}
					json.Unmarshal(m.Params, &u)
					states = append(states, u.Update.State)
				}
			}
			if got := strings.Join(states, " "); got != "running requires_action decided running idle" {
				t.Errorf("the editor saw %q, want the decision between requires_action and the agent's next state", got)
			}
			r.finish()
		})
	}
}

// TestV2EditorV1Agent: an agent that speaks only v1 answers the v2
// initialize with version 1; the editor gets that answer as the agent
// wrote it (a well-formed v1 result) and the connection speaks v1: the
// session is governed with v1's modes and a v1 request reaches the editor.
func TestV2EditorV1Agent(t *testing.T) {
	r := startLikeWith(t, likeOpts{agent: "claude101", session: `modes = "govern"`, initialize: v2EditorInit})
	if init := r.reportLines(`"method":"initialize"`); len(init) != 1 || !strings.Contains(init[0], `"params":`+v2EditorInit) {
		t.Fatalf("the agent read the initialize %q, want the editor's v2 one", init)
	}
	var res struct {
		ProtocolVersion int             `json:"protocolVersion"`
		AgentInfo       json.RawMessage `json:"agentInfo"`
	}
	if err := json.Unmarshal(r.initialized.Result, &res); err != nil || res.ProtocolVersion != 1 || res.AgentInfo == nil {
		t.Fatalf("the editor's initialize answer %s", r.initialized.Raw)
	}
	if modeID, _ := sessionModes(t, r.started.Result); modeID != "default" {
		t.Errorf("the session is in %q: %s", modeID, r.started.Raw)
	}
	asked := r.prompt(allowOnce(t), "run: echo hi")
	if len(asked) != 1 {
		t.Fatalf("the editor was asked %d times", len(asked))
	}
	if ev := r.waitEvent("run: echo hi"); ev["answer"] != "allow-once" || ev["ran"] != true {
		t.Errorf("the agent's step %v", ev)
	}
	r.finish()
}
