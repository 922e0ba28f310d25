package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

// permhost proxy --leader: the editor and the leader are asked at once,
// the first answer wins and the other is withdrawn.

func TestProxyLeaderAnswerRetractsEditorPrompt(t *testing.T) {
	cfg := &config.Config{Strategy: config.StrategySequential, Session: config.Session{Reasons: config.ReasonsSteer}}
	s := newEngine(t, cfg)
	retracted := make(chan struct{})
	c := &fakeClient{answer: func(ctx context.Context, _ json.RawMessage) (acp.Answer, error) {
		select {
		case <-ctx.Done(): // the real Client sends $/cancel_request here
			close(retracted)
			return acp.Answer{}, ctx.Err()
		case <-time.After(30 * time.Second):
			return acp.Answer{}, errors.New("the editor's prompt was never retracted")
		}
	}}
	s.engine.SetLeader(func(ctx context.Context, req abi.Request, v host.Verdict, shown []abi.Option) policy.LeaderAnswer {
		return policy.LeaderAnswer{Answered: true, OptionID: "reject", DecidedBy: policy.ByPerson, Reason: "chosen at web:abc123",
			Person:     &policy.LogPerson{Shown: []string{"allow", "reject"}, Answer: "reject", Who: "web:abc123 at leader pid 1"},
			PersonText: "use make clean instead"}
	})
	pr := permissionRequest(t, claudeBash)
	pr.Session.Steering = true
	resp, err := s.engine.Handler().RequestPermission(context.Background(), pr, c)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-retracted:
	default:
		t.Fatal("the editor's prompt was not retracted")
	}
	if got := resultOf(t, resp); !strings.Contains(got, `"optionId":"reject"`) {
		t.Fatalf("the agent got %s, want the leader's reject", got)
	}
	if resp.FollowUp == nil || resp.FollowUp.Method != acp.MethodSessionSteering || !strings.Contains(string(resp.FollowUp.Params), "use make clean instead") {
		t.Fatalf("follow-up %+v: want the person's words sent as steering", resp.FollowUp)
	}
	e := s.entries(t)[0]
	if p, _ := e["person"].(map[string]any); e["decidedBy"] != "person" || p["who"] != "web:abc123 at leader pid 1" {
		t.Fatalf("log entry %v: want decided by the person at web:abc123", e)
	}
}

func TestProxyEditorAnswerWithdrawsFromLeader(t *testing.T) {
	s := newEngine(t, nil)
	withdrawn := make(chan error, 1)
	s.engine.SetLeader(func(ctx context.Context, req abi.Request, v host.Verdict, shown []abi.Option) policy.LeaderAnswer {
		select {
		case <-ctx.Done():
			withdrawn <- context.Cause(ctx)
		case <-time.After(30 * time.Second):
		}
		return policy.LeaderAnswer{Fallback: "request withdrawn from the leader"}
	})
	c := &fakeClient{answer: selects("allow")}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-withdrawn:
		// The leader's client carries who answered to its pages.
		var ae interface {
			AnsweredElsewhere() (string, time.Time)
		}
		if !errors.As(cause, &ae) {
			t.Fatalf("withdrawn with %v: want a cause naming the editor", cause)
		}
		if by, at := ae.AnsweredElsewhere(); by != "editor" || at.IsZero() {
			t.Fatalf("withdrawn as answered by %q at %v, want the editor with a time", by, at)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the leader's request was not withdrawn")
	}
	if got := resultOf(t, resp); !strings.Contains(got, `"optionId":"allow"`) {
		t.Fatalf("the agent got %s, want the editor's allow", got)
	}
}

func TestProxyLeaderAnswerNotShownLeavesEditor(t *testing.T) {
	s := newEngine(t, nil)
	s.engine.SetLeader(func(ctx context.Context, req abi.Request, v host.Verdict, shown []abi.Option) policy.LeaderAnswer {
		return policy.LeaderAnswer{Answered: true, OptionID: "allow_always_forged", DecidedBy: policy.ByPerson}
	})
	c := &fakeClient{answer: selects("reject")}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); !strings.Contains(got, `"optionId":"reject"`) {
		t.Fatalf("the agent got %s, want the editor's reject: the leader's option was not offered", got)
	}
}
