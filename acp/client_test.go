package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clientWait bounds every wait in these tests.
const clientWait = 10 * time.Second

// scriptedAgent is the agent side of a ClientConn under test: the test reads
// what the client sends and writes the agent's lines.
type scriptedAgent struct {
	t    *testing.T
	conn *ClientConn
	in   chan string // lines from the client
	w    *io.PipeWriter

	mu     sync.Mutex
	events []Event
}

func newScriptedAgent(t *testing.T, opts ClientOptions) *scriptedAgent {
	t.Helper()
	clientToAgentR, clientToAgentW := io.Pipe()
	agentToClientR, agentToClientW := io.Pipe()
	a := &scriptedAgent{t: t, in: make(chan string, 1024), w: agentToClientW}
	user := opts.Events
	opts.Events = func(ev Event) {
		a.mu.Lock()
		a.events = append(a.events, ev)
		a.mu.Unlock()
		if user != nil {
			user(ev)
		}
	}
	c, err := NewClientConn(clientToAgentW, agentToClientR, opts)
	if err != nil {
		t.Fatal(err)
	}
	a.conn = c
	go func() {
		r := bufio.NewReader(clientToAgentR)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(a.in)
				return
			}
			a.in <- line
		}
	}()
	t.Cleanup(func() {
		agentToClientW.Close()
		c.Close()
		clientToAgentR.Close()
	})
	return a
}

func (a *scriptedAgent) send(lines ...string) {
	a.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(a.w, l+"\n"); err != nil {
			a.t.Fatalf("agent write: %v", err)
		}
	}
}

// recv returns the next line the client sent, without its newline.
func (a *scriptedAgent) recv() string {
	a.t.Helper()
	select {
	case l, ok := <-a.in:
		if !ok {
			a.t.Fatal("the client closed the agent's input")
		}
		if !strings.HasSuffix(l, "\n") || strings.Count(l, "\n") != 1 {
			a.t.Fatalf("client line not one newline-terminated line: %q", l)
		}
		return strings.TrimSuffix(l, "\n")
	case <-time.After(clientWait):
		a.t.Fatal("timed out waiting for the client")
		return ""
	}
}

func (a *scriptedAgent) eventsSoFar() []Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Event(nil), a.events...)
}

type wire struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func parse(t *testing.T, line string) wire {
	t.Helper()
	var w wire
	if err := json.Unmarshal([]byte(line), &w); err != nil {
		t.Fatalf("client sent invalid JSON %q: %v", line, err)
	}
	if w.JSONRPC != "2.0" {
		t.Fatalf("client line without jsonrpc 2.0: %s", line)
	}
	return w
}

// handshake runs initialize and session/new against cwd.
func (a *scriptedAgent) handshake(cwd string) string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientWait)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := a.conn.Initialize(ctx)
		errc <- err
	}()
	m := parse(a.t, a.recv())
	if m.Method != "initialize" {
		a.t.Fatalf("first request %q, want initialize", m.Method)
	}
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"scripted","version":"9"},"authMethods":[]}}`, m.ID))
	if err := <-errc; err != nil {
		a.t.Fatal(err)
	}
	sidc := make(chan string, 1)
	go func() {
		s, err := a.conn.NewSession(ctx, cwd)
		errc <- err
		sidc <- s
	}()
	m = parse(a.t, a.recv())
	if m.Method != "session/new" {
		a.t.Fatalf("second request %q, want session/new", m.Method)
	}
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s-1","modes":{"currentModeId":"default","availableModes":[]}}}`, m.ID))
	if err := <-errc; err != nil {
		a.t.Fatal(err)
	}
	return <-sidc
}

type promptResult struct {
	stop string
	err  error
}

func (a *scriptedAgent) prompt(ctx context.Context, text string) (wire, chan promptResult) {
	a.t.Helper()
	done := make(chan promptResult, 1)
	go func() {
		s, err := a.conn.Prompt(ctx, "s-1", text)
		done <- promptResult{s, err}
	}()
	m := parse(a.t, a.recv())
	if m.Method != "session/prompt" {
		a.t.Fatalf("request %q, want session/prompt", m.Method)
	}
	return m, done
}

func waitPrompt(t *testing.T, done chan promptResult) promptResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(clientWait):
		t.Fatal("Prompt did not return")
		return promptResult{}
	}
}

