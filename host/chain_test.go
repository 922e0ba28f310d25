package host_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
)

// fake is a scripted plugin.
type fake struct {
	d     abi.Decision
	err   error
	calls atomic.Int32
}

func (f *fake) Call(ctx context.Context, req abi.Request) host.Result {
	f.calls.Add(1)
	if f.err != nil {
		return host.Result{Err: f.err}
	}
	return host.Result{Decision: f.d}
}

func says(o abi.Outcome, extra ...string) *fake {
	d := abi.Decision{Outcome: o}
	if len(extra) > 0 {
		d.Scope = abi.Scope(extra[0])
	}
	if len(extra) > 1 {
		d.OptionID = extra[1]
	}
	return &fake{d: d}
}

func fails() *fake {
	return &fake{err: &host.Error{Kind: host.KindTrap, Plugin: "x", Err: errors.New("unreachable")}}
}

var claudeOptions = []abi.Option{
	{OptionID: "allow_always", Kind: abi.OptionAllowAlways, Durable: true},
	{OptionID: "allow", Kind: abi.OptionAllowOnce},
	{OptionID: "reject", Kind: abi.OptionRejectOnce},
}

type m struct {
	name, layer string
	policy      host.FailurePolicy
	plugin      *fake
}

func TestChainCombination(t *testing.T) {
	tests := []struct {
		name      string
		members   []m
		options   []abi.Option
		outcome   abi.Outcome
		option    string
		decidedBy string
		fallback  bool
		strip     bool
		notRun    []string
	}{
		{name: "all abstain", members: []m{{"a", "user", "closed", says("abstain")}, {"b", "team", "closed", says("abstain")}}, outcome: "abstain"},
		{name: "no plugins", outcome: "abstain"},
		{name: "one allow", members: []m{{"a", "user", "closed", says("allow")}, {"b", "user", "closed", says("abstain")}}, outcome: "allow", option: "allow", decidedBy: "a"},
		{name: "reject beats allow", members: []m{{"a", "user", "closed", says("allow")}, {"b", "user", "closed", says("reject")}}, outcome: "reject", option: "reject", decidedBy: "b"},
		{name: "reject is final: later plugins do not run", members: []m{{"a", "user", "closed", says("reject")}, {"b", "user", "closed", says("allow")}}, outcome: "reject", option: "reject", decidedBy: "a", notRun: []string{"b"}},
		{name: "admin runs first whatever the order given", members: []m{{"u", "user", "closed", says("allow")}, {"adm", "admin", "closed", says("reject")}}, outcome: "reject", option: "reject", decidedBy: "adm", notRun: []string{"u"}},
		{name: "cancel beats ask", members: []m{{"a", "user", "closed", says("ask")}, {"b", "user", "closed", says("cancel")}}, outcome: "cancel", decidedBy: "b"},
		{name: "reject with no reject option cancels", options: []abi.Option{{OptionID: "ok", Kind: abi.OptionAllowOnce}}, members: []m{{"a", "user", "closed", says("reject")}}, outcome: "cancel", decidedBy: "a"},
		{name: "ask beats allow", members: []m{{"a", "user", "closed", says("allow")}, {"b", "team", "closed", says("ask")}}, outcome: "ask"},
		{name: "admin ask strips durable options", members: []m{{"a", "admin", "closed", says("ask")}}, outcome: "ask", strip: true},
		{name: "user ask keeps them", members: []m{{"a", "user", "closed", says("ask")}}, outcome: "ask"},
		{name: "allow once beats allow always", members: []m{{"a", "user", "closed", says("allow", "always")}, {"b", "user", "closed", says("allow", "once")}}, outcome: "allow", option: "allow", decidedBy: "b"},
		{name: "select of the same option agrees with allow", members: []m{{"a", "user", "closed", says("select", "", "allow")}, {"b", "user", "closed", says("allow")}}, outcome: "select", option: "allow", decidedBy: "a"},
		{name: "selects that conflict ask", options: []abi.Option{{OptionID: "x", Kind: abi.OptionAllowOnce}, {OptionID: "y", Kind: abi.OptionAllowOnce}}, members: []m{{"a", "user", "closed", says("select", "", "x")}, {"b", "user", "closed", says("select", "", "y")}}, outcome: "ask"},
		{name: "select of reject against allow asks", members: []m{{"a", "user", "closed", says("select", "", "reject")}, {"b", "user", "closed", says("allow")}}, outcome: "ask"},
		{name: "closed failure falls back", members: []m{{"a", "user", "closed", fails()}, {"b", "user", "closed", says("allow")}}, outcome: "ask", fallback: true},
		{name: "a reject still beats a closed failure", members: []m{{"a", "user", "closed", fails()}, {"b", "user", "closed", says("reject")}}, outcome: "reject", option: "reject", decidedBy: "b", fallback: true},
		{name: "abstain failure is silent", members: []m{{"a", "user", "abstain", fails()}, {"b", "user", "closed", says("allow")}}, outcome: "allow", option: "allow", decidedBy: "b"},
		{name: "monitor failure is silent", members: []m{{"a", "user", "monitor", fails()}}, outcome: "abstain"},
		{name: "monitor reject is not enforced", members: []m{{"a", "user", "monitor", says("reject")}, {"b", "user", "closed", says("allow")}}, outcome: "allow", option: "allow", decidedBy: "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var members []host.Member
			for _, mm := range tt.members {
				members = append(members, host.Member{Name: mm.name, Layer: mm.layer, Policy: mm.policy, Plugin: mm.plugin})
			}
			c, err := host.NewChain(host.ChainOptions{Members: members})
			if err != nil {
				t.Fatal(err)
			}
			opts := tt.options
			if opts == nil {
				opts = claudeOptions
			}
			v := c.Run(context.Background(), abi.Request{Options: opts})
			if v.Outcome != tt.outcome || v.OptionID != tt.option || v.DecidedBy != tt.decidedBy {
				t.Errorf("verdict = %s %q by %q, want %s %q by %q", v.Outcome, v.OptionID, v.DecidedBy, tt.outcome, tt.option, tt.decidedBy)
			}
			if (v.Fallback != "") != tt.fallback {
				t.Errorf("Fallback = %q, want set=%v", v.Fallback, tt.fallback)
			}
			if v.StripDurable != tt.strip {
				t.Errorf("StripDurable = %v", v.StripDurable)
			}
			if len(v.Votes) != len(tt.members) {
				t.Errorf("%d votes for %d members", len(v.Votes), len(tt.members))
			}
			for _, mm := range tt.members {
				skipped := false
				for _, n := range tt.notRun {
					skipped = skipped || n == mm.name
				}
				if ran := mm.plugin.calls.Load() > 0; ran == skipped {
					t.Errorf("plugin %s ran=%v, want %v", mm.name, ran, !skipped)
				}
			}
			if v.Decided() && v.Outcome != abi.OutcomeCancel {
				found := false
				for _, o := range opts {
					found = found || o.OptionID == v.OptionID
				}
				if !found {
					t.Errorf("verdict names option %q, not offered", v.OptionID)
				}
			}
		})
	}
}

