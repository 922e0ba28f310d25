package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The Bash request of claude-agent-acp 0.23.1 (testdata/transcripts/claude-allow.jsonl, seq 11).
const claudeBash = `{"options":[{"kind":"allow_always","name":"Always Allow","optionId":"allow_always"},{"kind":"allow_once","name":"Allow","optionId":"allow"},{"kind":"reject_once","name":"Reject","optionId":"reject"}],"sessionId":"2a178532-7f3e-4eef-ad46-ab41b93044de","toolCall":{"toolCallId":"toolu_fake_0001","rawInput":{"command":"rm -rf build","description":"Remove build dir"},"title":"rm -rf build","kind":"execute","content":[{"type":"content","content":{"type":"text","text":"Remove build dir"}}]}}`

// ExitPlanMode of claude-agent-acp: every option is durable.
const exitPlanMode = `{"options":[{"kind":"allow_always","name":"Yes, and auto-accept edits","optionId":"acceptEdits"},{"kind":"allow_once","name":"Yes, and manually approve edits","optionId":"default"},{"kind":"reject_once","name":"No, keep planning","optionId":"plan"}],"sessionId":"s1","toolCall":{"toolCallId":"toolu_plan","rawInput":{"plan":"1. write"},"title":"Ready to code?","kind":"switch_mode"}}`

func permissionRequest(t testing.TB, params string) *acp.PermissionRequest {
	t.Helper()
	var p struct {
		SessionID string                 `json:"sessionId"`
		ToolCall  json.RawMessage        `json:"toolCall"`
		Options   []acp.PermissionOption `json:"options"`
		Meta      json.RawMessage        `json:"_meta"`
	}
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	line := `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":` + params + `}`
	return &acp.PermissionRequest{
		ID: json.RawMessage("0"), Line: []byte(line), Params: json.RawMessage(params),
		SessionID: p.SessionID, ToolCall: p.ToolCall, Options: p.Options, Meta: p.Meta,
		Session: acp.SessionInfo{ID: p.SessionID, Cwd: "/home/dev/project", Mode: "default",
			Agent: acp.Peer{Name: "@zed-industries/claude-agent-acp", Version: "0.23.1"}},
	}
}

// fakeClient is the editor: it records what it was asked and told.
type fakeClient struct {
	mu       sync.Mutex
	asked    []json.RawMessage
	notified []json.RawMessage
	answer   func(ctx context.Context, params json.RawMessage) (acp.Answer, error)
}

func (c *fakeClient) Ask(ctx context.Context, params json.RawMessage) (acp.Answer, error) {
	c.mu.Lock()
	c.asked = append(c.asked, params)
	c.mu.Unlock()
	if c.answer == nil {
		return acp.Answer{}, errors.New("no person in this test")
	}
	return c.answer(ctx, params)
}

// Deliver is the proxy's: the agent gets r (deliver checked it).
func (c *fakeClient) Deliver(r acp.Response, record func([]byte)) error {
	record([]byte(`{"jsonrpc":"2.0","id":7,"result":` + string(r.Result) + `}`))
	return nil
}

func (c *fakeClient) Notify(method string, params json.RawMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if method != acp.MethodSessionUpdate {
		return errors.New("unexpected method " + method)
	}
	c.notified = append(c.notified, params)
	return nil
}

func selects(id string) func(context.Context, json.RawMessage) (acp.Answer, error) {
	return func(context.Context, json.RawMessage) (acp.Answer, error) {
		res := `{"outcome":{"outcome":"selected","optionId":"` + id + `"}}`
		return acp.Answer{Line: []byte(`{"jsonrpc":"2.0","id":0,"result":` + res + `}`), Result: json.RawMessage(res)}, nil
	}
}

// plugin is a scripted chain member.
type plugin struct {
	d     abi.Decision
	err   error
	delay time.Duration
	seen  chan abi.Request
}

