package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The governed-session tests ([session] modes and fs) run `permhost proxy`
// with a policy in front of testdata/likeagent behaving as a recorded
// agent: starting in the mode the real one starts in, changing its mode by
// itself, asking to leave plan mode with "Yes, and use auto mode", sending
// an MCP approval as elicitation/create, reading and writing files through
// the editor.

const protectSecrets = `[[plugin]]
name = "protect-secrets"
path = "std:protect-secrets"
layer = "admin"`

// fsCaps advertises fs and form elicitation, as the recorded clients did.
const fsCaps = `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":false,"elicitation":{"form":{}}}`

// allowOnce answers with the first allow_once option shown.
func allowOnce(t *testing.T) func([]optionShown) string {
	return func(opts []optionShown) string {
		for _, o := range opts {
			if o.Kind == "allow_once" {
				return o.OptionID
			}
		}
		t.Errorf("no allow_once option shown: %v", ids(opts))
		return ""
	}
}

// readReport returns the lines the agent read.
func (r *likeRun) readReport() []string {
	b, _ := os.ReadFile(r.report)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// reportLines returns the lines the agent read that contain every one of
// the substrings.
func (r *likeRun) reportLines(subs ...string) []string {
	var out []string
	for _, l := range r.readReport() {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// waitEvent waits for the agent's step event named step and returns it.
func (r *likeRun) waitEvent(step string) map[string]any { return r.waitEventN(step, 1) }

// waitEventN waits for the nth step event named step and returns it.
func (r *likeRun) waitEventN(step string, n int) map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(pipeWait)
	for {
		b, _ := os.ReadFile(r.events)
		seen := 0
		for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var ev map[string]any
			if json.Unmarshal(l, &ev) == nil && ev["step"] == step {
				if seen++; seen == n {
					return ev
				}
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the agent never reported %q; events:\n%s", step, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// entries waits for a decision-log entry accepted by match and returns
// every such entry.
func (r *likeRun) entries(what string, match func(map[string]any) bool) []map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(pipeWait)
	for {
		var out []map[string]any
		b, _ := os.ReadFile(r.log)
		for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var m map[string]any
			if json.Unmarshal(l, &m) == nil && match(m) {
				out = append(out, m)
			}
		}
		if len(out) > 0 {
			return out
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no decision-log entry %s; log:\n%s", what, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func modeAction(action string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		mode, _ := m["mode"].(map[string]any)
		return mode != nil && mode["action"] == action
	}
}

// sessionModes reads a session result's current mode, both ways.
func sessionModes(t *testing.T, result json.RawMessage) (modeID, configValue string) {
	t.Helper()
	var res struct {
		Modes struct {
			CurrentModeID string `json:"currentModeId"`
		} `json:"modes"`
		ConfigOptions []struct {
			Category     string `json:"category"`
			CurrentValue string `json:"currentValue"`
		} `json:"configOptions"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		t.Fatalf("session result %s: %v", result, err)
	}
	for _, o := range res.ConfigOptions {
		if o.Category == "mode" {
			configValue = o.CurrentValue
		}
	}
	return res.Modes.CurrentModeID, configValue
}

// TestGovernedSessionStart: claude-agent-acp 0.101 (starts in auto),
// codex-acp 2.6 (agent) and Qwen Code (auto) are moved by permhost to
// their asking mode with the mode config option before the editor gets
// the session: the editor's result names the asking mode both ways, the
// switch's answer never reaches the editor, and the first command of the
// session is asked. Gemini CLI starts in default: nothing is switched.
func TestGovernedSessionStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ agent, from, to string }{
		{"claude101", "auto", "default"},
		{"codex", "agent", "read-only"},
		{"qwen", "auto", "default"},
		{"gemini", "default", ""},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			r := startLikeWith(t, likeOpts{agent: tc.agent, plugins: protectSecrets})
			mode, value := sessionModes(t, r.started.Result)
			switches := r.reportLines(`"method":"session/set_config_option"`)
			if tc.to == "" {
				if mode != tc.from || len(switches) != 0 || len(r.reportLines(`"method":"session/set_mode"`)) != 0 {
					t.Fatalf("an asking session was touched: mode %q, switches %v", mode, switches)
				}
			} else {
				if mode != tc.to || value != tc.to {
					t.Fatalf("the editor's session is in mode %q / config %q, want %s both ways:\n%s", mode, value, tc.to, r.started.Raw)
				}
				if len(switches) != 1 || !strings.Contains(switches[0], `"id":"permhost-`) || !strings.Contains(switches[0], `"value":"`+tc.to+`"`) {
					t.Fatalf("the agent read %v, want one set_config_option to %s under permhost's id", switches, tc.to)
				}
				if ev := r.waitEvent("set_config_option: " + tc.to); ev["mode"] != tc.to {
					t.Errorf("the agent's switch: %v", ev)
				}
				if i := r.client.index(func(m *wireMsg) bool { return bytes.Contains(m.ID, []byte("permhost-")) }); i >= 0 {
					t.Errorf("the editor got the answer to permhost's switch: %s", r.client.received()[i].Raw)
				}
				e := r.entries("of the switch", modeAction("switch"))[0]
				if m := e["mode"].(map[string]any); m["from"] != tc.from || m["to"] != tc.to || m["by"] != "session/set_config_option" || e["decidedBy"] != "modes" {
					t.Errorf("the switch's entry: %v", e)
				}
			}
			asked := r.prompt(allowOnce(t), "run: rm -rf build")
			ev := r.lastEvents(1)[0]
			if len(asked) != 1 || !ev.Asked || !ev.Ran {
				t.Fatalf("the first command: asked %d, %+v", len(asked), ev)
			}
			outcome, option := agentAnswerLogged(ev.Answer)
			r.logged("of the first command", ofTitle("rm -rf build"), outcome, option)
			r.finish()
		})
	}
}

