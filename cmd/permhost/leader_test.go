package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/leader"
	"github.com/permhost/permhost/policy"
)

func leaderTestRequest() abi.Request {
	return abi.Request{
		DecisionID: "d1",
		Session:    abi.Session{ID: "s1", Cwd: "/w", Agent: &abi.Peer{Name: "codex-acp", Version: "0.3"}},
		ToolCall:   abi.ToolCall{ID: "c1", Title: "rm -rf build", Kind: abi.KindExecute},
		Options: []abi.Option{
			{OptionID: "always", Name: "Always", Kind: abi.OptionAllowAlways, Durable: true},
			{OptionID: "yes", Name: "Yes", Kind: abi.OptionAllowOnce},
			{OptionID: "no", Name: "No", Kind: abi.OptionRejectOnce},
		},
	}
}

// The worker's side: what the leader answers, and why it falls back when
// the leader cannot answer.
func TestLeaderWorker(t *testing.T) {
	dir, err := os.MkdirTemp("", "lw")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "leader.sock")

	lw, err := newLeaderWorker(sock, "/w", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	req := leaderTestRequest()
	all, oneTime := req.Options, req.Options[1:]
	if r := lw.ask(context.Background(), req, host.Verdict{Outcome: abi.OutcomeAbstain}, all); r.Answered || !strings.HasPrefix(r.Fallback, "leader unreachable") {
		t.Fatalf("no leader: %+v", r)
	}

	var (
		mu     sync.Mutex
		seen   leader.Prompt
		answer = "yes"
	)
	setAnswer := func(a string) { mu.Lock(); answer = a; mu.Unlock() }
	srv, err := leader.Listen(context.Background(), leader.Options{Socket: sock, Prompter: leader.PrompterFunc(
		func(ctx context.Context, p leader.Prompt) (string, error) {
			mu.Lock()
			seen = p
			answer := answer
			mu.Unlock()
			if answer == "wait" {
				<-ctx.Done()
				return "", ctx.Err()
			}
			return answer, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// A closed failure on the worker: the leader's person sees only the
	// one-time options, with the worker's explanations and identity.
	v := host.Verdict{Outcome: abi.OutcomeAsk, Fallback: "plugin x failed: trap",
		Explanations: []host.Explained{{Plugin: "explainer", Explanation: abi.Explanation{Summary: "deletes build", RiskLevel: abi.RiskMedium}}}}
	r := lw.ask(context.Background(), req, v, oneTime)
	if !r.Answered || r.OptionID != "yes" || r.DecidedBy != policy.ByPerson || r.Person == nil ||
		!strings.Contains(r.Person.Who, "leader pid") || r.Person.Answer != "yes" || strings.Join(r.Person.Shown, ",") != "yes,no" {
		t.Fatalf("answered: %+v person %+v", r, r.Person)
	}
	mu.Lock()
	if len(seen.Options) != 2 || seen.Worker.Agent != "codex-acp 0.3" || seen.Worker.Session != "s1" || seen.Worker.PID != os.Getpid() ||
		len(seen.Explanations) != 1 || seen.Reason != "builtin fallback: plugin x failed: trap" || seen.Deadline.IsZero() {
		t.Fatalf("leader saw %+v", seen)
	}
	mu.Unlock()

	setAnswer("wait")
	start := time.Now()
	r = lw.ask(context.Background(), req, host.Verdict{Outcome: abi.OutcomeAbstain}, all)
	if r.Answered || !strings.HasPrefix(r.Fallback, "leader timed out") {
		t.Fatalf("timeout: %+v", r)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the worker waited %v past a 300ms bound", waited)
	}
	// Within a decision's deadline, the worker gives up on the leader a
	// little before it, leaving the headless policy time to answer (the
	// full 500 ms margin, so that a loaded machine's scheduling delay
	// cannot eat it).
	ctx, cancel := context.WithTimeout(context.Background(), leaderMarginDiv*leaderMaxMargin)
	defer cancel()
	lw.timeout = time.Minute
	r = lw.ask(ctx, req, host.Verdict{Outcome: abi.OutcomeAbstain}, all)
	if r.Answered || !strings.HasPrefix(r.Fallback, "leader timed out") || ctx.Err() != nil {
		t.Fatalf("leader wait within a deadline: %+v (ctx %v)", r, ctx.Err())
	}
	lw.timeout = 300 * time.Millisecond

	setAnswer("always") // not shown: the leader refuses to send it
	r = lw.ask(context.Background(), req, v, oneTime)
	if r.Answered || !strings.HasPrefix(r.Fallback, "leader refused (undecided)") {
		t.Fatalf("hidden option: %+v", r)
	}

	setAnswer("")
	r = lw.ask(context.Background(), req, v, oneTime)
	if !r.Answered || r.OptionID != "" || r.Person.Answer != "cancelled" {
		t.Fatalf("declined: %+v", r)
	}
}