func (p *plugin) Call(ctx context.Context, req abi.Request) host.Result {
	if p.seen != nil {
		p.seen <- req
	}
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-ctx.Done():
			return host.Result{Err: &host.Error{Kind: host.KindCancelled, Plugin: "p", Err: ctx.Err()}}
		}
	}
	return host.Result{Decision: p.d, Err: p.err, Duration: 1500 * time.Microsecond}
}

func member(name string, p *plugin, opts ...string) host.Member {
	m := host.Member{Name: name, Layer: host.LayerUser, Policy: host.FailClosed, Plugin: p, Version: "1.0.0", SHA256: strings.Repeat("ab", 32)}
	if len(opts) > 0 {
		m.Policy = host.FailurePolicy(opts[0])
	}
	if len(opts) > 1 {
		m.Layer = opts[1]
	}
	return m
}

// logBuffer collects decision-log lines.
type logBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}
func (b *logBuffer) Close() error { return nil }

type setup struct {
	engine *policy.Engine
	log    *logBuffer
	dlog   *policy.DecisionLog
}

func newEngine(t *testing.T, cfg *config.Config, members ...host.Member) *setup {
	t.Helper()
	if cfg == nil {
		cfg = &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject}
	}
	buf := &logBuffer{}
	dlog := policy.NewDecisionLog(buf, nil)
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, Members: members, Log: dlog, Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()); dlog.Close() })
	return &setup{engine: e, log: buf, dlog: dlog}
}

// entries flushes and returns the decision log.
func (s *setup) entries(t *testing.T) []map[string]any {
	t.Helper()
	s.engine.Close(context.Background())
	s.dlog.Close()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(s.log.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func resultOf(t *testing.T, r acp.Response) string {
	t.Helper()
	if r.Line != nil {
		var m struct{ Result json.RawMessage }
		if err := json.Unmarshal(r.Line, &m); err != nil {
			t.Fatal(err)
		}
		return string(m.Result)
	}
	return string(r.Result)
}

func withoutMeta(t *testing.T, params json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(params, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "_meta")
	return m
}

func TestPluginRejectAnswersTheAgent(t *testing.T) {
	s := newEngine(t, nil, member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "rm -rf is not allowed"}}))
	c := &fakeClient{}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"reject"}}` {
		t.Fatalf("agent got %s", got)
	}
	if len(c.asked) != 0 {
		t.Fatalf("the editor was asked: %s", c.asked)
	}
	if len(c.notified) != 1 {
		t.Fatalf("notified %d times", len(c.notified))
	}
	var n struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string          `json:"sessionUpdate"`
			ToolCallID    string          `json:"toolCallId"`
			Title         string          `json:"title"`
			RawInput      json.RawMessage `json:"rawInput"`
			Meta          struct {
				Permhost struct {
					Decision struct{ Outcome, OptionID, DecidedBy, Reason string }
				}
			} `json:"_meta"`
		}
	}
	if err := json.Unmarshal(c.notified[0], &n); err != nil {
		t.Fatal(err)
	}
	if n.SessionID != "2a178532-7f3e-4eef-ad46-ab41b93044de" || n.Update.SessionUpdate != "tool_call_update" ||
		n.Update.ToolCallID != "toolu_fake_0001" || n.Update.Title != "rm -rf build" ||
		string(n.Update.RawInput) != `{"command":"rm -rf build","description":"Remove build dir"}` {
		t.Errorf("update = %s", c.notified[0])
	}
	if d := n.Update.Meta.Permhost.Decision; d.Outcome != "reject" || d.OptionID != "reject" || d.DecidedBy != "no-rm" || d.Reason != "rm -rf is not allowed" {
		t.Errorf("_meta.permhost.decision = %+v", d)
	}
	entries := s.entries(t)
	if len(entries) != 1 || entries[0]["decidedBy"] != "no-rm" || entries[0]["optionId"] != "reject" {
		t.Fatalf("log = %v", entries)
	}
}

func TestAbstainForwardsWithMetaOnly(t *testing.T) {
	s := newEngine(t, nil, member("quiet", &plugin{d: abi.Decision{Outcome: abi.OutcomeAbstain,
		Explanation: &abi.Explanation{Summary: "Deletes the build directory.", Risk: "Removes files irreversibly", RiskLevel: "high"}}}))
	c := &fakeClient{answer: selects("allow")}
	pr := permissionRequest(t, claudeBash)
	resp, err := s.engine.Handler().RequestPermission(context.Background(), pr, c)
	if err != nil {
		t.Fatal(err)
	}
	// The editor's answer, read strictly and re-encoded: what the proxy
	// relays and the log records are read from these bytes.
	if got, want := resultOf(t, resp), `{"outcome":{"outcome":"selected","optionId":"allow"}}`; got != want || resp.Line != nil {
		t.Fatalf("agent got %s (line %s), want %s", got, resp.Line, want)
	}
	if len(c.asked) != 1 {
		t.Fatal("the editor was not asked")
	}
	got, orig := withoutMeta(t, c.asked[0]), withoutMeta(t, pr.Params)
	gb, _ := json.Marshal(got)
	ob, _ := json.Marshal(orig)
	if !bytes.Equal(gb, ob) {
		t.Errorf("forwarded params differ beyond _meta:\n%s\n%s", gb, ob)
	}
	var meta struct {
		Meta struct {
			Permhost struct {
				DecisionID   string `json:"decisionId"`
				RiskLevel    string `json:"riskLevel"`
				Explanations []struct{ Plugin, Summary, Risk, RiskLevel string }
			} `json:"permhost"`
			Permission struct {
				Version     int    `json:"version"`
				Title       string `json:"title"`
				Description string `json:"description"`
			} `json:"permission"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(c.asked[0], &meta); err != nil {
		t.Fatal(err)
	}
	if m := meta.Meta; m.Permhost.DecisionID == "" || m.Permhost.RiskLevel != "high" || len(m.Permhost.Explanations) != 1 ||
		m.Permhost.Explanations[0].Plugin != "quiet" || m.Permission.Version != 1 || m.Permission.Title != "rm -rf build" ||
		!strings.Contains(m.Permission.Description, "Deletes the build directory.") {
		t.Errorf("_meta = %+v", m)
	}
	if e := s.entries(t); e[0]["decidedBy"] != "person" || e[0]["optionId"] != "allow" {
		t.Errorf("log = %v", e)
	}
}