// TestGovernedEditorSwitch: the editor's switch into a mode that decides
// by itself (set_mode auto, the mode config option to acceptEdits) is
// answered with an error naming the policy and never reaches the agent;
// plan, which asks, and another config option pass.
func TestGovernedEditorSwitch(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "claude101", plugins: protectSecrets})
	for _, p := range []struct{ method, params string }{
		{"session/set_mode", `{"sessionId":` + quote(r.session) + `,"modeId":"auto"}`},
		{"session/set_config_option", `{"sessionId":` + quote(r.session) + `,"configId":"mode","value":"acceptEdits"}`},
	} {
		res := r.call(p.method, p.params)
		var m struct {
			Error struct {
				Code    int
				Message string
			}
		}
		json.Unmarshal(res.Raw, &m)
		if m.Error.Code != -32001 || !strings.Contains(m.Error.Message, `modes = "govern"`) || !strings.Contains(m.Error.Message, "decides by itself") {
			t.Errorf("%s into a deciding mode: %s", p.method, res.Raw)
		}
	}
	if got := r.reportLines(`"auto"`, "set_mode"); len(got) != 0 {
		t.Errorf("the agent read the refused switch: %v", got)
	}
	if got := r.reportLines(`"acceptEdits"`, "set_config_option"); len(got) != 0 {
		t.Errorf("the agent read the refused switch: %v", got)
	}
	if res := r.call("session/set_mode", `{"sessionId":`+quote(r.session)+`,"modeId":"plan"}`); string(res.Result) != "{}" {
		t.Errorf("set_mode plan: %s", res.Raw)
	}
	if res := r.call("session/set_config_option", `{"sessionId":`+quote(r.session)+`,"configId":"model","value":"opus"}`); !bytes.Contains(res.Raw, []byte("unknown config option")) {
		t.Errorf("another config option did not reach the agent: %s", res.Raw)
	}
	if refused := r.entries("of the refusals", modeAction("refuse")); len(refused) != 2 {
		t.Errorf("%d refusals logged, want 2", len(refused))
	}
	r.finish()
}