func TestChainQuarantine(t *testing.T) {
	now := time.Unix(1000, 0)
	bad := fails()
	c, err := host.NewChain(host.ChainOptions{
		Members:         []host.Member{{Name: "bad", Layer: "user", Policy: "abstain", Plugin: bad}},
		QuarantineAfter: 3, QuarantineFor: time.Minute,
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		c.Run(context.Background(), abi.Request{Options: claudeOptions})
	}
	if got := bad.calls.Load(); got != 3 {
		t.Fatalf("calls = %d", got)
	}
	v := c.Run(context.Background(), abi.Request{Options: claudeOptions})
	if bad.calls.Load() != 3 || v.Votes[0].Skipped != "quarantined" || !errors.Is(v.Votes[0].Err, host.ErrQuarantined) {
		t.Fatalf("quarantined plugin was called or not marked: %+v", v.Votes[0])
	}
	now = now.Add(61 * time.Second)
	c.Run(context.Background(), abi.Request{Options: claudeOptions})
	if bad.calls.Load() != 4 {
		t.Fatalf("plugin not retried after the quarantine ended")
	}
}

func TestChainQuarantineClosedFallsBack(t *testing.T) {
	c, _ := host.NewChain(host.ChainOptions{Members: []host.Member{{Name: "bad", Layer: "user", Policy: "closed", Plugin: fails()}}, QuarantineAfter: 1})
	c.Run(context.Background(), abi.Request{Options: claudeOptions})
	v := c.Run(context.Background(), abi.Request{Options: claudeOptions})
	if v.Outcome != abi.OutcomeAsk || !strings.Contains(v.Fallback, "quarantined") {
		t.Fatalf("verdict = %+v", v)
	}
}

func TestChainCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := says("allow")
	c, _ := host.NewChain(host.ChainOptions{Members: []host.Member{{Name: "a", Layer: "user", Policy: "closed", Plugin: a}}})
	v := c.Run(ctx, abi.Request{Options: claudeOptions})
	if v.Outcome != abi.OutcomeCancel || a.calls.Load() != 0 {
		t.Fatalf("verdict = %+v, calls %d", v, a.calls.Load())
	}
}

