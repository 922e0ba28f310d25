package policy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

// mediated runs an acp.Proxy with the engine's handler over pipes: the
// test plays the editor and the agent, one line at a time.
type mediated struct {
	t        *testing.T
	agentW   *io.PipeWriter // the agent's lines to the proxy
	clientW  *io.PipeWriter // the editor's lines to the proxy
	toAgent  *bufio.Reader
	toClient *bufio.Reader
	done     chan error
	once     sync.Once
}

func newMediated(t *testing.T, s *setup) *mediated {
	t.Helper()
	return newMediatedWith(t, acp.Options{Handler: s.engine.Handler(), Governor: s.engine.Governor()})
}

func newMediatedWith(t *testing.T, opts acp.Options) *mediated {
	t.Helper()
	p, err := acp.NewProxy(opts)
	if err != nil {
		t.Fatal(err)
	}
	clientIn, clientW := io.Pipe()
	clientR, clientOut := io.Pipe()
	agentR, agentIn := io.Pipe()
	agentOut, agentW := io.Pipe()
	m := &mediated{t: t, agentW: agentW, clientW: clientW, toAgent: bufio.NewReader(agentR), toClient: bufio.NewReader(clientR), done: make(chan error, 1)}
	go func() { m.done <- p.Run(context.Background(), clientIn, clientOut, agentIn, agentOut) }()
	t.Cleanup(m.close)
	return m
}

// close ends both peers' lines and waits for the proxy, its handlers
// included, to return: every decision is logged by then.
func (m *mediated) close() {
	m.once.Do(func() {
		m.clientW.Close()
		m.agentW.Close()
		go io.Copy(io.Discard, m.toClient)
		go io.Copy(io.Discard, m.toAgent)
		<-m.done
	})
}

func (m *mediated) write(w *io.PipeWriter, line string) {
	m.t.Helper()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		m.t.Fatal(err)
	}
}

// next reads the next line one side receives whose method (or, for a
// response, its absence) is what want names.
func next(t *testing.T, r *bufio.Reader, method string) map[string]json.RawMessage {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		var got string
		_ = json.Unmarshal(m["method"], &got)
		if got == method {
			return m
		}
	}
}

// TestEditorAnswerLogAgreesWithAgent puts the agent's Bash request to the
// editor through the proxy and answers it in every tricky way: whatever
// the agent receives, the decision log records the same outcome and
// option, and only an answer the agent receives as an allow counts as
// one. (With an extra top-level key the agent got cancelled while the log
// said "selected allow by person": the answer was read by two decoders.)
func TestEditorAnswerLogAgreesWithAgent(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		outcome      string // what the agent must get: "selected:<id>" or "cancelled"
	}{
		{"plain allow", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, "selected:allow"},
		{"extra top-level key", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}},"extra":1}`, "selected:reject"},
		{"extra key in the result", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"},"x":true}}`, "selected:reject"},
		{"extra key in the outcome", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow","why":"ok"}}}`, "selected:reject"},
		{"duplicate optionId", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"reject","optionId":"allow"}}}`, ""},
		{"case-variant optionId", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"reject","OptionId":"allow"}}}`, ""},
		{"unknown outcome", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"approved","optionId":"allow"}}}`, "selected:reject"},
		{"option not offered", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"yolo"}}}`, "selected:reject"},
		{"null result", `{"jsonrpc":"2.0","id":1,"result":null}`, "selected:reject"},
		{"optionId a number", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":7}}}`, "selected:reject"},
		{"outcome a string", `{"jsonrpc":"2.0","id":1,"result":{"outcome":"selected"}}`, "selected:reject"},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, "selected:reject"},
		{"cancelled with an option", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled","optionId":"allow"}}}`, "selected:reject"},
		{"cancelled", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}`, "cancelled"},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no"}}`, "cancelled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newEngine(t, nil)
			m := newMediated(t, s)
			m.write(m.agentW, `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":`+claudeBash+`}`)
			next(t, m.toClient, acp.MethodRequestPermission)
			m.write(m.clientW, tc.answer)
			resp := next(t, m.toAgent, "")
			var res struct {
				Outcome struct {
					Outcome  string `json:"outcome"`
					OptionID string `json:"optionId"`
				} `json:"outcome"`
			}
			if err := json.Unmarshal(resp["result"], &res); err != nil {
				t.Fatalf("the agent got %s: %v", resp["result"], err)
			}
			got := res.Outcome.Outcome
			if res.Outcome.OptionID != "" {
				got += ":" + res.Outcome.OptionID
			}
			if tc.outcome != "" && got != tc.outcome {
				t.Errorf("the agent got %s, want %s", got, tc.outcome)
			}
			if strings.Contains(got, "allow") && tc.outcome != "selected:allow" {
				t.Errorf("the agent got %s from an answer that does not read one way only", got)
			}
			m.close()
			entries := s.entries(t)
			if len(entries) != 1 {
				t.Fatalf("%d log entries, want 1", len(entries))
			}
			e := entries[0]
			logged := e["outcome"].(string)
			if id, _ := e["optionId"].(string); id != "" {
				logged += ":" + id
			}
			if logged != got {
				t.Errorf("the log records %s, the agent got %s (entry %v)", logged, got, e)
			}
		})
	}
}