// TestGovernedExitPlanAuto: ExitPlanMode's "Yes, and use auto mode"
// would switch to auto, which decides by itself: it is not shown, with
// allow_always = "agent" too; "Yes, manually approve edits" still leaves
// plan mode.
func TestGovernedExitPlanAuto(t *testing.T) {
	t.Parallel()
	for _, always := range []string{"permhost", "agent"} {
		t.Run(always, func(t *testing.T) {
			t.Parallel()
			r := startLikeWith(t, likeOpts{agent: "claude101", start: "plan", plugins: protectSecrets, session: `allow_always = "` + always + `"`})
			asked := r.prompt(pick(t, "exit-plan-default"), "plan: remove build, write hello.txt")
			if len(asked) != 1 || slices.Contains(ids(asked[0]), "exit-plan-auto") || !slices.Contains(ids(asked[0]), "reject") {
				t.Fatalf("shown %v, want no exit-plan-auto", asked)
			}
			ev := r.lastEvents(1)[0]
			if ev.Answer != "exit-plan-default" || !ev.Ran {
				t.Errorf("the agent: %+v", ev)
			}
			outcome, option := agentAnswerLogged(ev.Answer)
			r.logged("of the plan", ofTitle("Approve Plan"), outcome, option)
			e := r.entries("removing exit-plan-auto", modeAction("remove-options"))[0]
			if m := e["mode"].(map[string]any); fmt.Sprint(m["options"]) != "[exit-plan-auto]" {
				t.Errorf("removed %v", m["options"])
			}
			r.finish()
		})
	}
}

// TestGovernedAgentSwitchReversed: Qwen Code switching itself to auto-edit
// (as its "Allow All Edits" does) is switched back to default; the editor,
// which saw the agent's update, is told the mode it is in; the next write
// is asked.
func TestGovernedAgentSwitchReversed(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "qwen", plugins: protectSecrets})
	r.prompt(allowOnce(t), "switch: auto-edit")
	if ev := r.waitEventN("set_config_option: default", 2); ev["mode"] != "default" {
		t.Fatalf("the agent's mode after permhost's reversal: %v", ev)
	}
	// Two set_config_option: the session's start and the reversal.
	if got := r.reportLines(`"method":"session/set_config_option"`, `"value":"default"`); len(got) != 2 {
		t.Errorf("the agent read %d switches to default, want 2", len(got))
	}
	agents := r.client.index(func(m *wireMsg) bool {
		return m.Method == "session/update" && bytes.Contains(m.Params, []byte(`"currentModeId":"auto-edit"`))
	})
	told, _ := r.client.waitFor("the mode the session is in", func(m *wireMsg) bool {
		return m.Method == "session/update" && bytes.Contains(m.Params, []byte(`"current_mode_update","currentModeId":"default"`))
	})
	if agents < 0 || told < agents {
		t.Errorf("the editor saw the agent's switch at %d and was told default at %d", agents, told)
	}
	e := r.entries("of the reversal", modeAction("reverse"))[0]
	if m := e["mode"].(map[string]any); m["from"] != "auto-edit" || m["to"] != "default" || e["outcome"] != "reversed" {
		t.Errorf("the reversal's entry: %v", e)
	}
	asked := r.prompt(allowOnce(t), "write: a.txt")
	if len(asked) != 1 || !r.lastEvents(1)[0].Asked {
		t.Errorf("after the reversal the write was not asked (%d requests)", len(asked))
	}
	r.finish()
}

