package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/acptest"
)

const rejectDecision = `{"outcome":"reject","reason":"scripted: no"}`

// TestPipelineRacePluginWins: strategy race with a plugin that rejects after
// 400 ms while the client does not answer. The client is shown the request
// at once; when the plugin wins it gets $/cancel_request for that id, the
// agent gets its reject option, and the client's late answer is swallowed:
// the agent never receives a second response.
func TestPipelineRacePluginWins(t *testing.T) {
	t.Parallel()
	for _, tr := range []*acptest.Transcript{loadTranscript(t, "sdk-example-allow"), codexTranscript()} {
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			cfg, log := writeConfig(t, "race", scripted("fast-reject", rejectDecision, 400, "5s"))
			perms := permRequests(t, tr)
			r := startPipeline(t, cfg, log, tr, nil)
			checkPromptEnd(t, tr, r.client.playRequests(tr))
			entries := r.decisions(len(perms))
			for n, p := range perms {
				shown, _ := r.client.waitFor("the request for "+p.toolCallID, func(m *wireMsg) bool {
					return m.Method == "session/request_permission" && bytes.Equal(m.ID, p.id)
				})
				retracted, _ := r.client.waitFor("$/cancel_request for "+string(p.id), func(m *wireMsg) bool {
					var c struct {
						RequestID json.RawMessage `json:"requestId"`
					}
					return m.Method == "$/cancel_request" && m.ID == nil && json.Unmarshal(m.Params, &c) == nil &&
						bytes.Equal(compact(c.RequestID), p.id)
				})
				if retracted < shown {
					t.Errorf("$/cancel_request for %s came before the request", p.id)
				}
				r.checkPluginAnswer(p, "fast-reject")
				// The client answers late, as an editor whose prompt was on
				// screen may; the marker behind it shows it went nowhere.
				r.client.send(editorAnswer(p.id, p.optionOfKind("allow_once")))
				r.mark(n)
				if got := r.agentAnswers(p.id); len(got) != 1 {
					t.Errorf("the agent received %d answers to %s: %q", len(got), p.id, got)
				}
				e := entries[p.toolCallID]
				if e.Strategy != "race" || e.DecidedBy != "fast-reject" || e.OptionID != p.optionOfKind("reject_once") ||
					e.Person == nil || e.Person.Answer != "retracted" {
					t.Errorf("log for %s: %+v person %+v, want the plugin's reject and the prompt retracted", p.toolCallID, e, e.Person)
				}
			}
			r.finish()
		})
	}
}

// TestPipelineRacePersonWins: strategy race with a plugin that would reject
// after 5 s; the client answers at once. The agent gets the client's answer,
// byte for byte and only it; the plugin's result is discarded (the log
// records no plugin vote) and the decision did not wait for it.
func TestPipelineRacePersonWins(t *testing.T) {
	t.Parallel()
	for _, tr := range []*acptest.Transcript{loadTranscript(t, "claude-reject"), codexTranscript()} {
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			const pluginDelay = 5 * time.Second
			cfg, log := writeConfig(t, "race", scripted("slow-reject", rejectDecision, int(pluginDelay/time.Millisecond), "20s"))
			perms := permRequests(t, tr)
			answers := allowOnceAnswers(perms)
			r := startPipeline(t, cfg, log, tr, func(m *wireMsg) []byte { return answers[string(m.ID)] })
			checkPromptEnd(t, tr, r.client.playRequests(tr))
			entries := r.decisions(len(perms))
			r.mark(0)
			for _, p := range perms {
				r.checkForwarded(p, p.allOptions())
				if got := r.agentAnswers(p.id); len(got) != 1 || got[0] != string(answers[string(p.id)]) {
					t.Errorf("the agent's answers to %s = %q, want only the client's %s", p.id, got, answers[string(p.id)])
				}
				e := entries[p.toolCallID]
				if e.DecidedBy != "person" || e.OptionID != p.optionOfKind("allow_once") || len(e.Plugins) != 0 {
					t.Errorf("log for %s: %+v, want the person's allow and the plugin's vote discarded", p.toolCallID, e)
				}
				// A feature, not a speed test: the person's answer does not
				// wait for the plugin, which would have taken 5 s.
				if lat := time.Duration(e.LatencyUs) * time.Microsecond; lat >= pluginDelay-time.Second {
					t.Errorf("decision for %s took %v: it waited for the plugin", p.toolCallID, lat)
				}
			}
			if i := r.client.index(func(m *wireMsg) bool { return m.Method == "$/cancel_request" }); i >= 0 {
				t.Errorf("the client's prompt was retracted although it answered: %s", r.client.received()[i].Raw)
			}
			r.finish()
		})
	}
}