const (
	cToolCall = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Bash","kind":"execute","status":"pending","rawInput":{},"_meta":{"claudeCode":{"toolName":"Bash"}}}}}`
	cToolUpd  = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"rm -rf build","rawInput":{"command":"rm -rf build"}}}}`
	cOptions  = `[{"optionId":"allow_always","name":"Always Allow","kind":"allow_always"},{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]`
)

func cPerm(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"t1"},"options":` + cOptions + `}}`
}

func selectAllow(ctx context.Context, req *PermissionRequest) (PermissionDecision, error) {
	return PermissionDecision{OptionID: "allow", DecidedBy: "test", Reason: "allowed in the test"}, nil
}

func TestClientTurn(t *testing.T) {
	var got *PermissionRequest
	var mu sync.Mutex
	a := newScriptedAgent(t, ClientOptions{
		Info: Peer{Name: "permhost-test", Version: "1.0"},
		Permissions: PermissionHandlerFunc(func(ctx context.Context, req *PermissionRequest) (PermissionDecision, error) {
			mu.Lock()
			got = req
			mu.Unlock()
			return selectAllow(ctx, req)
		}),
	})
	cwd := t.TempDir()
	ctx := context.Background()
	initc := make(chan InitializeResult, 1)
	go func() {
		r, err := a.conn.Initialize(ctx)
		if err != nil {
			t.Error(err)
		}
		initc <- r
	}()
	init := a.recv()
	want := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false},"clientInfo":{"name":"permhost-test","version":"1.0"},"protocolVersion":1}}`
	if init != want {
		t.Fatalf("initialize:\n got %s\nwant %s", init, want)
	}
	a.send(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"scripted","version":"9"}}}`)
	if r := <-initc; r.Agent.Name != "scripted" || r.ProtocolVersion != 1 {
		t.Fatalf("InitializeResult = %+v", r)
	}
	sidc := make(chan string, 1)
	go func() {
		s, err := a.conn.NewSession(ctx, cwd)
		if err != nil {
			t.Error(err)
		}
		sidc <- s
	}()
	m := parse(t, a.recv())
	if string(m.ID) != "2" || m.Method != "session/new" || !strings.Contains(string(m.Params), `"mcpServers":[]`) {
		t.Fatalf("session/new: %+v %s", m, m.Params)
	}
	a.send(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1","modes":{"currentModeId":"plan"}}}`)
	if s := <-sidc; s != "s-1" {
		t.Fatalf("session id %q", s)
	}

	m, done := a.prompt(ctx, "hello")
	if string(m.ID) != "3" || string(m.Params) != `{"prompt":[{"text":"hello","type":"text"}],"sessionId":"s-1"}` {
		t.Fatalf("prompt: id %s params %s", m.ID, m.Params)
	}
	// The agent's request id 1 collides with the client's initialize id:
	// each direction has its own id space.
	a.send(
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi <there> & co"}}}}`,
		cToolCall, cToolUpd, cPerm("1"))
	ans := a.recv()
	if ans != `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}` {
		t.Fatalf("answer %s", ans)
	}
	a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","rawOutput":{"ok":true}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"plan","entries":[]}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	r := waitPrompt(t, done)
	if r.err != nil || r.stop != StopEndTurn {
		t.Fatalf("Prompt = %q, %v", r.stop, r.err)
	}

	mu.Lock()
	req := got
	mu.Unlock()
	if req.Session.Cwd != cwd || req.Session.Mode != "plan" || req.Session.Agent.Name != "scripted" || req.Session.Client.Name != "permhost-test" {
		t.Errorf("request session = %+v", req.Session)
	}
	if !strings.Contains(string(req.ToolCall), `"command":"rm -rf build"`) || !strings.Contains(string(req.ToolCall), `"toolName":"Bash"`) {
		t.Errorf("merged tool call = %s", req.ToolCall)
	}

	// Events arrived before Prompt returned, in order.
	var kinds []string
	for _, ev := range a.eventsSoFar() {
		k := string(ev.Kind)
		switch ev.Kind {
		case EventText, EventThought:
			k += ":" + ev.Text
		case EventToolCall, EventToolCallUpdate:
			k += ":" + ev.ToolCall.Status + ":" + ev.ToolCall.RunBy
		case EventPermission:
			k += ":" + ev.Permission.OptionID + ":" + ev.Permission.DecidedBy + fmt.Sprint(":", ev.Permission.InTurn)
		case EventStop:
			k += ":" + ev.StopReason
		}
		kinds = append(kinds, k)
	}
	wantKinds := "thought:hmm text:Hi <there> & co tool_call:pending:agent tool_call_update:pending:agent permission:allow:test:true tool_call_update:completed:agent update stop:end_turn"
	if strings.Join(kinds, " ") != wantKinds {
		t.Fatalf("events:\n got %s\nwant %s", strings.Join(kinds, " "), wantKinds)
	}
	b, _ := json.Marshal(a.eventsSoFar()[4])
	for _, want := range []string{`"event":"permission"`, `"outcome":"selected"`, `"optionKind":"allow_once"`, `"title":"rm -rf build"`, `"requestId":1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("permission event JSON %s lacks %s", b, want)
		}
	}
}

func TestClientAnswersMalformedInput(t *testing.T) {
	tests := []struct {
		name string
		line string
		want []string // lines the client must answer, in order
	}{
		{"not JSON", `{"jsonrpc":"2.0",`, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"permhost: parse error: the line is not JSON"}}`}},
		{"garbage", `hello`, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"permhost: parse error: the line is not JSON"}}`}},
		{"no method, no result", `{"jsonrpc":"2.0","id":7}`, []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"permhost: invalid request: not a JSON-RPC 2.0 request, notification or response"}}`}},
		{"method not a string", `{"jsonrpc":"2.0","id":"x","method":5}`, []string{`{"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"permhost: invalid request: not a JSON-RPC 2.0 request, notification or response"}}`}},
		{"no jsonrpc member", `{"id":5,"method":"session/request_permission","params":{}}`, []string{`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"permhost: invalid request: not a JSON-RPC 2.0 request, notification or response"}}`}},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"permhost: invalid request: not a JSON-RPC 2.0 request, notification or response"}}`}},
		{"empty batch", `[]`, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"permhost: empty batch"}}`}},
		{"unknown method", `{"jsonrpc":"2.0","id":"u-1","method":"terminal/create","params":{}}`, []string{`{"jsonrpc":"2.0","id":"u-1","error":{"code":-32601,"message":"permhost: method not found: terminal/create"}}`}},
		{"fs not enabled", `{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{"sessionId":"s-1","path":"/etc/passwd"}}`, []string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"permhost: fs/read_text_file is not enabled (it was not advertised in initialize)"}}`}},
		{"batch answered element by element", `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","id":2,"method":"b"}, 3]`, []string{
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"permhost: method not found: a"}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"permhost: method not found: b"}}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"permhost: invalid request: not a JSON-RPC 2.0 request, notification or response"}}`,
		}},
		{"method in another case", `{"jsonrpc":"2.0","id":4,"Method":"session/request_permission","params":{}}`, []string{`{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"permhost: invalid request: not a JSON-RPC 2.0 request, notification or response"}}`}},
		{"notification gets nothing", `{"jsonrpc":"2.0","method":"_vendor/note","params":{}}`, nil},
		{"blank line gets nothing", `   `, nil},
		{"stray response gets nothing", `{"jsonrpc":"2.0","id":99,"result":{}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newScriptedAgent(t, ClientOptions{})
			a.send(tt.line)
			for _, w := range tt.want {
				if got := a.recv(); got != w {
					t.Fatalf("answer:\n got %s\nwant %s", got, w)
				}
			}
			// A marker request shows nothing else was sent before it.
			a.send(`{"jsonrpc":"2.0","id":"marker","method":"zz"}`)
			if got := parse(t, a.recv()); string(got.ID) != `"marker"` {
				t.Fatalf("unexpected extra answer: %+v", got)
			}
		})
	}
}

