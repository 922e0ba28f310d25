package policy_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/prompt"
	"github.com/permhost/permhost/policy"
)

// newRunEngine is newEngine with Via "run".
func newRunEngine(t *testing.T, members ...host.Member) *setup {
	t.Helper()
	buf := &logBuffer{}
	dlog := policy.NewDecisionLog(buf, nil)
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject}
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, Via: "run", Members: members, Log: dlog, Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()); dlog.Close() })
	return &setup{engine: e, log: buf, dlog: dlog}
}

// person is a scripted terminal.
type person struct {
	mu     sync.Mutex
	asked  []prompt.Question
	answer func(ctx context.Context) (string, error)
}

func (p *person) ask(ctx context.Context, q prompt.Question) (string, error) {
	p.mu.Lock()
	p.asked = append(p.asked, q)
	p.mu.Unlock()
	return p.answer(ctx)
}

func (p *person) questions() []prompt.Question {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]prompt.Question(nil), p.asked...)
}

func answers(id string, err error) *person {
	return &person{answer: func(context.Context) (string, error) { return id, err }}
}

func optionIDs(q prompt.Question) string {
	var ids []string
	for _, o := range q.Options {
		ids = append(ids, o.ID)
	}
	return strings.Join(ids, ",")
}

func TestHeadless(t *testing.T) {
	abstain := func() host.Member { return member("quiet", &plugin{d: abi.Decision{Outcome: abi.OutcomeAbstain}}) }
	tests := []struct {
		name      string
		members   []host.Member
		params    string
		mode      string
		person    *person
		wantID    string // "" = cancelled
		wantBy    string
		wantWhy   string // substring of the reason
		wantShown string // options the person saw; "" = not asked
		wantLog   string // person.answer in the log
	}{
		{name: "plugin allow", members: []host.Member{member("ok", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow, Reason: "fine"}})},
			mode: "reject", wantID: "allow", wantBy: "ok", wantWhy: "fine"},
		{name: "plugin reject", members: []host.Member{member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no rm"}})},
			mode: "prompt", person: answers("allow", nil), wantID: "reject", wantBy: "no-rm", wantWhy: "no rm"},
		{name: "undecided, reject", members: []host.Member{abstain()}, mode: "reject",
			wantID: "reject", wantBy: "builtin", wantWhy: "every plugin abstained; headless policy: reject"},
		{name: "no plugins, cancel", mode: "cancel", wantID: "", wantBy: "builtin", wantWhy: "no plugin configured; headless policy: cancel"},
		{name: "prompt without a terminal rejects", members: []host.Member{abstain()}, mode: "prompt",
			wantID: "reject", wantBy: "builtin", wantWhy: "no terminal, so --on-undecided prompt behaves as reject"},
		{name: "prompt: the person allows", members: []host.Member{abstain()}, mode: "prompt", person: answers("allow", nil),
			wantID: "allow", wantBy: "person", wantShown: "allow_always,allow,reject", wantLog: "allow"},
		{name: "prompt after a plugin failure shows one-time options only",
			members: []host.Member{member("broken", &plugin{err: &host.Error{Kind: host.KindTrap, Plugin: "broken", Err: errors.New("trap")}})},
			mode:    "prompt", person: answers("allow", nil),
			wantID: "allow", wantBy: "person", wantShown: "allow,reject", wantLog: "allow"},
		{name: "prompt: an answer not shown is refused",
			members: []host.Member{member("broken", &plugin{err: &host.Error{Kind: host.KindTrap, Plugin: "broken", Err: errors.New("trap")}})},
			mode:    "prompt", person: answers("allow_always", nil),
			wantID: "reject", wantBy: "builtin", wantWhy: `"allow_always" was not offered`, wantShown: "allow,reject", wantLog: "allow_always"},
		{name: "prompt: the person declines", members: []host.Member{abstain()}, mode: "prompt", person: answers("", prompt.ErrDeclined),
			wantID: "", wantBy: "person", wantShown: "allow_always,allow,reject", wantLog: "cancelled"},
		{name: "prompt: the terminal goes away", members: []host.Member{abstain()}, mode: "prompt", person: answers("", prompt.ErrHangup),
			wantID: "reject", wantBy: "builtin", wantWhy: "no answer from the person", wantShown: "allow_always,allow,reject", wantLog: "error"},
		{name: "prompt after a failure: every option durable", params: exitPlanMode, members: []host.Member{member("broken", &plugin{err: &host.Error{Kind: host.KindTrap, Plugin: "broken", Err: errors.New("trap")}})}, mode: "prompt", person: answers("acceptEdits", nil),
			wantID: "plan", wantBy: "builtin", wantWhy: "every option is durable"},
		{name: "an ask is undecided", members: []host.Member{member("asker", &plugin{d: abi.Decision{Outcome: abi.OutcomeAsk, Reason: "look first",
			Explanation: &abi.Explanation{Summary: "Deletes build.", RiskLevel: "high"}}})},
			mode: "prompt", person: answers("reject", nil), wantID: "reject", wantBy: "person", wantShown: "allow_always,allow,reject", wantLog: "reject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRunEngine(t, tt.members...)
			opts := policy.HeadlessOptions{OnUndecided: tt.mode}
			if tt.person != nil {
				opts.Ask = tt.person.ask
			}
			h, err := s.engine.Headless(opts)
			if err != nil {
				t.Fatal(err)
			}
			params := tt.params
			if params == "" {
				params = claudeBash
			}
			d, err := h.DecidePermission(context.Background(), permissionRequest(t, params))
			if err != nil {
				t.Fatal(err)
			}
			if d.OptionID != tt.wantID || d.DecidedBy != tt.wantBy || !strings.Contains(d.Reason, tt.wantWhy) || d.DecisionID == "" {
				t.Fatalf("decision %+v, want option %q by %q because ...%q...", d, tt.wantID, tt.wantBy, tt.wantWhy)
			}
			shown := ""
			if tt.person != nil && len(tt.person.questions()) > 0 {
				q := tt.person.questions()[0]
				shown = optionIDs(q)
				if q.Title != "rm -rf build" || q.Command != "rm -rf build" || q.Kind != "execute" || q.Reason == "" {
					t.Errorf("question %+v", q)
				}
			}
			if shown != tt.wantShown {
				t.Errorf("person shown %q, want %q", shown, tt.wantShown)
			}
			log := s.entries(t)
			if len(log) != 1 {
				t.Fatalf("%d log entries", len(log))
			}
			e := log[0]
			wantOutcome := "selected"
			if tt.wantID == "" {
				wantOutcome = "cancelled"
			}
			if e["via"] != "run" || e["decidedBy"] != tt.wantBy || e["outcome"] != wantOutcome || e["decisionId"] != d.DecisionID {
				t.Errorf("log entry %v", e)
			}
			if tt.wantID != "" && e["optionId"] != tt.wantID {
				t.Errorf("log optionId %v", e["optionId"])
			}
			p, _ := e["person"].(map[string]any)
			if got, _ := p["answer"].(string); got != tt.wantLog {
				t.Errorf("log person %v, want answer %q", p, tt.wantLog)
			}
		})
	}
}

