package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/leader"
	"github.com/permhost/permhost/policy"
)

// TestLeaderWebAnswerReachesWorker: an answer given on the leader's web
// page reaches the worker's log as the browser's, with what the person
// typed for the model; the leader's own log names the browser too.
func TestLeaderWebAnswerReachesWorker(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s", "l.sock")
	var recs []leader.Record
	done := make(chan struct{}, 1)
	srv, err := leader.Listen(context.Background(), leader.Options{Socket: sock,
		Prompter:   leader.PrompterFunc(func(ctx context.Context, _ leader.Prompt) (string, error) { <-ctx.Done(); return "", ctx.Err() }),
		OnDecision: func(r leader.Record) { recs = append(recs, r); done <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ask, err := leaderFunc(sock, "/w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req := leaderTestRequest()
	got := make(chan policy.LeaderAnswer, 1)
	go func() { got <- ask(context.Background(), req, host.Verdict{}, req.Options[1:]) }()
	var seq uint64
	for seq == 0 {
		ch := srv.Changed()
		for _, p := range srv.Queued() {
			if p.Ready {
				seq = p.Seq
			}
		}
		if seq == 0 {
			<-ch
		}
	}
	if err := srv.Answer(seq, "no", "web:abc123", "use make clean"); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if !a.Answered || a.OptionID != "no" || a.DecidedBy != policy.ByPerson || a.PersonText != "use make clean" ||
		a.Person == nil || !strings.HasPrefix(a.Person.Who, "web:abc123 at leader pid ") {
		t.Fatalf("worker got %+v (person %+v)", a, a.Person)
	}
	<-done
	e := leaderEntry(recs[0], "sequential")
	if e.Person == nil || !strings.HasPrefix(e.Person.Who, "web:abc123 for worker pid ") {
		t.Fatalf("leader's entry person %+v", e.Person)
	}
}