// elicitationAnswer answers elicitations with result; fs requests as an
// editor would (content "x", a write done).
func elicitationAnswer(result string) func(r *likeRun, m *wireMsg) []byte {
	return func(r *likeRun, m *wireMsg) []byte {
		switch m.Method {
		case "elicitation/create":
			return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`)
		case "fs/read_text_file":
			return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":"x"}}`)
		case "fs/write_text_file":
			return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":null}`)
		}
		return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`)
	}
}

// TestGovernedApprovalElicitation: codex-acp's MCP tool-call approval, an
// elicitation/create, goes through the chain: a plugin's reject answers
// decline and the editor never sees it; undecided, the editor gets it with
// only the one-time choice (allow_always = "permhost"), and its answer
// reaches the agent re-encoded; a choice it was not offered is cancelled.
func TestGovernedApprovalElicitation(t *testing.T) {
	t.Parallel()
	t.Run("rejected", func(t *testing.T) {
		t.Parallel()
		rules := protectSecrets + `
[[plugin]]
name = "team-rules"
path = "std:team-rules"
layer = "team"
[[plugin.config.rules]]
action = "reject"
kind = "execute"
reason = "no tools here"`
		r := startLikeWith(t, likeOpts{agent: "codex", plugins: rules, caps: fsCaps, serve: elicitationAnswer(`{"action":"accept","content":{"persist":"once"}}`)})
		r.prompt(allowOnce(t), "approve: files/delete_all")
		if ev := r.lastEvents(1)[0]; ev.Answer != "decline" || ev.Ran {
			t.Fatalf("the agent: %+v", ev)
		}
		if i := r.client.index(func(m *wireMsg) bool { return m.Method == "elicitation/create" }); i >= 0 {
			t.Errorf("the editor saw the approval")
		}
		e := r.entries("of the approval", func(m map[string]any) bool { return m["request"] == "elicitation/create" })[0]
		if e["decidedBy"] != "team-rules" || e["outcome"] != "decline" {
			t.Errorf("the approval's entry: %v", e)
		}
		r.finish()
	})
	t.Run("asked", func(t *testing.T) {
		t.Parallel()
		r := startLikeWith(t, likeOpts{agent: "codex", plugins: protectSecrets, caps: fsCaps,
			serve: elicitationAnswer(`{"action":"accept","content":{"persist":"once"},"_meta":{"editor":"e2e"}}`)})
		r.prompt(allowOnce(t), "approve: files/list")
		if ev := r.lastEvents(1)[0]; ev.Answer != "accept once" || !ev.Ran {
			t.Fatalf("the agent: %+v", ev)
		}
		r.logged("of the approval", ofRequest("elicitation/create"), "accept", "once")
		_, m := r.client.waitFor("the approval", func(m *wireMsg) bool { return m.Method == "elicitation/create" })
		var p struct {
			RequestedSchema struct {
				Properties struct {
					Persist struct {
						OneOf []struct{ Const string }
					}
				}
			}
		}
		json.Unmarshal(m.Params, &p)
		if one := p.RequestedSchema.Properties.Persist.OneOf; len(one) != 1 || one[0].Const != "once" {
			t.Errorf("the editor was offered %s", m.Params)
		}
		if got := r.reportLines(`{"action":"accept","content":{"persist":"once"}}`); len(got) != 1 || strings.Contains(got[0], "editor") {
			t.Errorf("the agent read %v, want the answer re-encoded", got)
		}
		r.finish()
	})
	t.Run("not offered", func(t *testing.T) {
		t.Parallel()
		r := startLikeWith(t, likeOpts{agent: "codex", plugins: protectSecrets, caps: fsCaps, serve: elicitationAnswer(`{"action":"accept","content":{"persist":"always"}}`)})
		r.prompt(allowOnce(t), "approve: files/list")
		if ev := r.lastEvents(1)[0]; ev.Answer != "cancel" || ev.Ran {
			t.Fatalf("the agent: %+v, want cancel for a choice not offered", ev)
		}
		r.logged("of the approval", ofRequest("elicitation/create"), "cancel", "")
		r.finish()
	})
}

// TestGovernedFS: Qwen Code's read_file reads through fs/read_text_file:
// a read of .env is refused by protect-secrets and the editor never sees
// it, a read of another file reaches it; a write whose permission request
// was allowed reaches the editor without being asked again (Qwen Code and
// Gemini CLI, which reads before asking).
func TestGovernedFS(t *testing.T) {
	t.Parallel()
	for _, agent := range []string{"qwen", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			r := startLikeWith(t, likeOpts{agent: agent, plugins: protectSecrets, caps: fsCaps, serve: elicitationAnswer("null")})
			if agent == "qwen" {
				r.prompt(allowOnce(t), "read: .env", "read: notes.txt")
				ev := r.lastEvents(2)
				if len(ev[0].FS) != 1 || !strings.Contains(ev[0].FS[0], "read .env: error permhost:") || !strings.Contains(ev[0].FS[0], "protect-secrets") || ev[0].Ran {
					t.Errorf("the read of .env: %+v", ev[0])
				}
				if len(ev[1].FS) != 1 || ev[1].FS[0] != "read notes.txt: content" {
					t.Errorf("the read of notes.txt: %+v", ev[1])
				}
				if i := r.client.index(func(m *wireMsg) bool { return bytes.Contains(m.Params, []byte(".env")) }); i >= 0 {
					t.Errorf("the editor saw the .env read: %s", r.client.received()[i].Raw)
				}
				e := r.entries("of the .env read", func(m map[string]any) bool {
					return m["request"] == "fs/read_text_file" && m["outcome"] == "refused"
				})[0]
				if e["decidedBy"] != "protect-secrets" {
					t.Errorf("the refusal's entry: %v", e)
				}
			}
			asked := r.prompt(allowOnce(t), "write: hello.txt")
			ev := r.lastEvents(1)[0]
			if len(asked) != 1 || !ev.Asked || !ev.Ran || !slices.Contains(ev.FS, "write hello.txt: ok") {
				t.Fatalf("the write: asked %d, %+v", len(asked), ev)
			}
			if i := r.client.index(func(m *wireMsg) bool {
				return m.Method == "session/request_permission" && bytes.Contains(m.ID, []byte("permhost-"))
			}); i >= 0 {
				t.Errorf("the allowed write was asked again: %s", r.client.received()[i].Raw)
			}
			w := r.entries("of the write", func(m map[string]any) bool { return m["request"] == "fs/write_text_file" })[0]
			if by, _ := w["decidedBy"].(string); !strings.HasPrefix(by, "allowed:d-") || w["outcome"] != "forwarded" {
				t.Errorf("the write's entry: %v", w)
			}
			r.finish()
		})
	}
}

// TestGovernedFSUnaskedWrite: Gemini CLI in yolo (modes = "pass": the
// session stays there) writes without a permission request; with fs
// governed the write goes to the person as permhost's own permission
// request: refused, the agent's write fails and the editor never gets it;
// allowed, it is forwarded.
func TestGovernedFSUnaskedWrite(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "gemini", start: "yolo", plugins: protectSecrets, session: `modes = "pass"`, caps: fsCaps, serve: elicitationAnswer("null")})
	asked := r.prompt(func(opts []optionShown) string { return "reject" }, "write: a.txt")
	ev := r.lastEvents(1)[0]
	if len(asked) != 1 || !slices.Equal(ids(asked[0])[:2], []string{"allow", "reject"}) || ev.Ran || len(ev.FS) != 2 || !strings.Contains(ev.FS[1], "write a.txt: error permhost:") {
		t.Fatalf("asked %v; the agent: %+v", asked, ev)
	}
	if i := r.client.index(func(m *wireMsg) bool { return m.Method == "fs/write_text_file" }); i >= 0 {
		t.Errorf("the editor got the refused write")
	}
	r.logged("of the refused write", ofFSWrite("a.txt"), fsOutcome(ev.FS[1]), "reject")
	asked = r.prompt(func(opts []optionShown) string { return "allow" }, "write: b.txt")
	if ev := r.lastEvents(1)[0]; len(asked) != 1 || !ev.Ran || ev.FS[1] != "write b.txt: ok" {
		t.Fatalf("the allowed write: %+v", ev)
	}
	r.logged("of the allowed write", ofFSWrite("b.txt"), "forwarded", "allow")
	r.finish()
}

// TestGovernedUnasked: Gemini CLI's "Allow for this session" (allow_always
// = "agent") becomes a rule on the command root: rm -rf other and rm -rf
// third then run with no permission request; each is logged unasked with
// its tool call, and stderr warns once.
func TestGovernedUnasked(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "gemini", plugins: protectSecrets, session: `allow_always = "agent"`})
	asked := r.prompt(pick(t, "proceed_always"), "run: rm -rf build", "run: rm -rf other", "run: rm -rf third")
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	un := r.entries("unasked", func(m map[string]any) bool { return m["unasked"] == true })
	for len(un) < 2 {
		time.Sleep(10 * time.Millisecond)
		un = r.entries("unasked", func(m map[string]any) bool { return m["unasked"] == true })
	}
	for i, title := range []string{"rm -rf other", "rm -rf third"} {
		tc, _ := un[i]["toolCall"].(map[string]any)
		if tc["title"] != title || tc["kind"] != "execute" || tc["status"] != "completed" || un[i]["decidedBy"] != "agent" || un[i]["outcome"] != "ran" {
			t.Errorf("unasked entry %d: %v", i, un[i])
		}
	}
	r.finish()
	if n := strings.Count(r.proc.Stderr(), "the agent ran a tool call without asking: the policy never saw it"); n != 1 {
		t.Errorf("stderr warned %d times, want once:\n%s", n, r.proc.Stderr())
	}
}

// TestGovernedLoadPromptHeld: the editor's session/prompt sent right after
// its session/load (or resume) of a session the agent loads in auto waits
// until permhost has switched the session: the agent reads the switch
// before the prompt, and the prompt's command is asked.
func TestGovernedLoadPromptHeld(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"session/load", "session/resume"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			r := startLikeWith(t, likeOpts{agent: "claude101", start: "default", plugins: protectSecrets, agentArgs: []string{"-load", "auto"}})
			r.mu.Lock()
			r.answer = allowOnce(t)
			r.mu.Unlock()
			r.client.send([]byte(`{"jsonrpc":"2.0","id":"load","method":"` + method + `","params":{"sessionId":` + quote(r.session) + `,"cwd":` + quote(r.project) + `,"mcpServers":[]}}`))
			r.client.send([]byte(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":` + quote(r.session) + `,"prompt":[{"type":"text","text":"run: rm -rf build"}]}}`))
			_, loaded := r.client.waitFor("the load's result", func(m *wireMsg) bool { return m.isResponse() && string(m.ID) == `"load"` })
			if mode, value := sessionModes(t, loaded.Result); mode != "default" || value != "default" {
				t.Fatalf("the loaded session is in %q / %q: %s", mode, value, loaded.Raw)
			}
			r.client.waitFor("the prompt's end", func(m *wireMsg) bool { return m.isResponse() && string(m.ID) == `"p"` })
			var order []string
			for _, l := range r.readReport() {
				for _, w := range []string{method, "session/set_config_option", "session/prompt"} {
					if strings.Contains(l, `"method":"`+w+`"`) {
						order = append(order, w)
					}
				}
			}
			if want := []string{method, "session/set_config_option", "session/prompt"}; !slices.Equal(order, want) {
				t.Fatalf("the agent read %v, want %v", order, want)
			}
			if ev := r.lastEvents(1)[0]; !ev.Asked || ev.Mode != "default" {
				t.Fatalf("the prompt's command: %+v", ev)
			}
			r.finish()
		})
	}
}