func TestClientCancelTurn(t *testing.T) {
	entered := make(chan struct{}, 4)
	a := newScriptedAgent(t, ClientOptions{Permissions: PermissionHandlerFunc(func(ctx context.Context, req *PermissionRequest) (PermissionDecision, error) {
		entered <- struct{}{}
		<-ctx.Done() // a person who never answers
		return PermissionDecision{OptionID: "allow"}, nil
	})})
	a.handshake(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	m, done := a.prompt(ctx, "go")
	a.send(cToolCall, cPerm(`"p-1"`))
	<-entered
	cancel()
	// session/cancel and the cancelled answer, in either order.
	got := map[string]bool{}
	for range 2 {
		got[a.recv()] = true
	}
	for _, w := range []string{
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}`,
		`{"jsonrpc":"2.0","id":"p-1","result":{"outcome":{"outcome":"cancelled"}}}`,
	} {
		if !got[w] {
			t.Fatalf("missing %s; got %v", w, got)
		}
	}
	// A request that arrives before the stop reason is cancelled at once.
	a.send(cPerm(`"p-2"`))
	if got := a.recv(); got != `{"jsonrpc":"2.0","id":"p-2","result":{"outcome":{"outcome":"cancelled"}}}` {
		t.Fatalf("late request answered %s", got)
	}
	// Prompt returns on the stop reason alone (not on the cancel, not on
	// the requests it answered meanwhile).
	select {
	case r := <-done:
		t.Fatalf("Prompt returned %+v before the stop reason", r)
	default:
	}
	a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"stopReason":"cancelled"}}`)
	if r := waitPrompt(t, done); r.err != nil || r.stop != StopCancelled {
		t.Fatalf("Prompt = %+v", r)
	}
	// After the turn, requests go to the handler again (no prompt in flight).
	a.send(cPerm("9"))
	<-entered
	a.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":9}}`)
	if got := a.recv(); got != `{"jsonrpc":"2.0","id":9,"result":{"outcome":{"outcome":"cancelled"}}}` {
		t.Fatalf("withdrawn request answered %s", got)
	}
	var perms []*PermissionEvent
	deadline := time.Now().Add(clientWait)
	for len(perms) < 3 && time.Now().Before(deadline) {
		perms = perms[:0]
		for _, ev := range a.eventsSoFar() {
			if ev.Kind == EventPermission {
				perms = append(perms, ev.Permission)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(perms) != 3 || !perms[0].InTurn || perms[2].InTurn || perms[2].DecidedBy != "cancel" {
		t.Fatalf("permission events: %+v", perms)
	}
}

func TestClientPermissionAfterTurnIsDecided(t *testing.T) {
	a := newScriptedAgent(t, ClientOptions{Permissions: PermissionHandlerFunc(selectAllow)})
	a.handshake(t.TempDir())
	// claude-agent-acp 0.23.1 asks after its prompt returned.
	m, done := a.prompt(context.Background(), "x")
	a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"stopReason":"end_turn"}}`)
	waitPrompt(t, done)
	a.send(cToolCall, cPerm("0"))
	if got := a.recv(); got != `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}` {
		t.Fatalf("answer %s", got)
	}
}

func TestClientHandlerFailuresAnswerCancelled(t *testing.T) {
	tests := []struct {
		name string
		h    PermissionHandlerFunc
	}{
		{"option not offered", func(context.Context, *PermissionRequest) (PermissionDecision, error) {
			return PermissionDecision{OptionID: "yolo"}, nil
		}},
		{"error", func(context.Context, *PermissionRequest) (PermissionDecision, error) {
			return PermissionDecision{OptionID: "allow"}, errors.New("boom")
		}},
		{"panic", func(context.Context, *PermissionRequest) (PermissionDecision, error) { panic("boom") }},
		{"explicit cancel", func(context.Context, *PermissionRequest) (PermissionDecision, error) {
			return PermissionDecision{}, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newScriptedAgent(t, ClientOptions{Permissions: tt.h})
			a.send(cPerm("4"))
			if got := a.recv(); got != `{"jsonrpc":"2.0","id":4,"result":{"outcome":{"outcome":"cancelled"}}}` {
				t.Fatalf("answer %s", got)
			}
		})
	}
	t.Run("no handler", func(t *testing.T) {
		a := newScriptedAgent(t, ClientOptions{})
		a.send(cPerm("4"))
		if got := a.recv(); got != `{"jsonrpc":"2.0","id":4,"result":{"outcome":{"outcome":"cancelled"}}}` {
			t.Fatalf("answer %s", got)
		}
	})
}

func TestClientSlowEventsDoNotBlockTheReadLoop(t *testing.T) {
	release := make(chan struct{})
	var delivered sync.WaitGroup
	a := newScriptedAgent(t, ClientOptions{
		Permissions: PermissionHandlerFunc(selectAllow),
		Events:      func(Event) { <-release },
	})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	const n = 2000
	delivered.Add(1)
	go func() {
		defer delivered.Done()
		for i := range n {
			a.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%d"}}}}`, i))
		}
		a.send(cPerm("1"))
	}()
	if got := a.recv(); got != `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}` {
		t.Fatalf("answer %s", got)
	}
	delivered.Wait()
	once.Do(func() { close(release) })
}

