package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// autoGovernor switches every session that starts in "auto" to
// "default", as policy's governor does, and refuses it when the agent
// refuses; switched gets the answer each switch got.
func autoGovernor(switched chan<- Answer) *testGovernor {
	g := &testGovernor{}
	g.start = func(ctx context.Context, s *SessionStart, c Caller) (json.RawMessage, *RPCError) {
		if s.Session.Mode != "auto" {
			return nil, nil
		}
		a, err := c.Agent(ctx, MethodSessionSetMode, json.RawMessage(`{"sessionId":"`+s.Session.ID+`","modeId":"default"}`))
		if switched != nil {
			switched <- a
		}
		if err != nil || a.Error != nil {
			return nil, &RPCError{Code: CodePolicyRefused, Message: "permhost: the session cannot be governed"}
		}
		return nil, nil
	}
	return g
}

const (
	loadS1   = `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s-1","cwd":"/p","mcpServers":[]}}` + "\n"
	loadedS1 = `{"jsonrpc":"2.0","id":1,"result":{"modes":{"currentModeId":"auto","availableModes":[{"id":"default","name":"Manual"},{"id":"auto","name":"Auto"}]}}}` + "\n"
	promptS1 = `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}}` + "\n"
	cancelS1 = `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n"
)

// TestGateHoldsLoadedSession: the editor's session/prompt sent right after
// its session/load waits, with the session/cancel after it, until the
// governor has switched the session: the agent gets the switch first, then
// the prompt and the cancel in the editor's order; another session's
// request goes on meanwhile.
func TestGateHoldsLoadedSession(t *testing.T) {
	h := newHarness(t, Options{Governor: autoGovernor(nil)})
	other := `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s-2","prompt":[]}}` + "\n"
	h.sendClient(loadS1, promptS1, cancelS1, other)
	expect(t, "the load", h.agentGets(), loadS1)
	expect(t, "another session's prompt", h.agentGets(), other)
	h.syncBoth() // the prompt and the cancel for s-1 wait
	h.sendAgent(loadedS1)
	id, method, _ := envelopeOf(t, h.agentGets())
	if method != MethodSessionSetMode {
		t.Fatalf("the agent got %s before permhost's switch", method)
	}
	h.sendAgent(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n")
	expect(t, "the load's result", h.clientGets(), loadedS1)
	expect(t, "then the prompt", h.agentGets(), promptS1)
	expect(t, "then the cancel", h.agentGets(), cancelS1)
	h.sendClient(strings.Replace(promptS1, `"id":2`, `"id":4`, 1))
	expect(t, "a governed session's prompt goes on", h.agentGets(), strings.Replace(promptS1, `"id":2`, `"id":4`, 1))
}

// TestGateRefusedSession: once the governor refused a session, every
// request naming it gets the refusal, the held ones and the later ones
// (session/load again included), and nothing for it reaches the agent; a
// session/new refused is refused by its id too.
func TestGateRefusedSession(t *testing.T) {
	for _, start := range []string{"load", "resume", "new", "fork"} {
		t.Run(start, func(t *testing.T) {
			h := newHarness(t, Options{Governor: autoGovernor(nil)})
			req := strings.Replace(loadS1, "session/load", "session/"+start, 1)
			res := loadedS1
			if start == "new" || start == "fork" {
				req = `{"jsonrpc":"2.0","id":1,"method":"session/` + start + `","params":{"sessionId":"s-0","cwd":"/p","mcpServers":[]}}` + "\n"
				res = strings.Replace(loadedS1, `"result":{`, `"result":{"sessionId":"s-1",`, 1)
			}
			held := start == "load" || start == "resume" // the editor knows the id before the result
			h.sendClient(req)
			if held {
				h.sendClient(promptS1, cancelS1)
			}
			expect(t, "the start", h.agentGets(), req)
			h.sendAgent(res)
			id, _, _ := envelopeOf(t, h.agentGets())
			h.sendAgent(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"no"}}` + "\n")
			refused := `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"permhost: the session cannot be governed"}}` + "\n"
			expect(t, "the start refused", h.clientGets(), refused)
			if held {
				expect(t, "the held prompt refused", h.clientGets(), strings.Replace(refused, `"id":1`, `"id":2`, 1))
				// The person's cancel is not dropped: the agent may be
				// running in a mode that decides by itself.
				expect(t, "the held cancel", h.agentGets(), cancelS1)
			}
			later := strings.Replace(promptS1, `"id":2`, `"id":5`, 1)
			// A prompt that reads two ways, naming s-1 escaped first (a
			// first-wins parser reads s-1) and another session last.
			twoWays := `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s\u002d1","sessionId":"s-2","prompt":[]}}` + "\n"
			h.sendClient(later, cancelS1, strings.Replace(loadS1, `"id":1`, `"id":6`, 1), twoWays)
			expect(t, "a later cancel forwarded", h.agentGets(), cancelS1)
			expect(t, "a later prompt refused", h.clientGets(), strings.Replace(refused, `"id":1`, `"id":5`, 1))
			expect(t, "a later load refused", h.clientGets(), strings.Replace(refused, `"id":1`, `"id":6`, 1))
			expect(t, "a prompt that may name it refused", h.clientGets(), strings.Replace(refused, `"id":1`, `"id":7`, 1))
			h.syncBoth() // nothing for s-1 reached the agent
		})
	}
}