// TestGovernedRefusedLoad: a session the agent loads in auto and will not
// switch is refused: the load, the prompt sent right after it and every
// later prompt get the policy's error, and the agent reads no prompt.
func TestGovernedRefusedLoad(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "claude101", start: "default", plugins: protectSecrets, agentArgs: []string{"-load", "auto", "-refuse-switch"}})
	prompt := `{"sessionId":` + quote(r.session) + `,"prompt":[{"type":"text","text":"run: rm -rf build"}]}`
	r.client.send([]byte(`{"jsonrpc":"2.0","id":"load","method":"session/load","params":{"sessionId":` + quote(r.session) + `,"cwd":` + quote(r.project) + `,"mcpServers":[]}}`))
	r.client.send([]byte(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":` + prompt + `}`))
	for _, id := range []string{`"load"`, `"p"`} {
		_, m := r.client.waitFor("the answer to "+id, func(m *wireMsg) bool { return m.isResponse() && string(m.ID) == id })
		if !bytes.Contains(m.Raw, []byte(`"code":-32001`)) || !bytes.Contains(m.Raw, []byte("refused the switch to default")) {
			t.Errorf("%s: %s", id, m.Raw)
		}
	}
	if res := r.call("session/prompt", prompt); !bytes.Contains(res.Raw, []byte(`"code":-32001`)) {
		t.Errorf("a later prompt: %s", res.Raw)
	}
	if got := r.reportLines(`"method":"session/prompt"`); len(got) != 0 {
		t.Errorf("the agent read a prompt of the refused session: %v", got)
	}
	r.finish()
}

// TestGovernedFork: a session/fork result in bypassPermissions (a mode
// the session does not even offer) is switched to default before the
// editor sees it, and the fork's first command is asked.
func TestGovernedFork(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "claude101", start: "default", plugins: protectSecrets, agentArgs: []string{"-fork", "bypassPermissions"}})
	res := r.call("session/fork", `{"sessionId":`+quote(r.session)+`,"cwd":`+quote(r.project)+`,"mcpServers":[]}`)
	if mode, value := sessionModes(t, res.Result); mode != "default" || value != "default" {
		t.Fatalf("the fork is in %q / %q: %s", mode, value, res.Raw)
	}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(res.Result, &s)
	r.session = s.SessionID
	asked := r.prompt(allowOnce(t), "run: rm -rf build")
	if ev := r.lastEvents(1)[0]; len(asked) != 1 || !ev.Asked || ev.Mode != "default" {
		t.Fatalf("the fork's first command: asked %d, %+v", len(asked), ev)
	}
	r.finish()
}

// TestGovernedReversalUndone: Qwen Code switches itself to auto-edit, and
// switches back to auto-edit while permhost's switch back is in flight
// (its update arrives before its success answer). permhost does not take
// the success for the mode: it switches again, and the editor's next
// prompt waits until then: the write is asked.
func TestGovernedReversalUndone(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "qwen", start: "default", plugins: protectSecrets, agentArgs: []string{"-undo", "1"}})
	r.prompt(allowOnce(t), "switch: auto-edit")
	asked := r.prompt(allowOnce(t), "write: a.txt")
	if ev := r.lastEvents(1)[0]; len(asked) != 1 || !ev.Asked || ev.Mode != "default" {
		t.Fatalf("after the undone reversal the write: asked %d, %+v", len(asked), ev)
	}
	if got := r.reportLines(`"method":"session/set_config_option"`, `"value":"default"`); len(got) != 2 {
		t.Errorf("the agent read %d switches to default, want 2 (one undone)", len(got))
	}
	e := r.entries("of the reversal", modeAction("reverse"))[0]
	if e["outcome"] != "reversed" {
		t.Errorf("the reversal's entry: %v", e)
	}
	r.finish()
}