func TestClientAgentGoneMidTurn(t *testing.T) {
	a := newScriptedAgent(t, ClientOptions{})
	a.handshake(t.TempDir())
	_, done := a.prompt(context.Background(), "x")
	a.w.Close()
	r := waitPrompt(t, done)
	if !errors.Is(r.err, ErrAgentClosed) {
		t.Fatalf("Prompt error %v, want ErrAgentClosed", r.err)
	}
	<-a.conn.Done()
	if _, err := a.conn.NewSession(context.Background(), t.TempDir()); !errors.Is(err, ErrAgentClosed) {
		t.Fatalf("NewSession after the agent left: %v", err)
	}
}

func TestClientRefusesOtherProtocolVersions(t *testing.T) {
	for _, v := range []string{`2`, `"1"`, `0`, `null`} {
		t.Run(v, func(t *testing.T) {
			a := newScriptedAgent(t, ClientOptions{})
			errc := make(chan error, 1)
			go func() {
				_, err := a.conn.Initialize(context.Background())
				errc <- err
			}()
			m := parse(t, a.recv())
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":` + v + `}}`)
			if err := <-errc; !errors.Is(err, ErrProtocolVersion) {
				t.Fatalf("Initialize error %v", err)
			}
		})
	}
}

func TestClientAgentErrorResponse(t *testing.T) {
	a := newScriptedAgent(t, ClientOptions{})
	a.handshake(t.TempDir())
	m, done := a.prompt(context.Background(), "x")
	a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"model overloaded"}}`)
	r := waitPrompt(t, done)
	var re *RPCError
	if !errors.As(r.err, &re) || re.Code != CodeInternalError || re.Message != "model overloaded" {
		t.Fatalf("Prompt error %v", r.err)
	}
}

func TestClientRequestIDsNeverRepeat(t *testing.T) {
	a := newScriptedAgent(t, ClientOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	seen := map[string]bool{}
	for range 5 {
		errc := make(chan error, 1)
		cctx, ccancel := context.WithCancel(ctx)
		go func() {
			_, err := a.conn.Initialize(cctx)
			errc <- err
		}()
		m := parse(t, a.recv())
		if seen[string(m.ID)] {
			t.Fatalf("id %s reused", m.ID)
		}
		seen[string(m.ID)] = true
		ccancel() // abandoned: the agent is told, the id is not reused
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Initialize: %v", err)
		}
		if got := a.recv(); got != `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":`+string(m.ID)+`}}` {
			t.Fatalf("after cancel: %s", got)
		}
	}
	cancel()
}