// TestSessionCancelledAnswerLogged: the editor allows after it cancelled
// the session; the agent gets cancelled (ACP), and so does the log, with
// no allowance for the call.
func TestSessionCancelledAnswerLogged(t *testing.T) {
	s := newEngine(t, nil)
	m := newMediated(t, s)
	m.write(m.agentW, `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":`+claudeBash+`}`)
	next(t, m.toClient, acp.MethodRequestPermission)
	m.write(m.clientW, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"2a178532-7f3e-4eef-ad46-ab41b93044de"}}`)
	next(t, m.toAgent, acp.MethodSessionCancel)
	m.write(m.clientW, `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
	if got := string(next(t, m.toAgent, "")["result"]); got != `{"outcome":{"outcome":"cancelled"}}` {
		t.Fatalf("the agent got %s", got)
	}
	m.close()
	e := s.entries(t)[0]
	if e["outcome"] != "cancelled" || e["optionId"] != nil {
		t.Errorf("the log records %v %v, the agent got cancelled", e["outcome"], e["optionId"])
	}
}

// gated decides d once released.
type gated struct {
	release chan struct{}
	d       abi.Decision
}

func (p *gated) Call(ctx context.Context, req abi.Request) host.Result {
	select {
	case <-p.release:
	case <-ctx.Done():
		return host.Result{Err: &host.Error{Kind: host.KindCancelled, Plugin: "gated", Err: ctx.Err()}}
	}
	return host.Result{Decision: p.d}
}

// TestRaceAfterSessionCancelLogged: with the race strategy the editor is
// shown the request while the plugins run; the editor cancels the session,
// then the plugins allow. The agent gets cancelled, and so does the log
// (it said "selected allow" by the plugin).
func TestRaceAfterSessionCancelLogged(t *testing.T) {
	p := &gated{release: make(chan struct{}), d: abi.Decision{Outcome: abi.OutcomeAllow}}
	s := newEngine(t, &config.Config{Strategy: config.StrategyRace, OnUndecided: config.UndecidedReject},
		host.Member{Name: "gated", Layer: host.LayerUser, Policy: host.FailClosed, Plugin: p, Version: "1.0.0", SHA256: strings.Repeat("ab", 32)})
	m := newMediated(t, s)
	m.write(m.agentW, `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":`+claudeBash+`}`)
	next(t, m.toClient, acp.MethodRequestPermission)
	m.write(m.clientW, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"2a178532-7f3e-4eef-ad46-ab41b93044de"}}`)
	next(t, m.toAgent, acp.MethodSessionCancel)
	close(p.release)
	next(t, m.toClient, acp.MethodCancelRequest)
	if got := string(next(t, m.toAgent, "")["result"]); got != `{"outcome":{"outcome":"cancelled"}}` {
		t.Fatalf("the agent got %s", got)
	}
	m.close()
	e := s.entries(t)[0]
	if e["outcome"] != "cancelled" || e["optionId"] != nil {
		t.Errorf("the log records %v %v (decidedBy %v), the agent got cancelled", e["outcome"], e["optionId"], e["decidedBy"])
	}
}

// pausedDeliver stops a handler in the narrowest window there is: after
// deliver has read its context (still live) and logged nothing yet,
// before the proxy settles the request and queues the answer.
type pausedDeliver struct {
	acp.Client
	at, proceed chan struct{}
	sent        chan string // the line Deliver records
}

func (c pausedDeliver) Deliver(r acp.Response, record func([]byte)) error {
	c.at <- struct{}{}
	<-c.proceed
	return c.Client.Deliver(r, func(line []byte) {
		c.sent <- string(line)
		record(line)
	})
}

// TestCancelWhileDelivering: a plugin allows, and the editor's
// session/cancel lands between deliver's look at its context and the
// proxy's write (what docs/mediation.md once called the last window). The
// agent gets cancelled and nothing more, Deliver says so, and so does the
// log: the entry is read back from the line the proxy sent, not from the
// plugin's allow.
func TestCancelWhileDelivering(t *testing.T) {
	now := make(chan struct{})
	close(now)
	allow := host.Member{Name: "allow", Layer: host.LayerUser, Policy: host.FailClosed, Version: "1.0.0", SHA256: strings.Repeat("ab", 32),
		Plugin: &gated{release: now, d: abi.Decision{Outcome: abi.OutcomeAllow, OptionID: "allow"}}}
	s := newEngine(t, nil, allow)
	pause := pausedDeliver{at: make(chan struct{}), proceed: make(chan struct{}), sent: make(chan string, 1)}
	h := acp.HandlerFunc(func(ctx context.Context, pr *acp.PermissionRequest, c acp.Client) (acp.Response, error) {
		pause.Client = c
		return s.engine.Handler().RequestPermission(ctx, pr, pause)
	})
	m := newMediatedWith(t, acp.Options{Handler: h, Governor: s.engine.Governor()})
	m.write(m.agentW, `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":`+claudeBash+`}`)
	<-pause.at
	m.write(m.clientW, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"2a178532-7f3e-4eef-ad46-ab41b93044de"}}`)
	next(t, m.toAgent, acp.MethodSessionCancel)
	const cancelled = `{"outcome":{"outcome":"cancelled"}}`
	if got := string(next(t, m.toAgent, "")["result"]); got != cancelled {
		t.Fatalf("the agent got %s", got)
	}
	close(pause.proceed)
	if sent := <-pause.sent; !strings.Contains(sent, `"result":`+cancelled) {
		t.Errorf("Deliver says the agent got %s", sent)
	}
	// Whatever Deliver queued is ahead of this: the agent's next line.
	m.write(m.clientW, `{"jsonrpc":"2.0","method":"_marker"}`)
	if line, _ := m.toAgent.ReadString('\n'); !strings.Contains(line, `"_marker"`) {
		t.Errorf("after its cancelled answer the agent got %s", line)
	}
	m.close()
	e := s.entries(t)[0]
	if e["outcome"] != "cancelled" || e["optionId"] != nil || e["decidedBy"] != policy.ByCancel {
		t.Errorf("the log records %v %v by %v, the agent got cancelled", e["outcome"], e["optionId"], e["decidedBy"])
	}
}