func TestAgentPresentationRecordIsKept(t *testing.T) {
	s := newEngine(t, nil)
	params := strings.Replace(claudeBash, `"sessionId"`, `"_meta":{"permission":{"version":1,"title":"Agent's title"},"other":{"x":1}},"sessionId"`, 1)
	c := &fakeClient{answer: selects("reject")}
	if _, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, params), c); err != nil {
		t.Fatal(err)
	}
	asked := string(c.asked[0])
	if !strings.Contains(asked, `"permission":{"version":1,"title":"Agent's title"}`) || !strings.Contains(asked, `"other":{"x":1}`) || !strings.Contains(asked, `"permhost":`) {
		t.Fatalf("forwarded %s", asked)
	}
}

func TestClosedFailureOffersOneTimeOptionsOnly(t *testing.T) {
	failing := &plugin{err: &host.Error{Kind: host.KindTrap, Plugin: "broken", Err: errors.New("unreachable")}}
	for _, tt := range []struct {
		name, answer, want string
		refused            bool
	}{
		{"person allows once", "allow", `{"outcome":{"outcome":"selected","optionId":"allow"}}`, false},
		{"durable answer is refused", "allow_always", `{"outcome":{"outcome":"selected","optionId":"reject"}}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newEngine(t, nil, member("broken", failing), member("yes", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}))
			c := &fakeClient{answer: selects(tt.answer)}
			resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
			if err != nil {
				t.Fatal(err)
			}
			var shown struct{ Options []acp.PermissionOption }
			json.Unmarshal(c.asked[0], &shown)
			if len(shown.Options) != 2 || shown.Options[0].OptionID != "allow" || shown.Options[1].OptionID != "reject" {
				t.Fatalf("shown %+v", shown.Options)
			}
			if got := resultOf(t, resp); got != tt.want {
				t.Fatalf("agent got %s, want %s", got, tt.want)
			}
			e := s.entries(t)[0]
			if !strings.Contains(e["fallback"].(string), "broken") {
				t.Errorf("fallback = %v", e["fallback"])
			}
			if refused, _ := e["person"].(map[string]any)["refused"].(bool); refused != tt.refused {
				t.Errorf("refused = %v", refused)
			}
		})
	}
}

func TestFailurePolicies(t *testing.T) {
	failing := func() *plugin {
		return &plugin{err: &host.Error{Kind: host.KindTimeout, Plugin: "slow", Err: errors.New("deadline")}}
	}
	for _, tt := range []struct {
		policy   string
		asked    bool
		decision string
	}{
		{"closed", true, ""},     // fallback: the person sees one-time options
		{"abstain", false, "ok"}, // silent: the other plugin's allow decides
		{"monitor", false, "ok"},
	} {
		t.Run(tt.policy, func(t *testing.T) {
			s := newEngine(t, nil, member("slow", failing(), tt.policy), member("ok", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}))
			c := &fakeClient{answer: selects("allow")}
			resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
			if err != nil {
				t.Fatal(err)
			}
			if (len(c.asked) > 0) != tt.asked {
				t.Fatalf("asked = %d", len(c.asked))
			}
			if got := resultOf(t, resp); !strings.Contains(got, `"allow"`) {
				t.Fatalf("agent got %s", got)
			}
			e := s.entries(t)[0]
			if tt.decision != "" && e["decidedBy"] != tt.decision {
				t.Errorf("decidedBy = %v", e["decidedBy"])
			}
			p := e["plugins"].([]any)[0].(map[string]any)
			if p["failure"].(map[string]any)["kind"] != "timeout" || p["failurePolicy"] != tt.policy {
				t.Errorf("plugin log = %v", p)
			}
		})
	}
}

func TestAnswerNotOfferedNeverAllows(t *testing.T) {
	s := newEngine(t, nil)
	c := &fakeClient{answer: selects("yolo")}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"reject"}}` {
		t.Fatalf("agent got %s", got)
	}
	e := s.entries(t)[0]
	if e["decidedBy"] != "builtin" || !strings.Contains(e["reason"].(string), `"yolo"`) {
		t.Errorf("log = %v", e)
	}
}

func TestAdminAskStripsDurableOptions(t *testing.T) {
	s := newEngine(t, nil, member("adm", &plugin{d: abi.Decision{Outcome: abi.OutcomeAsk, Reason: "company policy"}}, "closed", "admin"))
	c := &fakeClient{answer: selects("allow")}
	if _, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(c.asked[0]), `"allow_always"`) && !strings.Contains(string(c.asked[0]), `"removedOptions":["allow_always"]`) {
		t.Fatalf("durable option shown: %s", c.asked[0])
	}
	var shown struct{ Options []acp.PermissionOption }
	json.Unmarshal(c.asked[0], &shown)
	if len(shown.Options) != 2 {
		t.Fatalf("shown %+v", shown.Options)
	}
}

func TestSwitchModeFallbackKeepsPlanning(t *testing.T) {
	failing := &plugin{err: &host.Error{Kind: host.KindTrap, Plugin: "b", Err: errors.New("x")}}
	s := newEngine(t, nil, member("b", failing))
	c := &fakeClient{answer: selects("acceptEdits")}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, exitPlanMode), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.asked) != 0 {
		t.Fatal("the person was asked with nothing one-time to offer")
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"plan"}}` {
		t.Fatalf("agent got %s", got)
	}
}

func TestPersonTimeout(t *testing.T) {
	cfg := &config.Config{Strategy: "sequential", PersonTimeout: 50 * time.Millisecond}
	s := newEngine(t, cfg)
	c := &fakeClient{answer: func(ctx context.Context, _ json.RawMessage) (acp.Answer, error) {
		<-ctx.Done()
		return acp.Answer{}, ctx.Err()
	}}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"reject"}}` {
		t.Fatalf("agent got %s", got)
	}
	if e := s.entries(t)[0]; e["person"].(map[string]any)["answer"] != "timeout" || e["decidedBy"] != "builtin" {
		t.Errorf("log = %v", e)
	}
}