func TestNewChainValidates(t *testing.T) {
	for _, mm := range []host.Member{
		{Name: "a", Layer: "root", Policy: "closed", Plugin: says("allow")},
		{Name: "a", Layer: "user", Policy: "open", Plugin: says("allow")},
		{Name: "a", Layer: "user", Policy: "closed"},
	} {
		if _, err := host.NewChain(host.ChainOptions{Members: []host.Member{mm}}); !errors.Is(err, host.ErrChain) {
			t.Errorf("NewChain(%+v) err = %v", mm, err)
		}
	}
}

// decider is a Decider made of a function.
type decider func(ctx context.Context, req abi.Request) host.Result

func (f decider) Call(ctx context.Context, req abi.Request) host.Result { return f(ctx, req) }

// A context that ends mid-chain makes the outcome cancel: an admin's allow
// does not survive the team's reject that was skipped.
func TestChainCancelledMidChainIsCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := decider(func(context.Context, abi.Request) host.Result {
		cancel() // the turn is cancelled while the admin plugin runs
		return host.Result{Decision: abi.Decision{Outcome: abi.OutcomeAllow}}
	})
	team := says("reject")
	c, err := host.NewChain(host.ChainOptions{Members: []host.Member{
		{Name: "team", Layer: "team", Policy: "closed", Plugin: team},
		{Name: "admin", Layer: "admin", Policy: "closed", Plugin: admin},
	}})
	if err != nil {
		t.Fatal(err)
	}
	v := c.Run(ctx, abi.Request{Options: claudeOptions})
	if v.Outcome != abi.OutcomeCancel || v.OptionID != "" || v.DecidedBy != "" {
		t.Fatalf("verdict = %s %q by %q, want cancel", v.Outcome, v.OptionID, v.DecidedBy)
	}
	if team.calls.Load() != 0 || v.Votes[1].Plugin != "team" || v.Votes[1].Skipped != "cancelled" {
		t.Fatalf("team ran %d times, vote %+v", team.calls.Load(), v.Votes[1])
	}
	if v.Votes[0].Decision.Outcome != abi.OutcomeAllow {
		t.Errorf("the admin's vote is still recorded: %+v", v.Votes[0])
	}
}