func TestClientFileAccessConfinedToCwd(t *testing.T) {
	base := t.TempDir()
	cwd := filepath.Join(base, "project")
	outside := filepath.Join(base, "secret")
	for _, d := range []string{cwd, outside, filepath.Join(cwd, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(cwd, "src", "a.txt"), "one\ntwo\nthree\nfour\n")
	write(filepath.Join(outside, "key"), "hunter2")
	if err := os.Symlink(filepath.Join(outside, "key"), filepath.Join(cwd, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(cwd, "dir-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(cwd, "src", "a.txt"), filepath.Join(cwd, "link-in")); err != nil {
		t.Fatal(err)
	}
	// The session cwd itself reached through a symlink.
	cwdLink := filepath.Join(base, "cwd-link")
	if err := os.Symlink(cwd, cwdLink); err != nil {
		t.Fatal(err)
	}

	a := newScriptedAgent(t, ClientOptions{FS: FSAccess{Read: true, Write: true}})
	a.handshake(cwdLink)

	type want struct {
		code   int    // 0: success
		result string // exact result for success
	}
	tests := []struct {
		name   string
		method string
		params string
		want   want
	}{
		{"read inside", "fs/read_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(cwdLink, "src", "a.txt") + `"}`, want{0, `{"content":"one\ntwo\nthree\nfour\n"}`}},
		{"read inside by the resolved path", "fs/read_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(cwd, "src", "a.txt") + `"}`, want{0, `{"content":"one\ntwo\nthree\nfour\n"}`}},
		{"read lines", "fs/read_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(cwdLink, "src", "a.txt") + `","line":2,"limit":2}`, want{0, `{"content":"two\nthree\n"}`}},
		{"read through an inside symlink", "fs/read_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(cwdLink, "link-in") + `"}`, want{0, `{"content":"one\ntwo\nthree\nfour\n"}`}},
		{"read outside", "fs/read_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(outside, "key") + `"}`, want{code: CodeInvalidParams}},
		{"read dot-dot", "fs/read_text_file", `{"sessionId":"s-1","path":"` + cwdLink + `/../secret/key"}`, want{code: CodeInvalidParams}},
		// Cleaned, dir-out/../secret/key reads project/secret/key; the
		// kernel opens secret/../secret/key, outside.
		{"read dot-dot after a symlink leading out", "fs/read_text_file", `{"sessionId":"s-1","path":"` + cwdLink + `/dir-out/../secret/key"}`, want{code: CodeInvalidParams}},
		{"read a symlink leading out", "fs/read_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(cwdLink, "link-out") + `"}`, want{code: CodeInvalidParams}},
		{"read relative", "fs/read_text_file", `{"sessionId":"s-1","path":"src/a.txt"}`, want{code: CodeInvalidParams}},
		{"read missing", "fs/read_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(cwdLink, "nope") + `"}`, want{code: CodeResourceNotFound}},
		{"read unknown session", "fs/read_text_file", `{"sessionId":"s-9","path":"` + filepath.Join(cwdLink, "src", "a.txt") + `"}`, want{code: CodeInvalidParams}},
		{"write inside", "fs/write_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(cwdLink, "new", "b.txt") + `","content":"hello"}`, want{0, `{}`}},
		{"write through a directory symlink leading out", "fs/write_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(cwdLink, "dir-out", "planted") + `","content":"x"}`, want{code: CodeInvalidParams}},
		{"write outside", "fs/write_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(outside, "planted") + `","content":"x"}`, want{code: CodeInvalidParams}},
		{"write without content", "fs/write_text_file", `{"sessionId":"s-1","path":"` + filepath.Join(cwdLink, "c.txt") + `"}`, want{code: CodeInvalidParams}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprint(100 + i)
			a.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + tt.method + `","params":` + tt.params + `}`)
			m := parse(t, a.recv())
			if string(m.ID) != id {
				t.Fatalf("answer for id %s", m.ID)
			}
			switch {
			case tt.want.code == 0 && (m.Error != nil || string(m.Result) != tt.want.result):
				t.Fatalf("got result %s error %+v, want %s", m.Result, m.Error, tt.want.result)
			case tt.want.code != 0 && (m.Error == nil || m.Error.Code != tt.want.code):
				t.Fatalf("got result %s error %+v, want code %d", m.Result, m.Error, tt.want.code)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "new", "b.txt")); err != nil || string(b) != "hello" {
		t.Errorf("written file: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was planted outside the cwd: %v", err)
	}
}

// TestClientFileAccessResolved: behind a governor (FSAccess.Resolved) a
// path is served only as the resolved path the governor decided on: one
// that resolves anywhere else now had a symlink swapped in, and is refused.
func TestClientFileAccessResolved(t *testing.T) {
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, ".env"), []byte("KEY=1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(cwd, "config.txt")); err != nil {
		t.Fatal(err)
	}
	a := newScriptedAgent(t, ClientOptions{FS: FSAccess{Read: true, Write: true, Resolved: true}})
	a.handshake(cwd)
	for i, tc := range []struct {
		method, path, content string
		code                  int
	}{
		{"fs/read_text_file", cwd + "/.env", "", 0},
		{"fs/read_text_file", cwd + "/config.txt", "", CodeInvalidParams},
		{"fs/write_text_file", cwd + "/config.txt", "x", CodeInvalidParams},
		{"fs/write_text_file", cwd + "/new.txt", "x", 0},
	} {
		id := fmt.Sprint(200 + i)
		params := `{"sessionId":"s-1","path":"` + tc.path + `"`
		if tc.content != "" {
			params += `,"content":"` + tc.content + `"`
		}
		a.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + tc.method + `","params":` + params + `}}`)
		m := parse(t, a.recv())
		if code := 0; m.Error != nil {
			code = m.Error.Code
			if code != tc.code {
				t.Errorf("%s %s: error %+v, want code %d", tc.method, tc.path, m.Error, tc.code)
			}
		} else if tc.code != 0 {
			t.Errorf("%s %s: served %s, want code %d", tc.method, tc.path, m.Result, tc.code)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, ".env")); string(b) != "KEY=1" {
		t.Errorf(".env written through the symlink: %q", b)
	}
}

// TestOpenCheckedFollowsNoSymlink: a directory or file of the checked path
// replaced by a symlink after the check fails the open instead of being
// followed.
func TestOpenCheckedFollowsNoSymlink(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"p/src", "secret"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"p/src/a.txt", "secret/a.txt", "secret/key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	real := filepath.Join(dir, "p/src/a.txt")
	f, err := openChecked(real, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("the checked path: %v", err)
	}
	f.Close()
	// The directory swapped for a symlink elsewhere.
	if err := os.Rename(filepath.Join(dir, "p/src"), filepath.Join(dir, "p/src.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "secret"), filepath.Join(dir, "p/src")); err != nil {
		t.Fatal(err)
	}
	if f, err := openChecked(real, os.O_RDONLY, 0); err == nil {
		f.Close()
		t.Fatal("opened through a directory swapped for a symlink")
	} else if fe := openError(real, real, err); !strings.Contains(fe.msg, "changed after it was checked") {
		t.Errorf("answer %q", fe.msg)
	}
	// The file itself swapped for a symlink, for a write.
	other := filepath.Join(dir, "p/src.old/a.txt")
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "secret/key"), other); err != nil {
		t.Fatal(err)
	}
	if f, err := openChecked(other, os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		f.Close()
		t.Fatal("opened a file swapped for a symlink")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "secret/key")); string(b) != "secret/key" {
		t.Errorf("the symlink's target was written: %q", b)
	}
}