func TestCancelWhilePluginsRun(t *testing.T) {
	seen := make(chan abi.Request, 1)
	s := newEngine(t, nil, member("slow", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}, delay: 10 * time.Second, seen: seen}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.engine.Handler().RequestPermission(ctx, permissionRequest(t, claudeBash), &fakeClient{})
		done <- err
	}()
	<-seen
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler did not return after cancel")
	}
	if e := s.entries(t)[0]; e["decidedBy"] != "cancel" || e["outcome"] != "cancelled" {
		t.Errorf("log = %v", e)
	}
}

func TestRace(t *testing.T) {
	race := &config.Config{Strategy: config.StrategyRace}
	t.Run("plugin wins and retracts the prompt", func(t *testing.T) {
		s := newEngine(t, race, member("fast", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject}}))
		retracted := make(chan error, 1)
		c := &fakeClient{answer: func(ctx context.Context, _ json.RawMessage) (acp.Answer, error) {
			<-ctx.Done()
			retracted <- ctx.Err()
			return acp.Answer{}, ctx.Err()
		}}
		resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultOf(t, resp); !strings.Contains(got, `"reject"`) {
			t.Fatalf("agent got %s", got)
		}
		if err := <-retracted; !errors.Is(err, context.Canceled) {
			t.Fatalf("prompt ctx = %v", err)
		}
		if len(c.notified) != 1 {
			t.Fatalf("no tool_call_update after a plugin win")
		}
		if e := s.entries(t)[0]; e["decidedBy"] != "fast" || e["person"].(map[string]any)["answer"] != "retracted" {
			t.Errorf("log = %v", e)
		}
	})
	t.Run("person wins and the plugins' result is discarded", func(t *testing.T) {
		// The plugin ignores its context until the decision is in: the
		// person's answer must not wait for it.
		seen, release := make(chan abi.Request, 1), make(chan struct{})
		defer close(release)
		slow := host.Member{Name: "slow", Layer: host.LayerUser, Policy: host.FailClosed,
			Plugin: blocking{seen: seen, release: release, d: abi.Decision{Outcome: abi.OutcomeReject}}}
		s := newEngine(t, race, slow)
		c := &fakeClient{answer: func(ctx context.Context, p json.RawMessage) (acp.Answer, error) {
			<-seen
			return selects("allow")(ctx, p)
		}}
		resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultOf(t, resp); !strings.Contains(got, `"allow"`) {
			t.Fatalf("agent got %s", got)
		}
		if e := s.entries(t)[0]; e["decidedBy"] != "person" || len(e["plugins"].([]any)) != 0 {
			t.Errorf("log = %v", e)
		}
	})
}

