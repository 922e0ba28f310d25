package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/policy"
)

// The leader hook of permhost run: asked only about undecided requests,
// with the options a person may choose; its answer is used only when it is
// one of them, and otherwise the headless policy decides, logging why.
func TestHeadlessLeader(t *testing.T) {
	broken := func() host.Member {
		return member("broken", &plugin{err: &host.Error{Kind: host.KindTrap, Plugin: "broken", Err: errors.New("trap")}})
	}
	byPerson := policy.LeaderAnswer{Answered: true, OptionID: "allow", DecidedBy: policy.ByPerson, Reason: "chosen at the leader's terminal",
		Person: &policy.LogPerson{Shown: []string{"allow", "reject"}, Answer: "allow", Who: "leader pid 7 at /s"}}
	tests := []struct {
		name      string
		members   []host.Member
		answer    policy.LeaderAnswer
		wantAsked bool
		wantShown string
		wantID    string
		wantBy    string
		wantWhy   string
		wantWho   string
	}{
		{name: "a plugin decides: the leader is not asked",
			members: []host.Member{member("ok", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}})}, answer: byPerson,
			wantID: "allow", wantBy: "ok"},
		{name: "the leader's person allows", answer: byPerson, wantAsked: true, wantShown: "allow_always,allow,reject",
			wantID: "allow", wantBy: "person", wantWhy: "leader's terminal", wantWho: "leader pid 7 at /s"},
		{name: "after a closed failure only one-time options go to the leader", members: []host.Member{broken()}, answer: byPerson,
			wantAsked: true, wantShown: "allow,reject", wantID: "allow", wantBy: "person", wantWho: "leader pid 7 at /s"},
		{name: "the leader's plugin cancels", answer: policy.LeaderAnswer{Answered: true, DecidedBy: "leader:plan-mode"},
			wantAsked: true, wantShown: "allow_always,allow,reject", wantID: "", wantBy: "leader:plan-mode"},
		{name: "an answer not shown is not used", members: []host.Member{broken()},
			answer:    policy.LeaderAnswer{Answered: true, OptionID: "allow_always", DecidedBy: policy.ByPerson},
			wantAsked: true, wantShown: "allow,reject", wantID: "reject", wantBy: "builtin", wantWhy: "allow_always was not offered; headless policy: reject"},
		{name: "leader unreachable: headless reject", answer: policy.LeaderAnswer{Fallback: "leader unreachable: connection refused"},
			wantAsked: true, wantShown: "allow_always,allow,reject", wantID: "reject", wantBy: "builtin",
			wantWhy: "no plugin configured; leader unreachable: connection refused; headless policy: reject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRunEngine(t, tt.members...)
			var asked []abi.Option
			calls := 0
			leader := func(ctx context.Context, req abi.Request, v host.Verdict, shown []abi.Option) policy.LeaderAnswer {
				calls++
				asked = shown
				if req.ToolCall.Title != "rm -rf build" || v.Decided() {
					t.Errorf("leader asked about %q with verdict %v", req.ToolCall.Title, v.Outcome)
				}
				return tt.answer
			}
			h, err := s.engine.Headless(policy.HeadlessOptions{OnUndecided: "reject", Leader: leader})
			if err != nil {
				t.Fatal(err)
			}
			d, err := h.DecidePermission(context.Background(), permissionRequest(t, claudeBash))
			if err != nil {
				t.Fatal(err)
			}
			if (calls > 0) != tt.wantAsked {
				t.Fatalf("leader called %d times", calls)
			}
			var ids []string
			for _, o := range asked {
				ids = append(ids, o.OptionID)
			}
			if got := strings.Join(ids, ","); got != tt.wantShown {
				t.Fatalf("leader shown %q, want %q", got, tt.wantShown)
			}
			if d.OptionID != tt.wantID || d.DecidedBy != tt.wantBy || !strings.Contains(d.Reason, tt.wantWhy) {
				t.Fatalf("decision %+v, want %q by %q because ...%q...", d, tt.wantID, tt.wantBy, tt.wantWhy)
			}
			e := s.entries(t)[0]
			p, _ := e["person"].(map[string]any)
			if who, _ := p["who"].(string); who != tt.wantWho {
				t.Fatalf("log person %v, want who %q", p, tt.wantWho)
			}
		})
	}
}

// A turn cancelled while the leader is asked answers cancelled.
func TestHeadlessLeaderCancelled(t *testing.T) {
	s := newRunEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	leader := func(ctx context.Context, req abi.Request, v host.Verdict, shown []abi.Option) policy.LeaderAnswer {
		cancel()
		<-ctx.Done()
		return policy.LeaderAnswer{Fallback: "request withdrawn from the leader"}
	}
	h, _ := s.engine.Headless(policy.HeadlessOptions{OnUndecided: "reject", Leader: leader})
	d, err := h.DecidePermission(ctx, permissionRequest(t, claudeBash))
	if err != nil {
		t.Fatal(err)
	}
	if d.OptionID != "" || d.DecidedBy != policy.ByCancel {
		t.Fatalf("decision %+v, want cancelled", d)
	}
}