// FuzzClientInput feeds arbitrary agent lines to the client: whatever it
// answers is one JSON-RPC 2.0 response per line, never a batch, with an id
// that is null, a string or a number.
func FuzzClientInput(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[{"optionId":"a","name":"A","kind":"allow_once"}]}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t"}}}]`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"a"}`, `not json`, `[]`, `[[]]`, `{"id":1}`, "\xff\xfe",
		`{"jsonrpc":"2.0","id":"r","method":"fs/read_text_file","params":{"sessionId":"s","path":"/etc/passwd"}}`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n\r") {
			return
		}
		a := newScriptedAgent(t, ClientOptions{Permissions: PermissionHandlerFunc(func(ctx context.Context, req *PermissionRequest) (PermissionDecision, error) {
			if len(req.Options) > 0 {
				return PermissionDecision{OptionID: req.Options[0].OptionID}, nil
			}
			return PermissionDecision{}, nil
		})})
		a.send(line)
		a.send(`{"jsonrpc":"2.0","id":"marker","method":"zz"}`)
		for {
			l := a.recv()
			if strings.HasPrefix(l, "[") {
				t.Fatalf("the client sent a batch: %s", l)
			}
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Method  *string         `json:"method"`
				Result  json.RawMessage `json:"result"`
				Error   json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil || m.JSONRPC != "2.0" || m.Method != nil || (m.Result == nil) == (m.Error == nil) || !validID(m.ID) || len(m.ID) == 0 {
				t.Fatalf("not a JSON-RPC response: %s", l)
			}
			if string(m.ID) == `"marker"` {
				return
			}
		}
	})
}

// A permission request nested deeper than what decides can read is
// answered cancelled; the handler never sees it.
func TestClientDeepRequestIsCancelled(t *testing.T) {
	asked := make(chan string, 1)
	a := newScriptedAgent(t, ClientOptions{Permissions: PermissionHandlerFunc(func(ctx context.Context, req *PermissionRequest) (PermissionDecision, error) {
		asked <- string(req.ID)
		return PermissionDecision{OptionID: "allow"}, nil
	})})
	deep := strings.Replace(cPerm("6"), `{"toolCallId":"t1"}`, `{"toolCallId":"t1","rawInput":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`}`, 1)
	a.send(deep)
	if got := a.recv(); got != `{"jsonrpc":"2.0","id":6,"result":{"outcome":{"outcome":"cancelled"}}}` {
		t.Fatalf("answer %s", got)
	}
	select {
	case id := <-asked:
		t.Fatalf("the handler decided %s", id)
	default:
	}
}
