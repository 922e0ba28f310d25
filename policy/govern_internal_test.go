package policy

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/shell"
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

	holds    []string
	released chan struct{} // gets one value per release, when set
	cancels  []string      // the sessions CancelSession was called for
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

func (c *fakeCaller) CancelSession(sessionID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancels = append(c.cancels, sessionID)
	return nil
}

// Hold records the holds and their releases: "hold s-1", "release s-1"
// or "refuse s-1: MESSAGE".
func (c *fakeCaller) Hold(sessionID string) func(*acp.RPCError) {
	c.mu.Lock()
	c.holds = append(c.holds, "hold "+sessionID)
	c.mu.Unlock()
	return func(refuse *acp.RPCError) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if refuse != nil {
			c.holds = append(c.holds, "refuse "+sessionID+": "+refuse.Message)
		} else {
			c.holds = append(c.holds, "release "+sessionID)
		}
		if c.released != nil {
			c.released <- struct{}{}
		}
	}
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
		{name: "a deciding mode offering nothing", session: governing(), peer: claude101,
			result: `{"sessionId":"s-1","modes":{"currentModeId":"bypassPermissions","availableModes":[]}}`, agent: accepts,
			want: `{"sessionId":"s-1","modes":{"currentModeId":"default","availableModes":[]}}`,
			call: `session/set_mode {"modeId":"default","sessionId":"s-1"}`, logged: `"action":"switch"`},
		{name: "a mode id that is not a string", session: governing(), peer: claude101,
			result:  `{"sessionId":"s-1","modes":{"currentModeId":{"id":"auto"},"availableModes":[{"id":"default"}]}}`,
			refused: "cannot be read", logged: `"action":"ungovernable"`},
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
		{"mode option not a string", acp.MethodSessionSetConfigOption, `{"sessionId":"s-1","configId":"mode","value":["auto"]}`, governing(), claude101, true},
		{"mode option absent", acp.MethodSessionSetConfigOption, `{"sessionId":"s-1","configId":"mode"}`, governing(), claude101, true},
		{"option id not a string", acp.MethodSessionSetConfigOption, `{"sessionId":"s-1","configId":{"id":"mode"},"value":"auto"}`, governing(), claude101, true},
		{"set_mode not a string", acp.MethodSessionSetMode, `{"sessionId":"s-1","modeId":7}`, governing(), claude101, true},
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
		c.released = make(chan struct{}, 1)
		g.Update(&acp.Update{SessionID: "s-1", Session: qs, Kind: "current_mode_update", ModeID: "plan"}, c)
		g.Update(&acp.Update{SessionID: "s-1", Session: qs, Kind: "current_mode_update", ModeID: "auto-edit"}, c)
		// The editor's messages for the session are released last, after
		// the log entry and the notifications.
		select {
		case <-c.released:
		case <-time.After(time.Minute): // a hang guard, not a margin
			t.Fatal("the session was never released")
		}
		c.mu.Lock()
		calls, notes, holds := c.calls, c.notes, c.holds
		c.mu.Unlock()
		if len(holds) != 2 || holds[0] != "hold s-1" || (refuse != strings.HasPrefix(holds[1], "refuse s-1: permhost: the agent switched the session to mode auto-edit")) ||
			(!refuse && holds[1] != "release s-1") {
			t.Errorf("holds %q", holds)
		}
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

// qwenDefault is a Qwen Code session/new result in default, which offers
// auto-edit as a mode and as a config option.
const qwenDefault = `{"sessionId":"s-1","modes":{"currentModeId":"default","availableModes":[{"id":"default","name":"Default"},{"id":"auto-edit","name":"Auto Edit"}]},"configOptions":[{"id":"mode","category":"mode","currentValue":"default","options":[{"value":"default"},{"value":"auto-edit"}]}]}`

