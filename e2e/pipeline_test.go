package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/acptest"
)

// pipelineTranscripts are the agent scripts the decision tests run: the
// recorded claude-agent-acp and SDK example sessions (integer ids that
// collide with the client's) and a scripted codex-acp turn (UUID ids).
func pipelineTranscripts(t *testing.T) []*acptest.Transcript {
	var out []*acptest.Transcript
	for _, name := range []string{"claude-allow", "claude-reject", "claude-plan-mode", "sdk-example-allow"} {
		out = append(out, loadTranscript(t, name))
	}
	return append(out, codexTranscript())
}

// answerRecorded answers each forwarded request with the transcript's own
// recorded answer.
func answerRecorded(perms []permRequest) func(*wireMsg) []byte {
	return func(m *wireMsg) []byte {
		for _, p := range perms {
			if bytes.Equal(p.id, m.ID) {
				return p.answer
			}
		}
		return nil
	}
}

// checkPromptEnd checks the response to the client's last request is the
// agent's recorded one.
func checkPromptEnd(t *testing.T, tr *acptest.Transcript, got *wireMsg) {
	t.Helper()
	last := tr.Entries[len(tr.Entries)-1]
	if !bytes.Equal(got.Raw, last.Msg) {
		t.Errorf("the turn ended with %.200s, want the agent's %.200s", got.Raw, last.Msg)
	}
}

var blockedByPlanMode = map[string]bool{"edit": true, "delete": true, "move": true, "execute": true}

// TestPipelineRejectingPlugin: plan-mode rejects every edit and execute.
// The agent gets its own reject option (claude `reject`, codex `abort`, SDK
// `reject`) under its own id, exactly once; the client never sees those
// requests but a tool_call_update with the request's tool-call fields and
// _meta.permhost.decision, before anything later about the call. What
// plan-mode abstains on (claude's ExitPlanMode, kind switch_mode) still
// reaches the client, whose recorded answer reaches the agent as recorded
// (permhost re-encodes it, and the recordings are already in that form).
func TestPipelineRejectingPlugin(t *testing.T) {
	t.Parallel()
	planMode := warmPlugin(t, examplePlugin(t, "plan-mode"))
	for _, tr := range pipelineTranscripts(t) {
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			cfg, log := writeConfig(t, "sequential", pluginSpec{name: "plan-mode", path: planMode, timeout: "5s", policy: "closed"})
			perms := permRequests(t, tr)
			r := startPipeline(t, cfg, log, tr, answerRecorded(perms))
			checkPromptEnd(t, tr, r.client.playRequests(tr))
			entries := r.decisions(len(perms))
			rejected := 0
			for _, p := range perms {
				e := entries[p.toolCallID]
				if blockedByPlanMode[p.kind] {
					rejected++
					r.checkRejected(p, "plan-mode")
					if e.DecidedBy != "plan-mode" || e.Outcome != "selected" || e.OptionID != p.optionOfKind("reject_once") ||
						len(e.Plugins) != 1 || e.Plugins[0].Outcome != "reject" || !e.Plugins[0].Enforced || e.Person != nil {
						t.Errorf("log for %s: %+v, want plan-mode's reject and no person", p.toolCallID, e)
					}
					continue
				}
				id := r.checkForwarded(p, p.allOptions())
				if got := r.agentAnswers(p.id); len(got) != 1 || got[0] != string(p.answer) {
					t.Errorf("the agent's answers to %s = %q, want the client's %s", p.id, got, p.answer)
				}
				if e.DecisionID != id || e.DecidedBy != "person" || e.Plugins[0].Outcome != "abstain" {
					t.Errorf("log for %s: %+v, want decision %s by the person after plan-mode abstained", p.toolCallID, e, id)
				}
			}
			if rejected == 0 {
				t.Fatal("the transcript has no request plan-mode rejects")
			}
			for _, e := range entries {
				if e.Via != "proxy" || e.Strategy != "sequential" || e.Session != string(bytes.Trim(member(t, perms[0].params, "sessionId"), `"`)) ||
					e.ToolCall.RawInputSHA256 == "" || len(e.Options) == 0 || e.Plugins[0].SHA256 == "" {
					t.Errorf("log line lacks context: %+v", e)
				}
			}
			r.finish()
		})
	}
}

// TestPipelineAbstainingPlugin: good.wasm abstains, so every request goes to
// the client unchanged but for _meta (the agent's own _meta keys kept,
// _meta.permhost.decisionId and the presentation record added unless the
// agent sent one), and the client's answer, in its own bytes, reaches the
// agent unchanged.
func TestPipelineAbstainingPlugin(t *testing.T) {
	t.Parallel()
	for _, tr := range pipelineTranscripts(t) {
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			cfg, log := writeConfig(t, "sequential", pluginSpec{name: "good", path: wasmFixture("good"), timeout: "2s", policy: "closed"})
			perms := permRequests(t, tr)
			answers := allowOnceAnswers(perms)
			r := startPipeline(t, cfg, log, tr, func(m *wireMsg) []byte { return answers[string(m.ID)] })
			checkPromptEnd(t, tr, r.client.playRequests(tr))
			entries := r.decisions(len(perms))
			for _, p := range perms {
				id := r.checkForwarded(p, p.allOptions())
				if got := r.agentAnswers(p.id); len(got) != 1 || got[0] != relayedAnswer(p.id, p.optionOfKind("allow_once")) {
					t.Errorf("the agent's answers to %s = %q, want the client's, re-encoded: %s", p.id, got, relayedAnswer(p.id, p.optionOfKind("allow_once")))
				}
				e := entries[p.toolCallID]
				allow := p.optionOfKind("allow_once")
				if e.DecisionID != id || e.DecidedBy != "person" || e.OptionID != allow || e.Person == nil || e.Person.Answer != allow ||
					len(e.Plugins) != 1 || e.Plugins[0].Name != "good" || e.Plugins[0].Outcome != "abstain" {
					t.Errorf("log for %s: %+v, want decision %s: good abstained, the person chose %s", p.toolCallID, e, id, allow)
				}
			}
			r.finish()
		})
	}
}

