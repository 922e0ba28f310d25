package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/config"
)

// govEngine is an engine with session settings s and no plugins.
func govEngine(t *testing.T, s config.Session) (*Engine, *DecisionLog, *acptest.SyncBuffer) {
	t.Helper()
	buf := &acptest.SyncBuffer{}
	dlog := NewDecisionLog(buf, nil)
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: s}
	e, err := New(context.Background(), Options{Config: cfg, Log: dlog, Home: "/home/dev", Grants: t.TempDir() + "/grants.json"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e, dlog, buf
}

func governing() config.Session {
	return config.Session{Modes: config.ModesGovern, FS: config.FSGovern, AllowAlways: config.AllowAlwaysPermhost}
}

// fakeCaller answers permhost's own requests.
type fakeCaller struct {
	mu     sync.Mutex
	agent  func(method string, params json.RawMessage) (acp.Answer, error)
	calls  []string // "method params"
	notes  []string
	called chan struct{}
}

func (c *fakeCaller) Agent(ctx context.Context, method string, params json.RawMessage) (acp.Answer, error) {
	c.mu.Lock()
	c.calls = append(c.calls, method+" "+string(params))
	f := c.agent
	c.mu.Unlock()
	defer func() {
		if c.called != nil {
			c.called <- struct{}{}
		}
	}()
	return f(method, params)
}

func (c *fakeCaller) Client(context.Context, string, json.RawMessage) (acp.Answer, error) {
	return acp.Answer{}, errors.New("no client in this test")
}

func (c *fakeCaller) Notify(method string, params json.RawMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, string(params))
	return nil
}

func accepts(string, json.RawMessage) (acp.Answer, error) {
	return acp.Answer{Result: json.RawMessage(`{}`)}, nil
}

var (
	claude101 = acp.Peer{Name: "@agentclientprotocol/claude-agent-acp", Version: "0.101.0"}
	qwenPeer  = acp.Peer{Name: "qwen-code", Version: "0.24.4"}
	unknown   = acp.Peer{Name: "some-agent", Version: "1.0.0"}
)

// A claude-agent-acp 0.101 result in auto, spaced and escaped as an agent
// may write it.
const autoResult = `{"sessionId":"s-1", "modes":{"currentModeId" : "auto","availableModes":[{"id":"default","name":"Manual"},{"id":"acceptEdits","name":"Accept edits"},{"id":"plan","name":"Plan"},{"id":"auto","name":"Auto \u2014 decides"}]},"configOptions":[{"id":"model","category":"model","currentValue":"auto"},{"id":"mode","category":"mode","type":"select","currentValue":"auto","options":[{"value":"default","name":"Manual"},{"value":"auto","name":"Auto"}]}],"n":12345678901234567890}`