// cancelTranscript is an agent turn whose one permission request (id) is
// met by session/cancel; the agent then ends the turn cancelled.
func cancelTranscript(id string) *acptest.Transcript {
	tr := &acptest.Transcript{Name: "cancel-" + strings.Trim(id, `"`)}
	c2a := func(s string) { tr.Append(acptest.ClientToAgent, s) }
	a2c := func(s string) { tr.Append(acptest.AgentToClient, s) }
	c2a(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"permhost-e2e","version":"0"}}}`)
	a2c(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}`)
	c2a(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev/project","mcpServers":[]}}`)
	a2c(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess-cancel"}}`)
	c2a(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess-cancel","prompt":[{"type":"text","text":"edit it"}]}}`)
	a2c(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-cancel","update":{"sessionUpdate":"tool_call","toolCallId":"call_c","title":"Edit config.json","kind":"edit","status":"pending"}}}`)
	a2c(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/request_permission","params":{"sessionId":"sess-cancel","toolCall":{"toolCallId":"call_c","title":"Edit config.json","kind":"edit"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`)
	c2a(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess-cancel"}}`)
	c2a(`{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"cancelled"}}}`)
	a2c(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}`)
	return tr
}

// TestPipelineCancelWhilePluginsRun: the plugin takes 10 s; the client
// sends session/cancel while it runs. The agent gets `cancelled` at once
// (well before the plugin could have answered), the plugin is stopped, and
// the log records the cancellation.
func TestPipelineCancelWhilePluginsRun(t *testing.T) {
	t.Parallel()
	for _, id := range []string{`0`, `"perm-6a1f"`} {
		tr := cancelTranscript(id)
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			const pluginDelay = 10 * time.Second
			cfg, log := writeConfig(t, "sequential", scripted("slow-reject", rejectDecision, int(pluginDelay/time.Millisecond), "30s"))
			p := permRequests(t, tr)[0]
			r := startPipeline(t, cfg, log, tr, nil)
			ended := make(chan *wireMsg, 1)
			go func() { ended <- r.client.playRequests(tr) }()

			// Wait until the chain has handed the request to the plugin:
			// from then on a cancellation stops a running call.
			deadline := time.Now().Add(pipeWait)
			for !logHas(r.proc.Stderr(), `msg="calling plugin"`, `plugin=slow-reject`) {
				if time.Now().After(deadline) {
					t.Fatalf("permhost did not call the plugin within %v", pipeWait)
				}
				time.Sleep(5 * time.Millisecond)
			}
			sent := time.Now()
			r.client.send([]byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess-cancel"}}`))
			r.waitAgent("the answer to "+string(p.id), func(m *wireMsg) bool { return m.isResponse() && bytes.Equal(m.ID, p.id) })
			// A feature with a generous margin: the answer does not wait for
			// the 10 s plugin.
			if waited := time.Since(sent); waited > pluginDelay/2 {
				t.Errorf("the agent got its answer %v after session/cancel", waited)
			}
			want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"cancelled"}}}`
			if got := r.agentAnswers(p.id); len(got) != 1 || !sameJSON(got[0], want) {
				t.Errorf("the agent's answers to %s = %q, want exactly one: %s", p.id, got, want)
			}
			if got := <-ended; !sameJSON(string(got.Raw), `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}`) {
				t.Errorf("the turn ended %s", got.Raw)
			}
			e := r.decisions(1)[p.toolCallID]
			if e.Outcome != "cancelled" || e.DecidedBy != "cancel" || e.OptionID != "" {
				t.Errorf("log: %+v, want cancelled by cancel", e)
			}
			// The plugin was stopped, not left to spin for 10 s: its vote
			// is a cancellation, recorded well before its delay was up.
			if len(e.Plugins) != 1 || e.Plugins[0].Failure == nil || e.Plugins[0].Failure.Kind != "cancelled" ||
				time.Duration(e.Plugins[0].DurationUs)*time.Microsecond > pluginDelay/2 {
				t.Errorf("log plugins %+v, want slow-reject cancelled early", e.Plugins)
			}
			if i := r.client.index(func(m *wireMsg) bool { return m.Method == "session/request_permission" }); i >= 0 {
				t.Errorf("the client was asked while the plugin ran (sequential): %s", r.client.received()[i].Raw)
			}
			r.finish()
		})
	}
}