// TestModeUpdateRace: the agent switches itself back into auto-edit while
// permhost's switch back is in flight. The success answering that switch
// does not confirm it: permhost switches again, and holds the editor's
// messages until a switch is answered with nothing deciding reported
// meanwhile; an agent that keeps switching back gets its session refused.
// Once switched back, the mode permhost believes is the one the agent
// confirmed: the editor's refused switch is logged from it.
func TestModeUpdateRace(t *testing.T) {
	for _, tc := range []struct {
		name      string
		switches  int // how many of permhost's switches the agent undoes
		wantCalls int
		refused   bool
	}{
		{"undone once", 1, 2, false},
		{"undone every time", 100, maxSwitchTries, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, dlog, buf := govEngine(t, governing())
			g := e.Governor()
			qs := acp.SessionInfo{ID: "s-1", Agent: qwenPeer}
			c := &fakeCaller{released: make(chan struct{}, 1)}
			undone := 0
			c.agent = func(string, json.RawMessage) (acp.Answer, error) {
				if undone < tc.switches {
					// The agent's own update reaches permhost before the
					// answer to permhost's switch.
					undone++
					g.Update(&acp.Update{SessionID: "s-1", Session: qs, Kind: "current_mode_update", ModeID: "auto-edit"}, c)
				}
				return acp.Answer{Result: json.RawMessage(`{}`)}, nil
			}
			if _, rerr := g.SessionStart(context.Background(), &acp.SessionStart{Method: acp.MethodSessionNew, Result: json.RawMessage(qwenDefault), Session: qs}, c); rerr != nil {
				t.Fatal(rerr)
			}
			g.Update(&acp.Update{SessionID: "s-1", Session: qs, Kind: "current_mode_update", ModeID: "auto-edit"}, c)
			select {
			case <-c.released:
			case <-time.After(time.Minute): // a hang guard, not a margin
				t.Fatal("the session was never released")
			}
			c.mu.Lock()
			calls, holds := c.calls, c.holds
			c.mu.Unlock()
			if len(calls) != tc.wantCalls {
				t.Errorf("permhost's switches %q, want %d", calls, tc.wantCalls)
			}
			if len(holds) != 2 || holds[0] != "hold s-1" || tc.refused != strings.HasPrefix(holds[1], "refuse s-1:") {
				t.Fatalf("holds %q", holds)
			}
			if tc.refused {
				return
			}
			qs.Mode = "auto-edit" // the proxy's state may lag: the governor's own record counts
			if rerr := g.ClientRequest(&acp.ClientRequest{Method: acp.MethodSessionSetMode, Params: json.RawMessage(`{"sessionId":"s-1","modeId":"yolo"}`), Session: qs}); rerr == nil {
				t.Fatal("the editor's switch to yolo was not refused")
			}
			dlog.Close()
			if !strings.Contains(buf.String(), `"action":"refuse","trigger":"session/set_mode","from":"default","to":"yolo"`) {
				t.Errorf("the refusal is not logged from the mode the agent confirmed:\n%s", buf.String())
			}
		})
	}
}