func TestSessionStart(t *testing.T) {
	wantResult := strings.Replace(strings.Replace(autoResult, `"currentModeId" : "auto"`, `"currentModeId" : "default"`, 1),
		`"category":"mode","type":"select","currentValue":"auto"`, `"category":"mode","type":"select","currentValue":"default"`, 1)
	for _, tc := range []struct {
		name     string
		session  config.Session
		peer     acp.Peer
		result   string
		agent    func(string, json.RawMessage) (acp.Answer, error)
		want     string // the result the editor gets; "" the agent's own
		refused  string // a word of the refusal
		call     string // permhost's request to the agent
		logged   string // the mode action logged
		suspects string
	}{
		{name: "auto to default", session: governing(), peer: claude101, result: autoResult, agent: accepts, want: wantResult,
			call: `session/set_config_option {"configId":"mode","sessionId":"s-1","value":"default"}`, logged: `"action":"switch"`},
		{name: "the agent refuses", session: governing(), peer: claude101, result: autoResult,
			agent: func(string, json.RawMessage) (acp.Answer, error) {
				return acp.Answer{Error: &acp.RPCError{Code: -32602, Message: "no"}}, nil
			},
			refused: `refused the switch to default (error -32602: no)`, call: "session/set_config_option", logged: `"action":"ungovernable"`},
		{name: "asks already", session: governing(), peer: claude101, result: strings.Replace(autoResult, `"currentValue":"auto","options"`, `"currentValue":"plan","options"`, 1)},
		{name: "modes pass", session: config.Session{Modes: config.ModesPass}, peer: claude101, result: autoResult},
		{name: "no mode asks", session: governing(), peer: unknown,
			result:  `{"sessionId":"s-1","modes":{"currentModeId":"yolo","availableModes":[{"id":"yolo","name":"YOLO"},{"id":"full-auto","name":"Full auto"}]}}`,
			refused: "no offered mode asks", logged: `"action":"ungovernable"`},
		{name: "configured deciding words", session: config.Session{Modes: config.ModesGovern, DecidingWords: []string{"turbo"}}, peer: unknown,
			result: `{"sessionId":"s-1","modes":{"currentModeId":"turbo","availableModes":[{"id":"turbo","name":"Turbo"},{"id":"careful","name":"Careful"}]}}`,
			agent:  accepts, want: `{"sessionId":"s-1","modes":{"currentModeId":"careful","availableModes":[{"id":"turbo","name":"Turbo"},{"id":"careful","name":"Careful"}]}}`,
			call: `session/set_mode {"modeId":"careful","sessionId":"s-1"}`, logged: `"action":"switch"`},
		{name: "not strict", session: governing(), peer: claude101, result: autoResult, suspects: `duplicate key "modes"`,
			refused: "cannot be read one way only", logged: `"action":"ungovernable"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, dlog, buf := govEngine(t, tc.session)
			c := &fakeCaller{agent: tc.agent}
			s := &acp.SessionStart{Method: acp.MethodSessionNew, Result: json.RawMessage(tc.result), Suspicious: tc.suspects,
				Session: acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: tc.peer}}
			res, rerr := e.Governor().SessionStart(context.Background(), s, c)
			switch {
			case tc.refused != "":
				if rerr == nil || rerr.Code != acp.CodePolicyRefused || !strings.Contains(rerr.Message, tc.refused) || !strings.Contains(rerr.Message, `modes = "pass"`) {
					t.Errorf("refusal %+v, want one saying %q", rerr, tc.refused)
				}
			case rerr != nil:
				t.Fatalf("refused: %v", rerr.Message)
			case tc.want == "" && res != nil:
				t.Errorf("result changed to %s", res)
			case tc.want != "" && string(res) != tc.want:
				t.Errorf("result\n got %s\nwant %s", res, tc.want)
			}
			if got := strings.Join(c.calls, "\n"); !strings.HasPrefix(got, tc.call) || (tc.call == "") != (got == "") {
				t.Errorf("permhost's requests %q, want %q", got, tc.call)
			}
			dlog.Close()
			if tc.logged == "" && buf.String() != "" || !strings.Contains(buf.String(), tc.logged) {
				t.Errorf("logged %q, want %q", buf.String(), tc.logged)
			}
		})
	}
}

func TestClientRequest(t *testing.T) {
	s := acp.SessionInfo{ID: "s-1", Agent: claude101}
	for _, tc := range []struct {
		name, method, params string
		session              config.Session
		peer                 acp.Peer
		refused              bool
	}{
		{"set_mode auto", acp.MethodSessionSetMode, `{"sessionId":"s-1","modeId":"auto"}`, governing(), claude101, true},
		{"set_mode bypassPermissions", acp.MethodSessionSetMode, `{"sessionId":"s-1","modeId":"bypassPermissions"}`, governing(), claude101, true},
		{"set_mode plan", acp.MethodSessionSetMode, `{"sessionId":"s-1","modeId":"plan"}`, governing(), claude101, false},
		{"mode option acceptEdits", acp.MethodSessionSetConfigOption, `{"sessionId":"s-1","configId":"mode","value":"acceptEdits"}`, governing(), claude101, true},
		{"model option", acp.MethodSessionSetConfigOption, `{"sessionId":"s-1","configId":"model","value":"auto"}`, governing(), claude101, false},
		{"modes pass", acp.MethodSessionSetMode, `{"sessionId":"s-1","modeId":"auto"}`, config.Session{Modes: config.ModesPass}, claude101, false},
		{"qwen yolo", acp.MethodSessionSetMode, `{"sessionId":"s-1","modeId":"yolo"}`, governing(), qwenPeer, true},
		{"unknown agent, default words", acp.MethodSessionSetMode, `{"sessionId":"s-1","modeId":"full-access"}`, governing(), unknown, true},
		{"unknown agent, configured words", acp.MethodSessionSetMode, `{"sessionId":"s-1","modeId":"full-access"}`,
			config.Session{Modes: config.ModesGovern, DecidingWords: []string{"turbo"}}, unknown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := govEngine(t, tc.session)
			s.Agent = tc.peer
			rerr := e.Governor().ClientRequest(&acp.ClientRequest{Method: tc.method, Params: json.RawMessage(tc.params), Session: s})
			if (rerr != nil) != tc.refused {
				t.Fatalf("refused %v, want %v", rerr, tc.refused)
			}
			if rerr != nil && (rerr.Code != acp.CodePolicyRefused || !strings.Contains(rerr.Message, `[session] modes = "govern"`)) {
				t.Errorf("refusal %+v", rerr)
			}
		})
	}
	e, _, _ := govEngine(t, governing())
	if rerr := e.Governor().ClientRequest(&acp.ClientRequest{Method: acp.MethodSessionSetMode, Suspicious: "duplicate key", Session: s}); rerr == nil {
		t.Error("a switch that reads two ways was not refused")
	}
}

// TestModeUpdate: the agent's own switch to auto-edit is switched back to
// default, and the editor is told so in both forms the session uses; a
// refused switch back is logged as failed, and the editor told nothing.
func TestModeUpdate(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		e, dlog, buf := govEngine(t, governing())
		c := &fakeCaller{called: make(chan struct{}, 1), agent: accepts}
		if refuse {
			c.agent = func(string, json.RawMessage) (acp.Answer, error) { return acp.Answer{}, errors.New("gone") }
		}
		g := e.Governor()
		qs := acp.SessionInfo{ID: "s-1", Agent: qwenPeer}
		res := `{"sessionId":"s-1","modes":{"currentModeId":"default","availableModes":[{"id":"default","name":"Default"},{"id":"auto-edit","name":"Auto Edit"}]},"configOptions":[{"id":"mode","category":"mode","currentValue":"default","options":[{"value":"default"},{"value":"auto-edit"}]}]}`
		if _, rerr := g.SessionStart(context.Background(), &acp.SessionStart{Method: acp.MethodSessionNew, Result: json.RawMessage(res), Session: qs}, c); rerr != nil {
			t.Fatal(rerr)
		}
		g.Update(&acp.Update{SessionID: "s-1", Session: qs, Kind: "current_mode_update", ModeID: "plan"}, c)
		g.Update(&acp.Update{SessionID: "s-1", Session: qs, Kind: "current_mode_update", ModeID: "auto-edit"}, c)
		select {
		case <-c.called:
		case <-time.After(10 * time.Second):
			t.Fatal("no switch back")
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(buf.String(), `"action":"reverse"`) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // the notifications follow the log line
		c.mu.Lock()
		calls, notes := c.calls, c.notes
		c.mu.Unlock()
		if len(calls) != 1 || calls[0] != `session/set_config_option {"configId":"mode","sessionId":"s-1","value":"default"}` {
			t.Errorf("permhost's requests %q (plan asks: only auto-edit is reversed)", calls)
		}
		dlog.Close()
		switch {
		case refuse && (len(notes) != 0 || !strings.Contains(buf.String(), `"outcome":"failed"`)):
			t.Errorf("refused: notes %q, log %s", notes, buf.String())
		case !refuse && (len(notes) != 2 || !strings.Contains(notes[0], `"current_mode_update","currentModeId":"default"`) ||
			!strings.Contains(notes[1], `"config_option_update","configOptions":[{"id":"mode","category":"mode","currentValue":"default"`)):
			t.Errorf("the editor was told %q", notes)
		case !refuse && !strings.Contains(buf.String(), `"outcome":"reversed"`):
			t.Errorf("log %s", buf.String())
		}
	}
}

// TestUnasked: codex-acp's exec (in_progress before its request) is not
// reported; Gemini's unasked rm (completed) and a call that ran and failed
// are, once each; a call that failed before running is not; only the first
// is warned about; with modes and fs pass nothing is.
func TestUnasked(t *testing.T) {
	e, dlog, buf := govEngine(t, governing())
	g := e.Governor()
	s := acp.SessionInfo{ID: "s-1", Agent: qwenPeer, Mode: "default"}
	up := func(id, kind, status string, asked bool) {
		g.Update(&acp.Update{SessionID: "s-1", Session: s, Kind: "tool_call_update", ToolCallID: id, ToolKind: kind, Status: status, Asked: asked,
			ToolCall: json.RawMessage(`{"toolCallId":"` + id + `","title":"` + id + `","rawInput":{"command":"x"}}`)}, nil)
	}
	up("codex", abi.KindExecute, "in_progress", false)
	up("codex", abi.KindExecute, "completed", true)
	up("rm", abi.KindExecute, "in_progress", false)
	up("rm", abi.KindExecute, "completed", false)
	up("rm", abi.KindExecute, "completed", false) // a repeated update
	up("read", abi.KindRead, "completed", false)
	up("never-ran", abi.KindEdit, "failed", false)
	up("ran-failed", abi.KindEdit, "in_progress", false)
	up("ran-failed", abi.KindEdit, "failed", false)
	// History a session/load replays ran before permhost.
	g.Update(&acp.Update{SessionID: "s-1", Session: s, Kind: "tool_call", ToolCallID: "history", ToolKind: abi.KindExecute, Status: "completed", Loading: true}, nil)
	dlog.Close()
	log := buf.String()
	if n := strings.Count(log, `"unasked":true`); n != 2 || !strings.Contains(log, `"id":"rm","title":"rm","kind":"execute","status":"completed"`) ||
		!strings.Contains(log, `"id":"ran-failed","title":"ran-failed","kind":"edit","status":"failed"`) || !strings.Contains(log, `"decidedBy":"agent"`) {
		t.Errorf("%d unasked entries:\n%s", n, log)
	}

	e, dlog, buf = govEngine(t, config.Session{Modes: config.ModesPass, FS: config.FSPass})
	e.Governor().Update(&acp.Update{SessionID: "s-1", Session: s, Kind: "tool_call", ToolCallID: "x", ToolKind: abi.KindExecute, Status: "completed"}, nil)
	dlog.Close()
	if buf.String() != "" {
		t.Errorf("ungoverned, logged %s", buf.String())
	}
}

func TestReadApprovalAnswer(t *testing.T) {
	a := approval{persist: []choice{{"once", "Allow once"}, {"session", "s"}, {"always", "a"}}}
	shown := []abi.Option{{OptionID: "once", Kind: abi.OptionAllowOnce}, {OptionID: "decline", Kind: abi.OptionRejectOnce}}
	for _, tc := range []struct {
		result, action, option, out string
	}{
		{`{"action":"accept","content":{"persist":"once"},"_meta":{"x":1}}`, "accept", "once", `{"action":"accept","content":{"persist":"once"}}`},
		{`{"action":"accept"}`, "accept", "once", `{"action":"accept","content":{}}`},
		{`{"action":"decline","content":null}`, "decline", "", `{"action":"decline"}`},
		{`{"action":"cancel"}`, "cancel", "", `{"action":"cancel"}`},
		{`{"action":"accept","content":{"persist":"always"}}`, "", "", ""},     // not shown
		{`{"action":"accept","content":{"persist":"once","x":1}}`, "", "", ""}, // a field not asked for
		{`{"action":"accept","content":{"persist":"once","Persist":"always"}}`, "", "", ""},
		{`{"action":"accept","action":"decline"}`, "", "", ""},
		{`{"Action":"accept"}`, "", "", ""},
		{`{"action":"allow"}`, "", "", ""},
		{`{"action":"accept","content":{"persist":"once"},"extra":1}`, "", "", ""},
	} {
		action, option, out, ok := readApprovalAnswer(json.RawMessage(tc.result), a, shown)
		if ok != (tc.action != "") || action != tc.action || option != tc.option || string(out) != tc.out {
			t.Errorf("%s: %q %q %s %v, want %q %q %s", tc.result, action, option, out, ok, tc.action, tc.option, tc.out)
		}
	}
}

func TestReadFSCall(t *testing.T) {
	for _, tc := range []struct {
		method, params, want, err string
	}{
		{acp.MethodReadTextFile, `{"sessionId":"s","path":"/p/../p/.env","line":3}`, `path /p/../p/.env`, ""}, // as asked: resolved later
		{acp.MethodReadTextFile, `{"sessionId":"s","path":"rel/x"}`, "", "no absolute path"},
		{acp.MethodWriteTextFile, `{"sessionId":"s","path":"/p/a"}`, "", "no content"},
		{acp.MethodTerminalCreate, `{"sessionId":"s","command":"ls","args":["-la","my file","it's"],"env":[{"name":"A","value":"x y"}],"cwd":"/p"}`,
			`command A='x y' ls -la 'my file' 'it'\''s'`, ""},
		{acp.MethodTerminalCreate, `{"sessionId":"s","command":"ls","env":[{"name":"A;rm","value":""}]}`, "", "environment variable"},
		{acp.MethodTerminalCreate, `{"sessionId":"s","command":"ls","cwd":"sub"}`, "", "not absolute"},
	} {
		c, err := readFSCall(&acp.AgentRequest{Method: tc.method, Params: json.RawMessage(tc.params)})
		got := ""
		if c.path != "" {
			got = "path " + c.path
		} else if c.command != "" {
			got = "command " + c.command
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.params, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.params, got, err, tc.want)
		}
	}
	if _, err := readFSCall(&acp.AgentRequest{Method: acp.MethodReadTextFile, Suspicious: "duplicate key"}); err == nil {
		t.Error("a request that reads two ways was read")
	}
}

// TestNarrowedElicitation: with allow_always permhost the editor's form
// keeps only the one-time persist choice, everything else as sent.
func TestNarrowedElicitation(t *testing.T) {
	params := `{"sessionId":"s","message":"m","mode":"form","requestedSchema":{"type":"object","properties":{"persist":{"type":"string","oneOf":[{"const":"once","title":"Allow once"},{"const":"session","title":"S"}],"default":"session"}},"required":["persist"]},"_meta":{"codex_approval_kind":"mcp_tool_call"}}`
	a, err := readApproval(&acp.AgentRequest{Params: json.RawMessage(params)})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.options) != 3 || a.options[1].Kind != abi.OptionAllowAlways {
		t.Fatalf("options %+v", a.options)
	}
	out, err := narrowedElicitation(json.RawMessage(params), a, []abi.Option{{OptionID: "once"}, {OptionID: "decline"}})
	want := `{"sessionId":"s","message":"m","mode":"form","requestedSchema":{"type":"object","properties":{"persist":{"type":"string","oneOf":[{"const":"once","title":"Allow once"}],"default":"once"}},"required":["persist"]},"_meta":{"codex_approval_kind":"mcp_tool_call"}}`
	if err != nil || string(out) != want {
		t.Errorf("narrowed\n got %s (%v)\nwant %s", out, err, want)
	}
	if out, err := narrowedElicitation(json.RawMessage(params), a, []abi.Option{{OptionID: "once"}, {OptionID: "session"}}); out != nil || err != nil {
		t.Errorf("nothing to narrow: %s %v", out, err)
	}
}

// seeing is a chain member that records what it is asked and decides d.
type seeing struct {
	mu   sync.Mutex
	seen []abi.Request
	d    abi.Decision
}

func (p *seeing) Call(_ context.Context, req abi.Request) host.Result {
	p.mu.Lock()
	p.seen = append(p.seen, req)
	p.mu.Unlock()
	return host.Result{Decision: p.d}
}

// askingClient is an acp.Client that records whether the request was
// forwarded, and answers it.
type askingClient struct{ asked int }

func (c *askingClient) Ask(ctx context.Context, params json.RawMessage) (acp.Answer, error) {
	c.asked++
	return acp.Answer{Line: []byte(`{"jsonrpc":"2.0","id":7,"result":null}`)}, nil
}
func (c *askingClient) Notify(string, json.RawMessage) error { return nil }

// TestFSRequests: a terminal/create reaches the plugins as the shell
// command it runs (family shell, its environment as assignments, its cwd);
// their reject answers the agent with an error naming them and the editor
// never sees it. A write the plugins allow is forwarded; one the session's
// permission request for the running call allowed is forwarded without
// asking them.
func TestFSRequests(t *testing.T) {
	p := &seeing{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no commands"}}
	buf := &acptest.SyncBuffer{}
	dlog := NewDecisionLog(buf, nil)
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: governing()}
	e, err := New(context.Background(), Options{Config: cfg, Log: dlog, Home: "/home/dev", Grants: t.TempDir() + "/g.json",
		Members: []host.Member{{Name: "rules", Layer: host.LayerTeam, Policy: host.FailClosed, Plugin: p, Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	g := e.Governor()
	s := acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: acp.Peer{Name: "gemini-cli", Version: "0.61.0"}}
	term := &acp.AgentRequest{ID: json.RawMessage(`7`), Method: acp.MethodTerminalCreate, SessionID: "s-1", Session: s,
		Params: json.RawMessage(`{"sessionId":"s-1","command":"rm","args":["-rf","build"],"env":[{"name":"PATH","value":"/evil"}],"cwd":"/p/sub"}`)}
	if !g.Intercepts(term) {
		t.Fatal("terminal/create not taken")
	}
	c := &askingClient{}
	r, err := g.AgentRequest(context.Background(), term, c, &fakeCaller{})
	if err != nil || r.Error == nil || r.Error.Code != acp.CodePolicyRefused || !strings.Contains(r.Error.Message, "refused by rules: no commands") || c.asked != 0 {
		t.Fatalf("reply %+v %v, asked %d", r.Error, err, c.asked)
	}
	req := p.seen[0]
	if req.Action == nil || req.Action.Family != abi.FamilyShell || req.Action.Command != "PATH=/evil rm -rf build" || req.Action.Cwd != "/p/sub" ||
		req.Session.Agent.Profile != "gemini-cli" || req.Shell == nil || len(req.Shell.Commands) != 1 || req.Options[0].OptionID != "allow" {
		t.Fatalf("the plugin saw %+v / %+v", req.Action, req.Shell)
	}

	p.d = abi.Decision{Outcome: abi.OutcomeAllow}
	write := &acp.AgentRequest{ID: json.RawMessage(`7`), Method: acp.MethodWriteTextFile, SessionID: "s-1", Session: s,
		Params: json.RawMessage(`{"sessionId":"s-1","path":"/p/a.txt","content":"hi"}`)}
	if r, err := g.AgentRequest(context.Background(), write, c, &fakeCaller{}); err != nil || r.Line == nil || c.asked != 1 {
		t.Fatalf("an allowed write: %+v %v, asked %d", r, err, c.asked)
	}
	if w := p.seen[1]; w.Action.Family != abi.FamilyEdit || len(w.Paths) == 0 || w.Paths[0].Path != "/p/a.txt" || w.Paths[0].Access != abi.AccessWrite {
		t.Errorf("the plugin saw the write as %+v %+v", w.Action, w.Paths)
	}

	// The session's own permission request allowed the call writing b.txt.
	g.(*governor).allow("s-1", "call-1", abi.Request{Paths: []abi.Path{{Path: "/p/b.txt", Resolved: "/p/b.txt", Access: abi.AccessWrite}}}, "d-allowed")
	p.d = abi.Decision{Outcome: abi.OutcomeReject}
	write.Params = json.RawMessage(`{"sessionId":"s-1","path":"/p/b.txt","content":"hi"}`)
	if r, err := g.AgentRequest(context.Background(), write, c, &fakeCaller{}); err != nil || r.Line == nil || c.asked != 2 || len(p.seen) != 2 {
		t.Fatalf("the allowed call's write: %+v %v, asked %d, plugins asked %d times", r, err, c.asked, len(p.seen))
	}
	// Once the call has finished, its allowance is gone.
	g.Update(&acp.Update{SessionID: "s-1", Session: s, Kind: "tool_call_update", ToolCallID: "call-1", Status: "completed", ToolKind: abi.KindEdit, Asked: true}, nil)
	if r, _ := g.AgentRequest(context.Background(), write, c, &fakeCaller{}); r.Error == nil {
		t.Fatal("a write after the call finished was not decided again")
	}
	dlog.Close()
	if !strings.Contains(buf.String(), `"decidedBy":"allowed:d-allowed"`) {
		t.Errorf("log %s", buf.String())
	}
}