// TestPipelineFailurePolicies: a plugin that traps, under each failure
// policy. closed: the client sees only the one-time options, with the
// agent's ids and order, and the log names the fallback; abstain and
// monitor: the request goes to the client with every option, and the log
// records the failure, not enforced.
func TestPipelineFailurePolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy, transcript string
	}{
		{"closed", "claude-allow"},
		{"closed", "codex"},
		{"abstain", "codex"},
		{"monitor", "codex"},
		{"monitor", "claude-reject"},
	} {
		t.Run(tc.policy+"/"+tc.transcript, func(t *testing.T) {
			t.Parallel()
			tr := codexTranscript()
			if tc.transcript != "codex" {
				tr = loadTranscript(t, tc.transcript)
			}
			cfg, log := writeConfig(t, "sequential", pluginSpec{name: "trap", path: wasmFixture("unreachable"), timeout: "2s", policy: tc.policy})
			perms := permRequests(t, tr)
			answers := allowOnceAnswers(perms)
			r := startPipeline(t, cfg, log, tr, func(m *wireMsg) []byte { return answers[string(m.ID)] })
			checkPromptEnd(t, tr, r.client.playRequests(tr))
			entries := r.decisions(len(perms))
			narrowed := 0
			for _, p := range perms {
				want := p.allOptions()
				if tc.policy == "closed" {
					want = p.oneTimeOptions()
					if len(want) < len(p.options) {
						narrowed++
					}
				}
				r.checkForwarded(p, want)
				if got := r.agentAnswers(p.id); len(got) != 1 || got[0] != relayedAnswer(p.id, p.optionOfKind("allow_once")) {
					t.Errorf("the agent's answers to %s = %q, want the client's, re-encoded: %s", p.id, got, relayedAnswer(p.id, p.optionOfKind("allow_once")))
				}
				e := entries[p.toolCallID]
				if len(e.Plugins) != 1 || e.Plugins[0].Failure == nil || e.Plugins[0].Failure.Kind != "trap" ||
					e.Plugins[0].Enforced || e.Plugins[0].Policy != tc.policy {
					t.Errorf("log for %s: plugins %+v, want the trap recorded, not enforced, policy %s", p.toolCallID, e.Plugins, tc.policy)
				}
				if (e.Fallback != "") != (tc.policy == "closed") {
					t.Errorf("log for %s: fallback %q under policy %s", p.toolCallID, e.Fallback, tc.policy)
				}
				var shown []string
				for _, o := range want {
					var po permOption
					json.Unmarshal([]byte(o), &po)
					shown = append(shown, po.OptionID)
				}
				if e.Person == nil || strings.Join(e.Person.Shown, ",") != strings.Join(shown, ",") || e.DecidedBy != "person" {
					t.Errorf("log for %s: person %+v decidedBy %q, want shown %v and the person deciding", p.toolCallID, e.Person, e.DecidedBy, shown)
				}
			}
			if tc.policy == "closed" && narrowed == 0 {
				t.Fatal("no request of the transcript had a durable option to remove")
			}
			r.finish()
		})
	}
}

// TestPipelineNotOfferedAnswer: the client answers an option that was not
// offered to it — one the agent never offered (after an abstain), and the
// agent's allow_always that the closed fallback removed. The agent gets its
// reject option, and the log records the refusal.
func TestPipelineNotOfferedAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, transcript string
		plugin           pluginSpec
		answer           func(permRequest) string
	}{
		{"never-offered", "sdk-example-allow",
			pluginSpec{name: "good", path: wasmFixture("good"), timeout: "2s", policy: "closed"},
			func(permRequest) string { return "allow_everything_forever" }},
		{"removed-by-fallback", "claude-reject",
			pluginSpec{name: "trap", path: wasmFixture("unreachable"), timeout: "2s", policy: "closed"},
			func(p permRequest) string { return p.optionOfKind("allow_always") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := loadTranscript(t, tc.transcript)
			cfg, log := writeConfig(t, "sequential", tc.plugin)
			perms := permRequests(t, tr)
			r := startPipeline(t, cfg, log, tr, func(m *wireMsg) []byte {
				for _, p := range perms {
					if bytes.Equal(p.id, m.ID) {
						return editorAnswer(p.id, tc.answer(p))
					}
				}
				return nil
			})
			checkPromptEnd(t, tr, r.client.playRequests(tr))
			entries := r.decisions(len(perms))
			for _, p := range perms {
				r.forwarded(p)
				chosen, reject := tc.answer(p), p.optionOfKind("reject_once")
				if chosen == "" {
					t.Fatalf("request %s offers no option to answer", p.id)
				}
				want := selectedLine(p.id, reject)
				if got := r.agentAnswers(p.id); len(got) != 1 || !sameJSON(got[0], want) {
					t.Errorf("the agent's answers to %s = %q, want exactly one: %s", p.id, got, want)
				}
				e := entries[p.toolCallID]
				if e.Person == nil || !e.Person.Refused || e.Person.Answer != chosen || e.OptionID != reject ||
					e.DecidedBy != "builtin" || !strings.Contains(e.Reason, chosen) {
					t.Errorf("log for %s: %+v person %+v, want %q refused and %q by builtin", p.toolCallID, e, e.Person, chosen, reject)
				}
			}
			r.finish()
		})
	}
}