// A member that panics has failed (trap); the chain goes on and its
// failure policy applies.
func TestChainPanickingMember(t *testing.T) {
	panics := decider(func(context.Context, abi.Request) host.Result { panic("plugin bug") })
	for _, tt := range []struct {
		policy   host.FailurePolicy
		outcome  abi.Outcome
		fallback bool
	}{
		{"closed", abi.OutcomeAsk, true},
		{"abstain", abi.OutcomeAllow, false},
	} {
		t.Run(string(tt.policy), func(t *testing.T) {
			after := says("allow")
			c, _ := host.NewChain(host.ChainOptions{Members: []host.Member{
				{Name: "panics", Layer: "admin", Policy: tt.policy, Plugin: panics},
				{Name: "after", Layer: "user", Policy: "closed", Plugin: after},
			}})
			v := c.Run(context.Background(), abi.Request{Options: claudeOptions})
			if v.Outcome != tt.outcome || (v.Fallback != "") != tt.fallback {
				t.Fatalf("verdict = %s (fallback %q)", v.Outcome, v.Fallback)
			}
			if host.KindOf(v.Votes[0].Err) != host.KindTrap || !errors.Is(v.Votes[0].Err, host.ErrPanicked) ||
				!strings.Contains(v.Votes[0].Err.Error(), "plugin bug") {
				t.Fatalf("vote of the panicking member: %+v", v.Votes[0])
			}
			if after.calls.Load() != 1 {
				t.Fatal("the chain stopped at the panic")
			}
		})
	}
	t.Run("counts towards quarantine", func(t *testing.T) {
		c, _ := host.NewChain(host.ChainOptions{QuarantineAfter: 2, Members: []host.Member{{Name: "panics", Layer: "user", Policy: "abstain", Plugin: panics}}})
		c.Run(context.Background(), abi.Request{})
		c.Run(context.Background(), abi.Request{})
		if v := c.Run(context.Background(), abi.Request{}); v.Votes[0].Skipped != "quarantined" {
			t.Fatalf("third vote %+v, want quarantined", v.Votes[0])
		}
	})
}

// loadingFake is a member whose plugin loads until the test says so.
type loadingFake struct {
	fake
	done  chan struct{}
	until time.Time
	asked chan struct{} // receives when the chain asks whether it loaded
}

func newLoading(d abi.Decision, until time.Time) *loadingFake {
	return &loadingFake{fake: fake{d: d}, done: make(chan struct{}), until: until, asked: make(chan struct{}, 16)}
}

func (l *loadingFake) Loaded() (<-chan struct{}, time.Time) {
	select {
	case l.asked <- struct{}{}:
	default:
	}
	return l.done, l.until
}

func (l *loadingFake) Plugin() *host.Plugin { return nil }

func runAsync(c *host.Chain, ctx context.Context, opts []abi.Option) chan host.Verdict {
	ch := make(chan host.Verdict, 1)
	go func() { ch <- c.Run(ctx, abi.Request{Options: opts}) }()
	return ch
}

func wait(t *testing.T, ch chan host.Verdict) host.Verdict {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
		return host.Verdict{}
	}
}

