package leader

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestAnswerFromElsewhereRetractsTerminal: an answer given through
// Server.Answer (the web page) reaches the worker with who answered and
// what they typed, retracts the terminal's prompt, and is recorded.
func TestAnswerFromElsewhereRetractsTerminal(t *testing.T) {
	p := newPerson(t)
	recs := newRecords()
	s := startServer(t, Options{Prompter: p, OnDecision: recs.add})
	c, err := NewClient(s.Socket())
	if err != nil {
		t.Fatal(err)
	}
	ch := askAsync(context.Background(), c, question("a"))
	shown := p.next()
	if err := s.Answer(shown.Seq, "reject", "web:abc", "not now"); err != nil {
		t.Fatal(err)
	}
	r := wait(t, ch)
	if r.err != nil || r.a.OptionID != "reject" || r.a.AnsweredBy != "web:abc" || r.a.Said != "not now" || r.a.DecidedBy != "person" {
		t.Fatalf("worker got %+v, %v", r.a, r.err)
	}
	if got := <-p.retract; got.Seq != shown.Seq {
		t.Fatalf("retracted #%d, want #%d", got.Seq, shown.Seq)
	}
	if rec := recs.next(t); rec.By != "web:abc" || rec.Said != "not now" || rec.OptionID != "reject" {
		t.Fatalf("record %+v", rec)
	}
}

// TestAnswerFirstWins: many answers at once, exactly one is taken.
func TestAnswerFirstWins(t *testing.T) {
	p := newPerson(t)
	s := startServer(t, Options{Prompter: p})
	c, _ := NewClient(s.Socket())
	ch := askAsync(context.Background(), c, question("a"))
	seq := p.next().Seq
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for i := range 8 {
		wg.Go(func() {
			opt := []string{"allow", "reject"}[i%2]
			err := s.Answer(seq, opt, "web:"+opt, "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, ErrNotPending):
				lost++
			default:
				t.Errorf("Answer: %v", err)
			}
		})
	}
	wg.Wait()
	if won != 1 || lost != 7 {
		t.Fatalf("%d answers taken, %d refused; want 1 and 7", won, lost)
	}
	if r := wait(t, ch); r.err != nil || r.a.AnsweredBy != "web:"+r.a.OptionID {
		t.Fatalf("worker got %+v, %v", r.a, r.err)
	}
}

// TestAnswerNotShownRefused: an option the person was not shown is never
// sent, and the request stays pending.
func TestAnswerNotShownRefused(t *testing.T) {
	p := newPerson(t)
	s := startServer(t, Options{Prompter: p})
	c, _ := NewClient(s.Socket())
	q := question("a")
	q.Shown = []string{"allow", "reject"}
	askAsync(context.Background(), c, q)
	seq := p.next().Seq
	for _, id := range []string{"allow_always", "nope"} {
		if err := s.Answer(seq, id, "web:x", ""); !errors.Is(err, ErrNotShown) {
			t.Errorf("Answer(%q) = %v, want ErrNotShown", id, err)
		}
	}
	if err := s.Answer(seq+1, "allow", "web:x", ""); !errors.Is(err, ErrNotPending) {
		t.Errorf("Answer of an unknown request = %v, want ErrNotPending", err)
	}
	if n := len(s.Queued()); n != 1 {
		t.Fatalf("%d queued, want the request still pending", n)
	}
}

// elsewhere is the cause permhost proxy --leader cancels its ask with
// when the editor's person answered first.
type elsewhere struct {
	by string
	at time.Time
}

func (e elsewhere) Error() string                          { return "answered by " + e.by }
func (e elsewhere) AnsweredElsewhere() (string, time.Time) { return e.by, e.at }

// TestWithdrawAnsweredByEditor: a withdrawal whose cause says the editor
// answered is recorded as answered by the editor at that time, for the
// pages; any other name is a plain withdrawal (a worker cannot speak for
// a page or the terminal).
func TestWithdrawAnsweredByEditor(t *testing.T) {
	for _, tc := range []struct{ by, want string }{
		{ByEditor, ByEditor},
		{"web:abc", ""},
		{ByTerminal, ""},
	} {
		t.Run(tc.by, func(t *testing.T) {
			p := newPerson(t)
			recs := newRecords()
			s := startServer(t, Options{Prompter: p, OnDecision: recs.add})
			c, err := NewClient(s.Socket())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			ch := askAsync(ctx, c, question("a"))
			p.next()
			at := time.Now()
			cancel(elsewhere{tc.by, at})
			if r := wait(t, ch); !errors.Is(r.err, ErrWithdrawn) {
				t.Fatalf("worker got %+v, %v", r.a, r.err)
			}
			rec := recs.next(t)
			if rec.Outcome != OutcomeWithdrawn || rec.By != tc.want {
				t.Fatalf("record %+v: want withdrawn by %q", rec, tc.want)
			}
			if tc.want != "" && !rec.Ended.Equal(at.UTC()) {
				t.Fatalf("ended at %v, want the editor's answer at %v", rec.Ended, at)
			}
		})
	}
}