// TestGateForkIsSessionStart: a session/fork result goes through the
// governor under the new session's id, and the editor gets it only once
// the governor has switched that session.
func TestGateForkIsSessionStart(t *testing.T) {
	var seen *SessionStart
	g := autoGovernor(nil)
	start := g.start
	g.start = func(ctx context.Context, s *SessionStart, c Caller) (json.RawMessage, *RPCError) {
		seen = s
		return start(ctx, s, c)
	}
	h := newHarness(t, Options{Governor: g})
	fork := `{"jsonrpc":"2.0","id":7,"method":"session/fork","params":{"sessionId":"s-0","cwd":"/p"}}` + "\n"
	h.sendClient(fork)
	h.agentGets()
	forked := `{"jsonrpc":"2.0","id":7,"result":{"sessionId":"s-9","modes":{"currentModeId":"auto","availableModes":[{"id":"default"},{"id":"auto"}]}}}` + "\n"
	h.sendAgent(forked)
	id, method, params := envelopeOf(t, h.agentGets())
	if method != MethodSessionSetMode || string(params) != `{"sessionId":"s-9","modeId":"default"}` {
		t.Fatalf("the agent got %s %s", method, params)
	}
	h.sendAgent(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n")
	expect(t, "the fork's result", h.clientGets(), forked)
	if seen == nil || seen.Method != MethodSessionFork || seen.Session.ID != "s-9" {
		t.Fatalf("the governor saw %+v", seen)
	}
	if m := h.proxy.state.info("s-0").Mode; m != "" {
		t.Errorf("the parent session learned mode %q from the fork", m)
	}
}

// TestGateBoundsSessions: past MaxGovernedSessions a new session is
// refused before it reaches the agent; the sessions started are kept (a
// session/load of one goes on).
func TestGateBoundsSessions(t *testing.T) {
	h := newHarness(t, Options{Governor: &testGovernor{}, MaxGovernedSessions: 2})
	for i, sid := range []string{"s-1", "s-2"} {
		n := string(rune('1' + i))
		req := `{"jsonrpc":"2.0","id":` + n + `,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}` + "\n"
		h.sendClient(req)
		h.agentGets()
		res := `{"jsonrpc":"2.0","id":` + n + `,"result":{"sessionId":"` + sid + `"}}` + "\n"
		h.sendAgent(res)
		expect(t, "a session", h.clientGets(), res)
	}
	third := `{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}` + "\n"
	h.sendClient(third)
	if got := h.clientGets(); !strings.Contains(got, `"id":3,"error":{"code":-32001`) || !strings.Contains(got, "started 2 sessions") {
		t.Fatalf("the third session: %q", got)
	}
	h.sendClient(loadS1)
	expect(t, "a known session loads", h.agentGets(), loadS1)
	h.syncBoth()
}

// TestCallerHold: the client's messages for a session a governor holds
// wait until it releases them, then go in order; a release with an error
// answers them and every later request for the session.
func TestCallerHold(t *testing.T) {
	releases := make(chan func(*RPCError), 1)
	g := &testGovernor{onUpdate: func(u *Update, c Caller) {
		if u.ModeID == "auto" {
			releases <- c.Hold(u.SessionID)
		}
	}}
	h := newHarness(t, Options{Governor: g})
	mode := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"current_mode_update","currentModeId":"auto"}}}` + "\n"
	h.sendAgent(mode)
	h.clientGets()
	release := <-releases
	h.sendClient(promptS1)
	h.syncBoth()
	release(nil)
	expect(t, "released", h.agentGets(), promptS1)

	h.sendAgent(mode)
	h.clientGets()
	release = <-releases
	h.sendClient(promptS1)
	h.syncBoth()
	release(&RPCError{Code: CodePolicyRefused, Message: "permhost: refused"})
	want := `{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"permhost: refused"}}` + "\n"
	expect(t, "the held prompt refused", h.clientGets(), want)
	h.sendClient(promptS1)
	expect(t, "a later one too", h.clientGets(), want)
	h.syncBoth()
}

// TestGovernedReplyIDs: permhost's switch gets only the agent's answer
// under permhost's own id (an answer under another id is not it), and a
// governor's Reply carrying a response to another request is not relayed.
func TestGovernedReplyIDs(t *testing.T) {
	switched := make(chan Answer, 1)
	h := newHarness(t, Options{Governor: autoGovernor(switched)})
	h.sendClient(loadS1)
	h.agentGets()
	h.sendAgent(loadedS1)
	id, _, _ := envelopeOf(t, h.agentGets())
	stray := `{"jsonrpc":"2.0","id":"permhost-0-1","error":{"code":-32602,"message":"refused"}}` + "\n"
	h.sendAgent(stray, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`+"\n")
	expect(t, "the load's result", h.clientGets(), loadedS1)
	expect(t, "an answer under another id is not permhost's: it passes", h.clientGets(), stray)
	if a := <-switched; a.Error != nil || !strings.Contains(string(a.Line), `"id":`+id) {
		t.Fatalf("the switch got %s", a.Line)
	}

	g := &testGovernor{takes: func(*AgentRequest) bool { return true }}
	g.request = func(ctx context.Context, r *AgentRequest, c Client, p Caller) (Reply, error) {
		return Reply{Line: []byte(`{"jsonrpc":"2.0","id":99,"result":{"content":"x"}}`)}, nil
	}
	h = newHarness(t, Options{Governor: g})
	h.sendAgent(`{"jsonrpc":"2.0","id":4,"method":"fs/read_text_file","params":{"sessionId":"s-1","path":"/p/a"}}` + "\n")
	expect(t, "a reply under another id", h.agentGets(),
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"permhost: the answer is not a response to this request"}}`+"\n")
}

// TestAskedPerCall: a tool call id the agent uses again after its call
// completed names a new call, not asked about until its own request.
func TestAskedPerCall(t *testing.T) {
	g := &testGovernor{}
	h := newHarness(t, Options{Governor: g, Handler: answerWith(`{"outcome":{"outcome":"selected","optionId":"allow"}}`)})
	done := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}}}` + "\n"
	again := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","kind":"edit","status":"completed"}}}` + "\n"
	h.sendAgent(toolCallLine, permReq(`0`))
	h.clientGets()
	h.agentGets()
	h.sendAgent(done, again)
	h.clientGets()
	h.clientGets()
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := len(g.updates); n != 3 || !g.updates[1].Asked || g.updates[2].Asked {
		t.Fatalf("updates %+v: the first call was asked about, the second not", g.updates)
	}
}

// TestGateCancelPassesSwitchingSession: the editor's session/cancel for a
// session permhost is switching, with no prompt of it held, reaches the
// agent at once (the agent may be running a turn in a deciding mode);
// behind a held prompt it keeps its place (TestGateHoldsLoadedSession).
func TestGateCancelPassesSwitchingSession(t *testing.T) {
	h := newHarness(t, Options{Governor: autoGovernor(nil)})
	h.sendClient(loadS1, cancelS1)
	expect(t, "the load", h.agentGets(), loadS1)
	expect(t, "the cancel, not held", h.agentGets(), cancelS1)
	h.sendAgent(loadedS1)
	id, method, _ := envelopeOf(t, h.agentGets())
	if method != MethodSessionSetMode {
		t.Fatalf("the agent got %s, want permhost's switch", method)
	}
	h.sendAgent(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n")
	expect(t, "the load's result", h.clientGets(), loadedS1)
	h.syncBoth() // the cancel reached the agent once
}
