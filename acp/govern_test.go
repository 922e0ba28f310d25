package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/jsontext"
)

// testGovernor is a Governor whose behaviour each test sets.
type testGovernor struct {
	mu       sync.Mutex
	refuse   func(*ClientRequest) *RPCError
	start    func(context.Context, *SessionStart, Caller) (json.RawMessage, *RPCError)
	takes    func(*AgentRequest) bool
	request  func(context.Context, *AgentRequest, Client, Caller) (Reply, error)
	updates  []Update
	onUpdate func(*Update, Caller)
}

func (g *testGovernor) ClientRequest(r *ClientRequest) *RPCError {
	if g.refuse == nil {
		return nil
	}
	return g.refuse(r)
}

func (g *testGovernor) SessionStart(ctx context.Context, s *SessionStart, c Caller) (json.RawMessage, *RPCError) {
	if g.start == nil {
		return nil, nil
	}
	return g.start(ctx, s, c)
}

func (g *testGovernor) Intercepts(r *AgentRequest) bool { return g.takes != nil && g.takes(r) }

func (g *testGovernor) AgentRequest(ctx context.Context, r *AgentRequest, c Client, p Caller) (Reply, error) {
	return g.request(ctx, r, c, p)
}

func (g *testGovernor) Update(u *Update, p Caller) {
	g.mu.Lock()
	g.updates = append(g.updates, *u)
	f := g.onUpdate
	g.mu.Unlock()
	if f != nil {
		f(u, p)
	}
}

// envelopeOf reads the id and method of a line the test received.
func envelopeOf(t *testing.T, line string) (id, method string, params []byte) {
	t.Helper()
	f, err := jsontext.Lookup([]byte(strings.TrimSpace(line)), "id", "method", "params")
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	method, _ = jsontext.String(f["method"])
	return string(f["id"]), method, f["params"]
}

const newSessionResult = `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-1","modes":{"currentModeId":"auto","availableModes":[{"id":"default","name":"Manual"},{"id":"auto","name":"Auto"}]},"big":12345678901234567890}}` + "\n"