// TestRacePersonAnswerWins: when the person's reject and a plugin's allow
// are both in, the person's answer decides (RATIONALE.md, "The race
// strategy"). The plugin's allow comes first and retracts the prompt, but
// the editor's reject was read before the retraction took: Client.Ask
// returns it, and it wins.
func TestRacePersonAnswerWins(t *testing.T) {
	race := &config.Config{Strategy: config.StrategyRace}
	seen, release := make(chan abi.Request, 1), make(chan struct{})
	s := newEngine(t, race, host.Member{Name: "allows", Layer: host.LayerUser, Policy: host.FailClosed,
		Plugin: blocking{seen: seen, release: release, d: abi.Decision{Outcome: abi.OutcomeAllow, OptionID: "allow"}}})
	c := &fakeClient{answer: func(ctx context.Context, p json.RawMessage) (acp.Answer, error) {
		<-seen
		close(release)
		<-ctx.Done()                     // retracted after the plugin's allow...
		return selects("reject")(ctx, p) // ...but the reject was read first
	}}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); !strings.Contains(got, `"reject"`) {
		t.Fatalf("the person rejected, the agent got %s", got)
	}
	if e := s.entries(t)[0]; e["decidedBy"] != "person" {
		t.Fatalf("log = %v", e)
	}
}