// TestSessionsKept: a session that started is never forgotten: past the
// bound a new session is refused, sessions seen only in updates make way,
// and a switch of the first session's mode option (not named "mode") is
// still known for what it is.
func TestSessionsKept(t *testing.T) {
	e, _, _ := govEngine(t, governing())
	g := e.Governor()
	e.gov.max = 2
	start := func(sid, result string) *acp.RPCError {
		_, rerr := g.SessionStart(context.Background(), &acp.SessionStart{Method: acp.MethodSessionNew, Result: json.RawMessage(result),
			Session: acp.SessionInfo{ID: sid, Agent: claude101}}, &fakeCaller{agent: accepts})
		return rerr
	}
	perm := `{"sessionId":"s-1","configOptions":[{"id":"perm","category":"mode","currentValue":"default","options":[{"value":"default"},{"value":"bypassPermissions"}]}]}`
	if rerr := start("s-1", perm); rerr != nil {
		t.Fatal(rerr)
	}
	g.Update(&acp.Update{SessionID: "seen-only", Session: acp.SessionInfo{ID: "seen-only", Agent: claude101}, Kind: "tool_call", ToolCallID: "t", ToolKind: abi.KindRead, Status: "pending"}, nil)
	if rerr := start("s-2", strings.Replace(perm, "s-1", "s-2", 1)); rerr != nil {
		t.Fatalf("a session seen only in updates did not make way: %v", rerr.Message)
	}
	rerr := start("s-3", strings.Replace(perm, "s-1", "s-3", 1))
	if rerr == nil || !strings.Contains(rerr.Message, "at most 2 sessions") {
		t.Fatalf("the third session: %+v", rerr)
	}
	for i := range 10 {
		id := "u-" + string(rune('a'+i))
		g.Update(&acp.Update{SessionID: id, Session: acp.SessionInfo{ID: id, Agent: claude101}, Kind: "tool_call", ToolCallID: "t", ToolKind: abi.KindRead, Status: "pending"}, nil)
	}
	if rerr := g.ClientRequest(&acp.ClientRequest{Method: acp.MethodSessionSetConfigOption,
		Params: json.RawMessage(`{"sessionId":"s-1","configId":"perm","value":"bypassPermissions"}`), Session: acp.SessionInfo{ID: "s-1", Agent: claude101}}); rerr == nil {
		t.Fatal("the first session's switch to bypassPermissions was forwarded")
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
	// The id again, for a new call: it ran unasked too.
	g.Update(&acp.Update{SessionID: "s-1", Session: s, Kind: "tool_call", ToolCallID: "rm", ToolKind: abi.KindExecute, Status: "completed",
		ToolCall: json.RawMessage(`{"toolCallId":"rm","title":"rm again"}`)}, nil)
	// claude's Write, filed as kind other: an edit by the profile's reading.
	cs := acp.SessionInfo{ID: "s-1", Agent: claude101, Cwd: "/p"}
	g.Update(&acp.Update{SessionID: "s-1", Session: cs, Kind: "tool_call", ToolCallID: "w", ToolKind: abi.KindOther, Status: "completed",
		ToolCall: json.RawMessage(`{"toolCallId":"w","title":"Write","kind":"other","rawInput":{"file_path":"/p/a","content":"x"},"_meta":{"claudeCode":{"toolName":"Write"}}}`)}, nil)
	g.Update(&acp.Update{SessionID: "s-1", Session: cs, Kind: "tool_call", ToolCallID: "r", ToolKind: abi.KindOther, Status: "completed",
		ToolCall: json.RawMessage(`{"toolCallId":"r","title":"Read","kind":"other","rawInput":{"file_path":"/p/a"},"_meta":{"claudeCode":{"toolName":"Read"}}}`)}, nil)
	// History a session/load replays ran before permhost.
	g.Update(&acp.Update{SessionID: "s-1", Session: s, Kind: "tool_call", ToolCallID: "history", ToolKind: abi.KindExecute, Status: "completed", Loading: true}, nil)
	dlog.Close()
	log := buf.String()
	if n := strings.Count(log, `"unasked":true`); n != 4 || !strings.Contains(log, `"id":"rm","title":"rm","kind":"execute","status":"completed"`) ||
		!strings.Contains(log, `"id":"rm","title":"rm again"`) || !strings.Contains(log, `"id":"w","title":"Write","kind":"other"`) ||
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
		{acp.MethodTerminalCreate, `{"sessionId":"s","command":"rm -rf /x"}`, `command rm -rf /x`, ""},
		{acp.MethodTerminalCreate, `{"sessionId":"s","command":" rm -rf /x; ls\n","args":[]}`, `command rm -rf /x; ls`, ""},
		{acp.MethodTerminalCreate, `{"sessionId":"s","command":"rm -rf '/x'","env":[{"name":"A","value":"x y"}]}`, `command A='x y' bash -c 'rm -rf '\''/x'\'''`, ""},
		{acp.MethodTerminalCreate, `{"sessionId":"s","command":"rm -rf /x","args":["y"]}`, `command 'rm -rf /x' y`, ""},
		{acp.MethodTerminalCreate, `{"sessionId":"s","command":" \t"}`, "", "no command"},
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
func (c *askingClient) Deliver(r acp.Response, record func([]byte)) error {
	record([]byte(`{"jsonrpc":"2.0","id":7,"result":` + string(r.Result) + `}`))
	return nil
}

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

// fsCallOf reads a file or terminal request's params as the governor does.
func fsCallOf(t *testing.T, method, params string) fsCall {
	t.Helper()
	c, err := readFSCall(&acp.AgentRequest{Method: method, Params: json.RawMessage(params)})
	if err != nil {
		t.Fatalf("%s %s: %v", method, params, err)
	}
	if c.path != "" {
		c.resolved = filepath.Clean(c.path) // no symlinks under /p: as fspath resolves it
	}
	return c
}

// TestAllowanceCovers: a tool call allowed by its permission request lets
// its own file and terminal requests pass only on every key: a read of a
// file it reads, a write of a file it writes, a terminal running exactly
// its command in its directory.
func TestAllowanceCovers(t *testing.T) {
	const cwd = "/p"
	readReq := abi.Request{Action: &abi.Action{Family: abi.FamilyRead, Paths: []string{"/p/notes.txt"}},
		Paths: []abi.Path{{Path: "/p/notes.txt", Resolved: "/p/notes.txt", Access: abi.AccessRead}}}
	edit := abi.Request{Action: &abi.Action{Family: abi.FamilyEdit, Paths: []string{"/p/notes.txt"}},
		Paths: []abi.Path{{Path: "/p/./notes.txt", Resolved: "/p/notes.txt", Access: abi.AccessWrite}}}
	shellReq := func(script, dir string) abi.Request {
		sh, paths := shell.AnalyzeScript(script, dir, "/home/dev")
		return abi.Request{Action: &abi.Action{Family: abi.FamilyShell, Command: script, Cwd: dir}, Shell: sh, Paths: paths}
	}
	read := fsCallOf(t, acp.MethodReadTextFile, `{"path":"/p/notes.txt"}`)
	write := fsCallOf(t, acp.MethodWriteTextFile, `{"path":"/p/notes.txt","content":"x"}`)
	term := func(params string) fsCall { return fsCallOf(t, acp.MethodTerminalCreate, params) }
	tests := []struct {
		name    string
		allowed abi.Request
		call    fsCall
		want    bool
	}{
		{"a read of the file a read names", readReq, read, true},
		{"a write of the file a read names", readReq, write, false},
		{"a write of the file an edit names", edit, write, true},
		{"a read of the file an edit names", edit, read, false},
		{"a write of another file", edit, fsCallOf(t, acp.MethodWriteTextFile, `{"path":"/p/other.txt","content":"x"}`), false},
		{"a terminal for a read", readReq, term(`{"command":"cat","args":["/p/notes.txt"],"cwd":"/p"}`), false},
		{"its command in its directory", shellReq("make clean", "/p"), term(`{"command":"make","args":["clean"],"cwd":"/p"}`), true},
		{"its command as a command line", shellReq("make clean", "/p"), term(`{"command":"make clean","cwd":"/p"}`), true},
		{"its command, no cwd: the session's", shellReq("make clean", "/p"), term(`{"command":"make","args":["clean"]}`), true},
		{"its command in another directory", shellReq("make clean", "/p"), term(`{"command":"make","args":["clean"],"cwd":"/q"}`), false},
		{"its command in a directory below", shellReq("make clean", "/p"), term(`{"command":"make","args":["clean"],"cwd":"/p/sub"}`), false},
		{"its command, no cwd, run elsewhere", shellReq("make clean", "/p/sub"), term(`{"command":"make","args":["clean"]}`), false},
		{"another command", shellReq("make clean", "/p"), term(`{"command":"make","args":["install"],"cwd":"/p"}`), false},
		{"its command and another", shellReq("make clean", "/p"), term(`{"command":"make clean; rm -rf /","cwd":"/p"}`), false},
		{"its command with an environment", shellReq("make clean", "/p"), term(`{"command":"make","args":["clean"],"env":[{"name":"MAKEFLAGS","value":"-e"}],"cwd":"/p"}`), false},
		{"a write of a file its command writes", shellReq("make > /p/notes.txt", "/p"), write, false},
		{"a read of a file its command reads", shellReq("cat /p/notes.txt", "/p"), read, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allowanceOf(tt.allowed, "d-1").covers(tt.call, cwd); got != tt.want {
				t.Errorf("covers %+v = %v, want %v", tt.call, got, tt.want)
			}
		})
	}
	t.Run("no session cwd", func(t *testing.T) {
		if allowanceOf(shellReq("make clean", "/p"), "d-1").covers(term(`{"command":"make clean"}`), "") {
			t.Error("a terminal with no cwd in a session with none matched")
		}
	})
}

// rules is a chain member deciding by a function of the request, and
// recording the requests of permhost's own it is asked about.
type rules struct {
	mu     sync.Mutex
	fsSeen []abi.Request
	decide func(abi.Request) abi.Decision
}

func (p *rules) Call(_ context.Context, req abi.Request) host.Result {
	p.mu.Lock()
	if strings.HasPrefix(req.ToolCall.ID, "permhost-") {
		p.fsSeen = append(p.fsSeen, req)
	}
	p.mu.Unlock()
	return host.Result{Decision: p.decide(req)}
}

// TestFSAllowanceKeys: through the proxy's handler and the governor, the
// agent's permission requests allowed (a read of notes.txt, make clean in
// /p) let only their own requests pass unasked: the read of notes.txt and
// make clean in /p; a write of notes.txt and make clean in /p/sub go to
// the plugins, which refuse every request of permhost's own.
func TestFSAllowanceKeys(t *testing.T) {
	p := &rules{decide: func(req abi.Request) abi.Decision {
		if strings.HasPrefix(req.ToolCall.ID, "permhost-") {
			return abi.Decision{Outcome: abi.OutcomeReject, Reason: "asked"}
		}
		return abi.Decision{Outcome: abi.OutcomeAllow}
	}}
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
	s := acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: unknown}
	ask := func(id, toolCall string) {
		t.Helper()
		params := `{"sessionId":"s-1","toolCall":` + toolCall + `,"options":[{"optionId":"once","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}`
		pr := &acp.PermissionRequest{ID: json.RawMessage(`1`), Params: json.RawMessage(params), SessionID: "s-1", ToolCallID: id,
			ToolCall: json.RawMessage(toolCall), Options: []acp.PermissionOption{{OptionID: "once", Name: "Allow", Kind: abi.OptionAllowOnce},
				{OptionID: "no", Name: "Reject", Kind: abi.OptionRejectOnce}}, Session: s}
		if _, err := e.Handler().RequestPermission(context.Background(), pr, &askingClient{}); err != nil {
			t.Fatal(err)
		}
	}
	ask("call-read", `{"toolCallId":"call-read","title":"Read notes.txt","kind":"read","status":"pending","locations":[{"path":"/p/notes.txt"}],"rawInput":{"path":"/p/notes.txt"}}`)
	ask("call-make", `{"toolCallId":"call-make","title":"make clean","kind":"execute","status":"pending","rawInput":{"command":"make clean","cwd":"/p"}}`)

	for _, tt := range []struct {
		method, params string
		forwarded      bool
	}{
		{acp.MethodReadTextFile, `{"sessionId":"s-1","path":"/p/notes.txt"}`, true},
		{acp.MethodWriteTextFile, `{"sessionId":"s-1","path":"/p/notes.txt","content":"x"}`, false},
		{acp.MethodTerminalCreate, `{"sessionId":"s-1","command":"make","args":["clean"],"cwd":"/p"}`, true},
		{acp.MethodTerminalCreate, `{"sessionId":"s-1","command":"make","args":["clean"]}`, true},
		{acp.MethodTerminalCreate, `{"sessionId":"s-1","command":"make","args":["clean"],"cwd":"/p/sub"}`, false},
		{acp.MethodTerminalCreate, `{"sessionId":"s-1","command":"make clean && rm -rf /","cwd":"/p"}`, false},
	} {
		before := len(p.fsSeen)
		c := &askingClient{}
		r, err := g.AgentRequest(context.Background(), &acp.AgentRequest{ID: json.RawMessage(`7`), Method: tt.method, SessionID: "s-1", Session: s,
			Params: json.RawMessage(tt.params)}, c, &fakeCaller{})
		if err != nil {
			t.Fatal(err)
		}
		if forwarded := r.Line != nil && c.asked == 1; forwarded != tt.forwarded {
			t.Errorf("%s %s: forwarded %v (%+v), want %v", tt.method, tt.params, forwarded, r.Error, tt.forwarded)
		}
		if pluginsAsked := len(p.fsSeen) > before; pluginsAsked == tt.forwarded {
			t.Errorf("%s %s: the plugins were asked: %v", tt.method, tt.params, pluginsAsked)
		}
	}
	dlog.Close()
	if n := strings.Count(buf.String(), `"decidedBy":"allowed:d-`); n != 3 {
		t.Errorf("%d requests passed on an allowance, want 3:\n%s", n, buf.String())
	}
}