// TestGovernorHoldsSessionStart: the agent's session/new result waits while
// the governor switches the mode with a request of permhost's own, whose
// response the client never sees; the result then reaches the client as
// the governor rewrote it, byte for byte otherwise, before an update the
// agent sent after it.
func TestGovernorHoldsSessionStart(t *testing.T) {
	g := &testGovernor{}
	g.start = func(ctx context.Context, s *SessionStart, c Caller) (json.RawMessage, *RPCError) {
		if s.Method != MethodSessionNew || s.Session.ID != "s-1" || s.Session.Mode != "auto" || s.Session.Cwd != "/p" {
			t.Errorf("session start %+v", s)
		}
		a, err := c.Agent(ctx, MethodSessionSetMode, json.RawMessage(`{"sessionId":"s-1","modeId":"default"}`))
		if err != nil || a.Error != nil {
			t.Errorf("switch: %v %+v", err, a)
		}
		return bytes.Replace(s.Result, []byte(`"currentModeId":"auto"`), []byte(`"currentModeId":"default"`), 1), nil
	}
	h := newHarness(t, Options{Governor: g})
	h.sendClient(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}` + "\n")
	h.agentGets()
	later := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}` + "\n"
	h.sendAgent(newSessionResult, later)
	sw := h.agentGets()
	id, method, params := envelopeOf(t, sw)
	if method != MethodSessionSetMode || !strings.HasPrefix(id, `"permhost-`) || string(params) != `{"sessionId":"s-1","modeId":"default"}` {
		t.Fatalf("the agent got %q", sw)
	}
	h.sendAgent(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n")
	expect(t, "the governed result", h.clientGets(), strings.Replace(newSessionResult, `"auto","availableModes"`, `"default","availableModes"`, 1))
	expect(t, "then the later update", h.clientGets(), later)
	h.syncBoth() // the switch's response did not reach the client
	if m := h.proxy.state.info("s-1").Mode; m != "default" {
		t.Errorf("state mode %q after permhost's switch, want default", m)
	}
}

// TestGovernorRefusesSessionStart: an error from the governor answers the
// client's session/new instead of the result.
func TestGovernorRefusesSessionStart(t *testing.T) {
	g := &testGovernor{start: func(context.Context, *SessionStart, Caller) (json.RawMessage, *RPCError) {
		return nil, &RPCError{Code: CodePolicyRefused, Message: "permhost: no"}
	}}
	h := newHarness(t, Options{Governor: g})
	h.sendClient(`{"jsonrpc":"2.0","id":"n","method":"session/new","params":{"cwd":"/p","mcpServers":[]}}` + "\n")
	h.agentGets()
	h.sendAgent(strings.Replace(newSessionResult, `"id":1`, `"id":"n"`, 1))
	expect(t, "the refusal", h.clientGets(), `{"jsonrpc":"2.0","id":"n","error":{"code":-32001,"message":"permhost: no"}}`+"\n")
}

// TestGovernorRefusesClientSwitch: a refused session/set_mode is answered
// with the governor's error and never reaches the agent; an allowed one
// is forwarded as it is.
func TestGovernorRefusesClientSwitch(t *testing.T) {
	g := &testGovernor{refuse: func(r *ClientRequest) *RPCError {
		var p struct{ ModeID string }
		json.Unmarshal(r.Params, &p)
		if p.ModeID == "auto" {
			return &RPCError{Code: CodePolicyRefused, Message: "permhost: auto decides by itself"}
		}
		return nil
	}}
	h := newHarness(t, Options{Governor: g})
	h.sendClient(`{"jsonrpc":"2.0","id":5,"method":"session/set_mode","params":{"sessionId":"s-1","modeId":"auto"}}` + "\n")
	expect(t, "refusal", h.clientGets(), `{"jsonrpc":"2.0","id":5,"error":{"code":-32001,"message":"permhost: auto decides by itself"}}`+"\n")
	plan := `{"jsonrpc":"2.0","id":6,"method":"session/set_mode","params":{"sessionId":"s-1","modeId":"plan"}}` + "\n"
	h.sendClient(plan)
	expect(t, "the allowed switch", h.agentGets(), plan)
	h.syncBoth()
}

// TestGovernorTakesAgentRequest: an fs request the governor takes never
// reaches the client when it refuses; when it forwards, the client's
// answer reaches the agent as the client wrote it; other requests pass.
func TestGovernorTakesAgentRequest(t *testing.T) {
	g := &testGovernor{takes: func(r *AgentRequest) bool { return r.Method == MethodReadTextFile }}
	g.request = func(ctx context.Context, r *AgentRequest, c Client, p Caller) (Reply, error) {
		if r.SessionID != "s-1" {
			t.Errorf("request %+v", r)
		}
		if strings.Contains(string(r.Params), ".env") {
			return Reply{Error: &RPCError{Code: CodePolicyRefused, Message: "permhost: protect-secrets refused"}}, nil
		}
		a, err := c.Ask(ctx, nil)
		if err != nil {
			return Reply{}, err
		}
		return Reply{Line: a.Line}, nil
	}
	h := newHarness(t, Options{Governor: g})
	h.sendAgent(`{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{"sessionId":"s-1","path":"/p/.env"}}` + "\n")
	expect(t, "refused", h.agentGets(), `{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"permhost: protect-secrets refused"}}`+"\n")
	read := `{"jsonrpc":"2.0","id":4,"method":"fs/read_text_file","params":{"sessionId":"s-1","path":"/p/a.txt"}}` + "\n"
	h.sendAgent(read)
	expect(t, "forwarded", h.clientGets(), strings.TrimSuffix(read, "\n")+"\n")
	ans := `{"jsonrpc":"2.0","id":4,"result":{"content":"hi"}}` + "\n"
	h.sendClient(ans)
	expect(t, "the client's answer", h.agentGets(), ans)
	write := `{"jsonrpc":"2.0","id":5,"method":"fs/write_text_file","params":{"sessionId":"s-1","path":"/p/a.txt","content":"x"}}` + "\n"
	h.sendAgent(write)
	expect(t, "not taken", h.clientGets(), write)
	h.syncBoth()
}

// TestGovernorRequestCancelled: session/cancel answers a held request the
// governor is still deciding with CodeRequestCancelled.
func TestGovernorRequestCancelled(t *testing.T) {
	g := &testGovernor{takes: func(*AgentRequest) bool { return true }}
	g.request = func(ctx context.Context, r *AgentRequest, c Client, p Caller) (Reply, error) {
		<-ctx.Done()
		return Reply{}, ctx.Err()
	}
	h := newHarness(t, Options{Governor: g})
	h.sendAgent(`{"jsonrpc":"2.0","id":9,"method":"fs/write_text_file","params":{"sessionId":"s-1","path":"/p/a","content":""}}` + "\n")
	h.syncBoth()
	cancel := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n"
	h.sendClient(cancel)
	expect(t, "cancel forwarded", h.agentGets(), cancel)
	expect(t, "then the request cancelled", h.agentGets(), `{"jsonrpc":"2.0","id":9,"error":{"code":-32800,"message":"permhost: request cancelled"}}`+"\n")
}

// TestCallerClient: a request of permhost's own to the client gets the
// client's answer, which the agent never sees; one given up is withdrawn
// with $/cancel_request and its late answer dropped.
func TestCallerClient(t *testing.T) {
	g := &testGovernor{takes: func(*AgentRequest) bool { return true }}
	asked := make(chan Answer, 1)
	g.request = func(ctx context.Context, r *AgentRequest, c Client, p Caller) (Reply, error) {
		if strings.Contains(string(r.Params), "give-up") {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
			_, err := p.Client(ctx, MethodRequestPermission, json.RawMessage(`{"sessionId":"s-1"}`))
			return Reply{Result: json.RawMessage(`{"gaveUp":` + jsonBool(err != nil) + `}`)}, nil
		}
		a, err := p.Client(ctx, MethodRequestPermission, json.RawMessage(`{"sessionId":"s-1","options":[]}`))
		if err != nil {
			return Reply{}, err
		}
		asked <- a
		return Reply{Result: json.RawMessage(`null`)}, nil
	}
	h := newHarness(t, Options{Governor: g})
	h.sendAgent(`{"jsonrpc":"2.0","id":0,"method":"fs/write_text_file","params":{"sessionId":"s-1","path":"/p/a","content":""}}` + "\n")
	id, method, _ := envelopeOf(t, h.clientGets())
	if method != MethodRequestPermission || !strings.HasPrefix(id, `"permhost-`) {
		t.Fatalf("own request id %s method %s", id, method)
	}
	h.sendClient(`{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"cancelled"}}}` + "\n")
	if a := <-asked; string(a.Result) != cancelledResult {
		t.Errorf("the caller got %s", a.Result)
	}
	expect(t, "the agent's answer", h.agentGets(), `{"jsonrpc":"2.0","id":0,"result":null}`+"\n")

	h.sendAgent(`{"jsonrpc":"2.0","id":1,"method":"fs/write_text_file","params":{"sessionId":"s-1","path":"/p/give-up","content":""}}` + "\n")
	id, _, _ = envelopeOf(t, h.clientGets())
	expect(t, "withdrawn", h.clientGets(), `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":`+id+`}}`+"\n")
	expect(t, "the agent's answer", h.agentGets(), `{"jsonrpc":"2.0","id":1,"result":{"gaveUp":true}}`+"\n")
	h.sendClient(`{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"cancelled"}}}` + "\n")
	h.syncBoth() // the late answer reached no one
}

func jsonBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestGovernorUpdates: the governor sees tool-call updates merged, with
// whether the agent asked about the call, and mode changes; a client
// request that takes one of permhost's ids is refused.
func TestGovernorUpdates(t *testing.T) {
	g := &testGovernor{}
	// The reversal's answer reaches the governor's own goroutine, after the
	// proxy has read it: the test waits for that goroutine, not the pipes.
	reversed := make(chan []byte, 1)
	g.onUpdate = func(u *Update, p Caller) {
		if u.Kind == "current_mode_update" && u.ModeID == "auto" {
			go func() {
				a, _ := p.Agent(context.Background(), MethodSessionSetMode, json.RawMessage(`{"sessionId":"s-1","modeId":"default"}`))
				reversed <- a.Line
			}()
		}
	}
	h := newHarness(t, Options{Governor: g, Handler: answerWith(`{"outcome":{"outcome":"selected","optionId":"allow"}}`)})
	h.sendAgent(toolCallLine)
	h.clientGets()
	h.sendAgent(permReq(`0`))
	h.agentGets()
	done := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}}}` + "\n"
	other := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call","toolCallId":"t2","kind":"edit","status":"completed"}}}` + "\n"
	mode := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"current_mode_update","currentModeId":"auto"}}}` + "\n"
	h.sendAgent(done, other, mode)
	h.clientGets()
	h.clientGets()
	expect(t, "the mode update passes", h.clientGets(), mode)
	sw := h.agentGets()
	id, _, _ := envelopeOf(t, sw)
	// The client takes permhost's id for a request of its own.
	h.sendClient(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{}}` + "\n")
	if got := h.clientGets(); !strings.Contains(got, `"code":-32600`) {
		t.Errorf("a client request with permhost's id: %q", got)
	}
	h.sendAgent(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n")
	h.syncBoth()
	select {
	case sent := <-reversed:
		if len(sent) == 0 {
			t.Error("the reversal got no answer")
		}
	case <-time.After(time.Minute): // a hang guard, not a margin
		t.Fatal("the reversal's call never returned")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	want := []Update{
		{SessionID: "s-1", Kind: "tool_call", ToolCallID: "t1", Status: "pending", ToolKind: "execute"},
		{SessionID: "s-1", Kind: "tool_call_update", ToolCallID: "t1", Status: "completed", ToolKind: "execute", Asked: true},
		{SessionID: "s-1", Kind: "tool_call", ToolCallID: "t2", Status: "completed", ToolKind: "edit"},
		{SessionID: "s-1", Kind: "current_mode_update", ModeID: "auto"},
	}
	if len(g.updates) != len(want) {
		t.Fatalf("updates %+v", g.updates)
	}
	for i, w := range want {
		u := g.updates[i]
		if u.SessionID != w.SessionID || u.Kind != w.Kind || u.ToolCallID != w.ToolCallID || u.Status != w.Status ||
			u.ToolKind != w.ToolKind || u.Asked != w.Asked || u.ModeID != w.ModeID {
			t.Errorf("update %d: %+v, want %+v", i, u, w)
		}
	}
}

// TestGovernorSeesLoading: the updates an agent replays while the client's
// session/load is unanswered are marked Loading; later ones are not. ACP v2
// has one method for both, session/resume, which replays history from
// replayFrom before its answer (schema v2 ResumeSessionRequest): its
// replay is history too, as is v1's session/resume's.
func TestGovernorSeesLoading(t *testing.T) {
	for _, tt := range []struct{ name, request, update string }{
		{"v1 session/load", `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s-1","cwd":"/p","mcpServers":[]}}`,
			`{"sessionUpdate":"tool_call","toolCallId":"old","kind":"execute","status":"completed"}`},
		{"v2 session/resume with replay", `{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s-1","cwd":"/p","mcpServers":[],"replayFrom":{"type":"start"}}}`,
			`{"sessionUpdate":"tool_call_update","toolCallId":"old","title":"rm -rf build","kind":"execute","status":"completed"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &testGovernor{}
			h := newHarness(t, Options{Governor: g})
			h.sendClient(tt.request + "\n")
			h.agentGets()
			old := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":` + tt.update + `}}` + "\n"
			h.sendAgent(old, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n", strings.Replace(old, `"old"`, `"new"`, 1))
			h.clientGets()
			h.clientGets()
			h.clientGets()
			g.mu.Lock()
			defer g.mu.Unlock()
			if len(g.updates) != 2 || !g.updates[0].Loading || g.updates[1].Loading {
				t.Fatalf("updates %+v", g.updates)
			}
		})
	}
}