func TestChainReadinessPerMember(t *testing.T) {
	never := time.Now().Add(time.Hour) // a load that does not end in the test
	t.Run("a ready reject answers without waiting for a loading member", func(t *testing.T) {
		slow := newLoading(abi.Decision{Outcome: abi.OutcomeAllow}, never)
		c, _ := host.NewChain(host.ChainOptions{Members: []host.Member{
			{Name: "slow", Layer: "admin", Policy: "closed", Plugin: slow},
			{Name: "no", Layer: "user", Policy: "closed", Plugin: says("reject")},
		}})
		v := wait(t, runAsync(c, context.Background(), claudeOptions))
		if v.Outcome != abi.OutcomeReject || v.DecidedBy != "no" || v.Fallback != "" {
			t.Fatalf("verdict = %s by %q (fallback %q)", v.Outcome, v.DecidedBy, v.Fallback)
		}
		if v.Votes[0].Skipped != "a reject is final" || slow.calls.Load() != 0 {
			t.Fatalf("loading member: %+v, called %d", v.Votes[0], slow.calls.Load())
		}
	})
	t.Run("a member that loads later decides without waiting for one before it", func(t *testing.T) {
		stuck := newLoading(abi.Decision{Outcome: abi.OutcomeAllow}, never)
		later := newLoading(abi.Decision{Outcome: abi.OutcomeReject}, never)
		c, _ := host.NewChain(host.ChainOptions{Members: []host.Member{
			{Name: "stuck", Layer: "admin", Policy: "closed", Plugin: stuck},
			{Name: "later", Layer: "user", Policy: "closed", Plugin: later},
		}})
		ch := runAsync(c, context.Background(), claudeOptions)
		<-later.asked
		<-later.asked
		close(later.done)
		v := wait(t, ch)
		if v.Outcome != abi.OutcomeReject || v.DecidedBy != "later" || v.Votes[0].Skipped != "a reject is final" || stuck.calls.Load() != 0 {
			t.Fatalf("verdict = %s by %q, votes %+v", v.Outcome, v.DecidedBy, v.Votes)
		}
	})
	t.Run("an allow waits for the loading member, which then decides", func(t *testing.T) {
		slow := newLoading(abi.Decision{Outcome: abi.OutcomeReject, Reason: "loaded and said no"}, never)
		yes := says("allow")
		c, _ := host.NewChain(host.ChainOptions{Members: []host.Member{
			{Name: "slow", Layer: "admin", Policy: "closed", Plugin: slow},
			{Name: "yes", Layer: "user", Policy: "closed", Plugin: yes},
		}})
		ch := runAsync(c, context.Background(), claudeOptions)
		<-slow.asked // passed over while loading
		<-slow.asked // waited for
		if yes.calls.Load() != 1 {
			t.Fatal("the ready member did not run first")
		}
		select {
		case v := <-ch:
			t.Fatalf("decided %s while a member was loading within its budget", v.Outcome)
		default:
		}
		close(slow.done)
		v := wait(t, ch)
		if v.Outcome != abi.OutcomeReject || v.DecidedBy != "slow" || slow.calls.Load() != 1 {
			t.Fatalf("verdict = %s by %q, slow called %d", v.Outcome, v.DecidedBy, slow.calls.Load())
		}
	})
	for _, tt := range []struct {
		policy   host.FailurePolicy
		outcome  abi.Outcome
		fallback bool
	}{
		{"closed", abi.OutcomeAsk, true},
		{"abstain", abi.OutcomeAllow, false},
	} {
		t.Run("past its load budget it counts as failed: "+string(tt.policy), func(t *testing.T) {
			late := newLoading(abi.Decision{Outcome: abi.OutcomeAllow}, time.Now().Add(-time.Second))
			c, _ := host.NewChain(host.ChainOptions{Members: []host.Member{
				{Name: "late", Layer: "admin", Policy: tt.policy, Plugin: late},
				{Name: "yes", Layer: "user", Policy: "closed", Plugin: says("allow")},
			}})
			v := wait(t, runAsync(c, context.Background(), claudeOptions))
			if v.Outcome != tt.outcome || (v.Fallback != "") != tt.fallback {
				t.Fatalf("verdict = %s (fallback %q)", v.Outcome, v.Fallback)
			}
			if host.KindOf(v.Votes[0].Err) != host.KindLoad || !errors.Is(v.Votes[0].Err, host.ErrStillLoading) || late.calls.Load() != 0 {
				t.Fatalf("late member: %+v, called %d", v.Votes[0], late.calls.Load())
			}
		})
	}
	t.Run("cancelled while waiting", func(t *testing.T) {
		slow := newLoading(abi.Decision{Outcome: abi.OutcomeAllow}, never)
		c, _ := host.NewChain(host.ChainOptions{Members: []host.Member{
			{Name: "yes", Layer: "admin", Policy: "closed", Plugin: says("allow")},
			{Name: "slow", Layer: "user", Policy: "closed", Plugin: slow},
		}})
		ctx, cancel := context.WithCancel(context.Background())
		ch := runAsync(c, ctx, claudeOptions)
		<-slow.asked
		<-slow.asked
		cancel()
		v := wait(t, ch)
		if v.Outcome != abi.OutcomeCancel || v.Votes[1].Skipped != "cancelled" {
			t.Fatalf("verdict = %s, votes %+v", v.Outcome, v.Votes)
		}
	})
	t.Run("a loaded member runs in its place", func(t *testing.T) {
		ready := newLoading(abi.Decision{Outcome: abi.OutcomeAllow}, never)
		close(ready.done)
		c, _ := host.NewChain(host.ChainOptions{Members: []host.Member{{Name: "ready", Layer: "user", Policy: "closed", Plugin: ready}}})
		if v := c.Run(context.Background(), abi.Request{Options: claudeOptions}); v.Outcome != abi.OutcomeAllow || ready.calls.Load() != 1 {
			t.Fatalf("verdict = %s", v.Outcome)
		}
	})
}
