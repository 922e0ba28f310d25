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