func TestHeadlessExplanationsReachThePerson(t *testing.T) {
	s := newRunEngine(t, member("explainer", &plugin{d: abi.Decision{Outcome: abi.OutcomeAsk, Reason: "look first",
		Explanation: &abi.Explanation{Summary: "Deletes build.", Risk: "Irreversible", RiskLevel: "high"}}}))
	p := answers("reject", nil)
	h, _ := s.engine.Headless(policy.HeadlessOptions{OnUndecided: "prompt", Ask: p.ask})
	if _, err := h.DecidePermission(context.Background(), permissionRequest(t, claudeBash)); err != nil {
		t.Fatal(err)
	}
	q := p.questions()[0]
	if len(q.Explanations) != 1 || q.Explanations[0].Plugin != "explainer" || q.Explanations[0].RiskLevel != "high" ||
		q.Explanations[0].Summary != "Deletes build." || !strings.Contains(q.Reason, "look first") {
		t.Fatalf("question %+v", q)
	}
}

// stubborn is a plugin that ignores its context until released.
type stubborn struct{ release chan struct{} }

func (s stubborn) Call(context.Context, abi.Request) host.Result {
	<-s.release
	return host.Result{Decision: abi.Decision{Outcome: abi.OutcomeAllow}}
}

// The --permission-timeout deadline is hard: the builtin answers at the
// deadline while the plugin or the person, ignoring their context, are
// still busy (they are released only after the answer is in).
func TestHeadlessTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	tests := []struct {
		name    string
		members []host.Member
		person  *person
	}{
		{"slow plugin", []host.Member{member("slow", &plugin{delay: time.Minute, d: abi.Decision{Outcome: abi.OutcomeAllow}})}, nil},
		{"plugin that ignores the context", []host.Member{{Name: "stubborn", Layer: host.LayerUser, Policy: host.FailClosed, Plugin: stubborn{release}}}, nil},
		{"silent person", nil, &person{answer: func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }}},
		{"person who ignores the context", nil, &person{answer: func(ctx context.Context) (string, error) {
			<-release
			return "allow", nil
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRunEngine(t, tt.members...)
			opts := policy.HeadlessOptions{OnUndecided: "prompt", Timeout: timeout}
			if tt.person != nil {
				opts.Ask = tt.person.ask
			}
			h, _ := s.engine.Headless(opts)
			d, err := h.DecidePermission(context.Background(), permissionRequest(t, claudeBash))
			if err != nil || d.OptionID != "reject" || d.DecidedBy != "builtin" || !strings.Contains(d.Reason, "no decision within 100ms") {
				t.Fatalf("decision %+v, %v", d, err)
			}
			if tt.person != nil {
				if qs := tt.person.questions(); len(qs) == 1 && qs[0].Deadline.IsZero() {
					t.Error("the person was not shown the deadline")
				}
			}
		})
	}
}