// TestRaceDurableChoiceWaitsForPlugins: a person's durable choice made
// before the plugins are done stands only if their verdict lets a person
// make it: after a failed fail-closed plugin it is refused.
func TestRaceDurableChoiceWaitsForPlugins(t *testing.T) {
	race := &config.Config{Strategy: config.StrategyRace, Session: config.Session{AllowAlways: config.AllowAlwaysAgent}}
	seen, release := make(chan abi.Request, 1), make(chan struct{})
	s := newEngine(t, race, host.Member{Name: "broken", Layer: host.LayerUser, Policy: host.FailClosed,
		Plugin: failingBlocking{blocking{seen: seen, release: release}}})
	c := &fakeClient{answer: func(ctx context.Context, p json.RawMessage) (acp.Answer, error) {
		<-seen
		defer close(release)
		return selects("allow_always")(ctx, p)
	}}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); strings.Contains(got, `allow`) {
		t.Fatalf("a durable choice the fallback does not offer reached the agent: %s", got)
	}
}

// failingBlocking is blocking, then failing.
type failingBlocking struct{ b blocking }

func (f failingBlocking) Call(ctx context.Context, req abi.Request) host.Result {
	f.b.Call(ctx, req)
	return host.Result{Err: &host.Error{Kind: host.KindTrap, Plugin: "broken", Err: errors.New("trap")}}
}

// blocking is a plugin that reports its call and then ignores its context
// until released.
type blocking struct {
	seen    chan abi.Request
	release chan struct{}
	d       abi.Decision
}

func (b blocking) Call(_ context.Context, req abi.Request) host.Result {
	b.seen <- req
	<-b.release
	return host.Result{Decision: b.d}
}

// TestDecisionLogGolden pins the shape of decision-log lines.
func TestDecisionLogGolden(t *testing.T) {
	s := newEngine(t, nil,
		member("explainer", &plugin{d: abi.Decision{Outcome: abi.OutcomeAbstain, Explanation: &abi.Explanation{Summary: "Removes build", Risk: "deletes files", RiskLevel: "high"}}}, "monitor"),
		member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "rm -rf"}}),
		member("after", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}),
	)
	if _, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), &fakeClient{}); err != nil {
		t.Fatal(err)
	}
	s2 := newEngine(t, nil)
	if _, err := s2.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), &fakeClient{answer: selects("allow_always")}); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, s := range []*setup{s, s2} {
		s.entries(t)
		got.Write(s.log.Bytes())
	}
	norm := regexp.MustCompile(`"(decisionId|time|latencyUs)":("[^"]*"|\d+)`)
	out := norm.ReplaceAll(got.Bytes(), []byte(`"$1":"*"`))
	golden := filepath.Join("testdata", "decisions.golden.jsonl")
	if *update {
		os.WriteFile(golden, out, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("decision log differs from %s (-update to rewrite):\n%s", golden, out)
	}
}

func TestCanonicalSHA256IgnoresKeyOrder(t *testing.T) {
	a := policy.CanonicalSHA256(json.RawMessage(`{"b":1,"a":[1,2,{"y":"<x>","x":12345678901234567890}]}`))
	b := policy.CanonicalSHA256(json.RawMessage(`{ "a":[1,2,{"x":12345678901234567890,"y":"<x>"}], "b":1 }`))
	c := policy.CanonicalSHA256(json.RawMessage(`{"a":[1,2,{"x":12345678901234567891,"y":"<x>"}],"b":1}`))
	if a != b || a == c || len(a) != 64 {
		t.Fatalf("a=%s b=%s c=%s", a, b, c)
	}
}