// TestTerminalCommandLine: a terminal/create with a command and no args
// reaches the plugins as the command line it is (rm with its args, every
// command of it, its environment on each); with args, as a program and
// its argv, each word as given.
func TestTerminalCommandLine(t *testing.T) {
	p := &rules{decide: func(req abi.Request) abi.Decision {
		for _, c := range req.Shell.Commands {
			if len(c.Argv) > 0 && c.Argv[0] == "rm" {
				return abi.Decision{Outcome: abi.OutcomeReject, Reason: "no rm"}
			}
		}
		return abi.Decision{Outcome: abi.OutcomeAllow}
	}}
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: governing()}
	e, err := New(context.Background(), Options{Config: cfg, Log: NewDecisionLog(&acptest.SyncBuffer{}, nil), Home: "/home/dev", Grants: t.TempDir() + "/g.json",
		Members: []host.Member{{Name: "rules", Layer: host.LayerTeam, Policy: host.FailClosed, Plugin: p, Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	g := e.Governor()
	s := acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: unknown}
	for _, tt := range []struct {
		params  string
		argv    [][]string
		refused bool
	}{
		{`{"command":"rm -rf /x"}`, [][]string{{"rm", "-rf", "/x"}}, true},
		{`{"command":"  rm -rf /x  ","args":[]}`, [][]string{{"rm", "-rf", "/x"}}, true},
		{`{"command":"make && rm -rf /x"}`, [][]string{{"make"}, {"rm", "-rf", "/x"}}, true},
		{`{"command":"rm -rf /x","env":[{"name":"A","value":"x y"}]}`, [][]string{{"rm", "-rf", "/x"}}, true},
		{`{"command":"ls -la"}`, [][]string{{"ls", "-la"}}, false},
		{`{"command":"rm -rf /x","args":["y"]}`, [][]string{{"rm -rf /x", "y"}}, false},
		{`{"command":"rm","args":["-rf","/x"]}`, [][]string{{"rm", "-rf", "/x"}}, true},
	} {
		before := len(p.fsSeen)
		r, err := g.AgentRequest(context.Background(), &acp.AgentRequest{ID: json.RawMessage(`7`), Method: acp.MethodTerminalCreate, SessionID: "s-1",
			Session: s, Params: json.RawMessage(tt.params)}, &askingClient{}, &fakeCaller{})
		if err != nil {
			t.Fatal(err)
		}
		if (r.Error != nil) != tt.refused {
			t.Errorf("%s: refused %+v, want %v", tt.params, r.Error, tt.refused)
		}
		if len(p.fsSeen) != before+1 {
			t.Fatalf("%s: the plugins were asked %d times", tt.params, len(p.fsSeen)-before)
		}
		req := p.fsSeen[before]
		var argv [][]string
		for _, c := range req.Shell.Commands {
			argv = append(argv, c.Argv)
		}
		if !req.Shell.Parsed || !reflect.DeepEqual(argv, tt.argv) {
			t.Errorf("%s: the plugins saw %q (parsed %v), want %q", tt.params, argv, req.Shell.Parsed, tt.argv)
		}
		if strings.Contains(tt.params, `"env"`) && (len(req.Shell.Commands[0].Assignments) != 1 || req.Shell.Commands[0].Assignments[0] != (abi.Assignment{Name: "A", Value: "x y"})) {
			t.Errorf("%s: assignments %+v", tt.params, req.Shell.Commands[0].Assignments)
		}
	}
}

// failing is a chain member that fails (a trap) on every call.
type failing struct{}

func (failing) Call(context.Context, abi.Request) host.Result {
	return host.Result{Err: &host.Error{Kind: host.KindTrap, Plugin: "broken", Err: errors.New("trap")}}
}

// recordingClient records the params it forwards and answers result.
type recordingClient struct {
	result string
	params []json.RawMessage
}

func (c *recordingClient) Ask(ctx context.Context, params json.RawMessage) (acp.Answer, error) {
	c.params = append(c.params, params)
	return acp.Answer{Line: []byte(`{"jsonrpc":"2.0","id":7,"result":` + c.result + `}`), Result: json.RawMessage(c.result)}, nil
}
func (c *recordingClient) Notify(string, json.RawMessage) error { return nil }
func (c *recordingClient) Deliver(r acp.Response, record func([]byte)) error {
	record([]byte(`{"jsonrpc":"2.0","id":7,"result":` + string(r.Result) + `}`))
	return nil
}

// TestApprovalNarrowed: with the agent's durable choices forwarded
// (allow_always agent), an approval a failed fail-closed plugin or an
// admin's ask leaves to the person offers only the one-time persist
// choice, and an editor answer of "always" (not shown) reaches the agent
// as cancel, never as persist always.
func TestApprovalNarrowed(t *testing.T) {
	const params = `{"sessionId":"s-1","message":"run tool","mode":"form","requestedSchema":{"type":"object","properties":{"persist":{"type":"string","oneOf":[{"const":"once","title":"Once"},{"const":"session","title":"Session"},{"const":"always","title":"Always"}]}}},"_meta":{"codex_approval_kind":"mcp_tool_call"}}`
	for _, tc := range []struct {
		name   string
		member host.Member
	}{
		{"a failed fail-closed plugin", host.Member{Name: "broken", Layer: host.LayerTeam, Policy: host.FailClosed, Plugin: failing{}, Version: "1"}},
		{"an admin's ask", host.Member{Name: "admin", Layer: host.LayerAdmin, Policy: host.FailClosed, Plugin: &seeing{d: abi.Decision{Outcome: abi.OutcomeAsk}}, Version: "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := governing()
			s.AllowAlways = config.AllowAlwaysAgent
			cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: s}
			e, err := New(context.Background(), Options{Config: cfg, Log: NewDecisionLog(&acptest.SyncBuffer{}, nil), Home: "/home/dev",
				Grants: t.TempDir() + "/g.json", Members: []host.Member{tc.member}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(context.Background())
			g := e.Governor()
			r := &acp.AgentRequest{ID: json.RawMessage(`7`), Method: acp.MethodElicitationCreate, SessionID: "s-1", Params: json.RawMessage(params),
				Session: acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: acp.Peer{Name: "codex-acp", Version: "0.16.0"}}}
			if !g.Intercepts(r) {
				t.Fatal("the approval was not taken")
			}
			for _, answer := range []string{`{"action":"accept","content":{"persist":"always"}}`, `{"action":"accept","content":{"persist":"session"}}`} {
				c := &recordingClient{result: answer}
				reply, err := g.AgentRequest(context.Background(), r, c, &fakeCaller{})
				if err != nil || string(reply.Result) != `{"action":"cancel"}` {
					t.Errorf("answer %s reached the agent as %s (%v)", answer, reply.Result, err)
				}
				if len(c.params) != 1 || !strings.Contains(string(c.params[0]), `"oneOf":[{"const":"once","title":"Once"}]`) {
					t.Errorf("the editor was shown %s", c.params)
				}
			}
			c := &recordingClient{result: `{"action":"accept","content":{"persist":"once"}}`}
			if reply, err := g.AgentRequest(context.Background(), r, c, &fakeCaller{}); err != nil || string(reply.Result) != `{"action":"accept","content":{"persist":"once"}}` {
				t.Errorf("once: %s (%v)", reply.Result, err)
			}
		})
	}
}

// promptCaller records the permission requests of permhost's own it
// sends the editor, and answers them with result.
type promptCaller struct {
	fakeCaller
	result string
	asked  []json.RawMessage
}

func (c *promptCaller) Client(_ context.Context, _ string, params json.RawMessage) (acp.Answer, error) {
	c.asked = append(c.asked, params)
	return acp.Answer{Line: []byte(`{"jsonrpc":"2.0","id":"x","result":` + c.result + `}`), Result: json.RawMessage(c.result)}, nil
}

// TestFSPromptNarrowed: a write a failed fail-closed plugin leaves to the
// person is shown with the one-time choices only (no grant of
// permhost's), and a chosen grant that was not shown is refused.
func TestFSPromptNarrowed(t *testing.T) {
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: governing()}
	e, err := New(context.Background(), Options{Config: cfg, Log: NewDecisionLog(&acptest.SyncBuffer{}, nil), Home: "/home/dev",
		Grants: t.TempDir() + "/g.json", Members: []host.Member{{Name: "broken", Layer: host.LayerTeam, Policy: host.FailClosed, Plugin: failing{}, Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	g := e.Governor()
	write := &acp.AgentRequest{ID: json.RawMessage(`7`), Method: acp.MethodWriteTextFile, SessionID: "s-1",
		Session: acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: acp.Peer{Name: "gemini-cli", Version: "0.61.0"}},
		Params:  json.RawMessage(`{"sessionId":"s-1","path":"/p/a.txt","content":"hi"}`)}
	c := &promptCaller{result: `{"outcome":{"outcome":"selected","optionId":"permhost-grant-session"}}`}
	r, err := g.AgentRequest(context.Background(), write, &askingClient{}, c)
	if err != nil || r.Error == nil {
		t.Fatalf("an answer naming a choice not shown: %+v %v", r, err)
	}
	if len(c.asked) != 1 {
		t.Fatalf("asked %d times", len(c.asked))
	}
	var shown struct {
		Options []abi.Option `json:"options"`
	}
	if err := json.Unmarshal(c.asked[0], &shown); err != nil || len(shown.Options) != 2 || shown.Options[0].OptionID != fsAllow || shown.Options[1].OptionID != fsReject {
		t.Errorf("the person was shown %s", c.asked[0])
	}
}

// TestSessionStartRace: the agent reports auto-edit again while permhost's
// switch of a starting session is in flight: the switch's success is not
// taken for the mode, permhost switches again; an agent that keeps doing
// so gets the session refused.
func TestSessionStartRace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		switches int
		calls    int
		refused  bool
	}{
		{"undone once", 1, 2, false},
		{"undone every time", 100, maxSwitchTries, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := govEngine(t, governing())
			g := e.Governor()
			qs := acp.SessionInfo{ID: "s-1", Agent: qwenPeer}
			c := &fakeCaller{}
			undone := 0
			c.agent = func(string, json.RawMessage) (acp.Answer, error) {
				if undone < tc.switches {
					undone++
					g.Update(&acp.Update{SessionID: "s-1", Session: qs, Kind: "current_mode_update", ModeID: "auto-edit"}, c)
				}
				return acp.Answer{Result: json.RawMessage(`{}`)}, nil
			}
			start := strings.ReplaceAll(qwenDefault, `"default","available`, `"auto-edit","available`)
			start = strings.Replace(start, `"currentValue":"default"`, `"currentValue":"auto-edit"`, 1)
			res, rerr := g.SessionStart(context.Background(), &acp.SessionStart{Method: acp.MethodSessionNew, Result: json.RawMessage(start), Session: qs}, c)
			c.mu.Lock()
			calls, holds := len(c.calls), c.holds
			c.mu.Unlock()
			if calls != tc.calls || len(holds) != 0 {
				t.Errorf("%d switches (want %d), holds %q (the proxy holds a start itself)", calls, tc.calls, holds)
			}
			switch {
			case tc.refused && (rerr == nil || !strings.Contains(rerr.Message, "reported mode auto-edit again")):
				t.Errorf("refusal %+v", rerr)
			case !tc.refused && (rerr != nil || !strings.Contains(string(res), `"currentModeId":"default"`)):
				t.Errorf("result %s, refusal %+v", res, rerr)
			}
		})
	}
}