// A panic anywhere on a headless decision's path — a plugin, the terminal
// prompt, the leader — is never the end of permhost run: the plugin's
// panic is its failure (trap), the others give the builtin's reject.
func TestHeadlessPanicsBecomeTheFallback(t *testing.T) {
	panics := func(ctx context.Context, q prompt.Question) (string, error) { panic("terminal bug") }
	tests := []struct {
		name    string
		members []host.Member
		opts    policy.HeadlessOptions
		kind    string // the plugin's failure in the log
		reason  string
	}{
		{"a plugin", []host.Member{{Name: "bug", Layer: host.LayerAdmin, Policy: host.FailClosed,
			Plugin: panicking{}}}, policy.HeadlessOptions{OnUndecided: "reject"}, "trap", "headless policy: reject"},
		{"the prompt", nil, policy.HeadlessOptions{OnUndecided: "prompt", Ask: panics}, "", "internal error: the decision panicked: terminal bug"},
		{"the leader", nil, policy.HeadlessOptions{OnUndecided: "reject", Leader: func(context.Context, abi.Request, host.Verdict, []abi.Option) policy.LeaderAnswer {
			panic("leader bug")
		}}, "", "internal error: the decision panicked: leader bug"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRunEngine(t, tt.members...)
			h, err := s.engine.Headless(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			d, err := h.DecidePermission(context.Background(), permissionRequest(t, claudeBash))
			if err != nil || d.OptionID != "reject" || d.DecidedBy != "builtin" || !strings.Contains(d.Reason, tt.reason) {
				t.Fatalf("decision %+v, %v", d, err)
			}
			e := s.entries(t)
			if len(e) != 1 || e[0]["decidedBy"] != "builtin" {
				t.Fatalf("log %v", e)
			}
			if tt.kind != "" {
				p := e[0]["plugins"].([]any)[0].(map[string]any)
				if p["failure"].(map[string]any)["kind"] != tt.kind || !strings.Contains(p["failure"].(map[string]any)["message"].(string), "plugin bug") {
					t.Fatalf("plugin log %v", p)
				}
			}
		})
	}
}

type panicking struct{}

func (panicking) Call(context.Context, abi.Request) host.Result { panic("plugin bug") }

// A decision cancelled while the chain runs is cancelled, whatever a
// plugin that ran before said.
func TestHeadlessCancelledMidChain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	allowsThenCancels := decides(func(context.Context, abi.Request) host.Result {
		cancel()
		return host.Result{Decision: abi.Decision{Outcome: abi.OutcomeAllow}}
	})
	s := newRunEngine(t, host.Member{Name: "adm", Layer: host.LayerAdmin, Policy: host.FailClosed, Plugin: allowsThenCancels},
		member("team-no", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject}}, "closed", "team"))
	h, _ := s.engine.Headless(policy.HeadlessOptions{OnUndecided: "reject"})
	d, err := h.DecidePermission(ctx, permissionRequest(t, claudeBash))
	if err != nil || d.OptionID != "" || d.DecidedBy != "cancel" {
		t.Fatalf("decision %+v, %v", d, err)
	}
}

type decides func(context.Context, abi.Request) host.Result

func (f decides) Call(ctx context.Context, req abi.Request) host.Result { return f(ctx, req) }

func TestHeadlessCancelled(t *testing.T) {
	s := newRunEngine(t)
	entered := make(chan struct{})
	p := &person{answer: func(ctx context.Context) (string, error) { close(entered); <-ctx.Done(); return "", ctx.Err() }}
	h, _ := s.engine.Headless(policy.HeadlessOptions{OnUndecided: "prompt", Ask: p.ask})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan acp.PermissionDecision)
	go func() {
		d, _ := h.DecidePermission(ctx, permissionRequest(t, claudeBash))
		done <- d
	}()
	<-entered
	cancel()
	d := <-done
	if d.OptionID != "" || d.DecidedBy != "cancel" {
		t.Fatalf("decision %+v", d)
	}
	if e := s.entries(t); len(e) != 1 || e[0]["decidedBy"] != "cancel" || e[0]["outcome"] != "cancelled" {
		t.Fatalf("log %v", e)
	}
}

func TestHeadlessRefusesBadOptions(t *testing.T) {
	s := newRunEngine(t)
	for _, opts := range []policy.HeadlessOptions{{OnUndecided: "allow"}, {Timeout: -time.Second}} {
		if _, err := s.engine.Headless(opts); !errors.Is(err, policy.ErrHeadless) {
			t.Errorf("Headless(%+v) = %v", opts, err)
		}
	}
}
