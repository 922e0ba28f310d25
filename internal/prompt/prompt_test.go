//go:build linux

package prompt

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
)

// screen collects what the terminal shows.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the screen shows want n times in all.
func (s *screen) waitFor(t *testing.T, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(s.String(), want) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q (%d times); it shows:\n%s", want, n, s.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

// newPTY returns a Terminal on the slave side of a pseudo-terminal, the
// master to type into, and the screen.
func newPTY(t *testing.T, opts Options) (*Terminal, *os.File, *screen) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	scr := &screen{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			scr.mu.Lock()
			scr.buf.Write(b[:n])
			scr.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-done
	})
	term, err := Open(tty, tty, opts)
	if err != nil {
		t.Fatal(err)
	}
	return term, ptmx, scr
}

var question = Question{
	Title:   "rm -rf build",
	Kind:    "execute",
	Command: "rm -rf build",
	Paths:   []Path{{Path: "/home/dev/project/build", Access: "write"}, {Path: "/etc/passwd", Access: "read", Outside: true}},
	Explanations: []Explanation{
		{Plugin: "team-rules", Summary: "Deletes the build directory.", Risk: "Irreversible.", RiskLevel: "high"},
	},
	Reason: "team-rules asks a person",
	Options: []Option{
		{ID: "allow_always", Name: "Always Allow", Kind: "allow_always"},
		{ID: "allow", Name: "Allow", Kind: "allow_once"},
		{ID: "reject", Name: "Reject", Kind: "reject_once"},
	},
}

type answer struct {
	id  string
	err error
}

func ask(term *Terminal, ctx context.Context, q Question) chan answer {
	ch := make(chan answer, 1)
	go func() {
		id, err := term.Ask(ctx, q)
		ch <- answer{id, err}
	}()
	return ch
}

func waitAnswer(t *testing.T, ch chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return")
		return answer{}
	}
}

func TestAskShowsTheRequest(t *testing.T) {
	term, ptmx, scr := newPTY(t, Options{Grace: -1})
	ch := ask(term, context.Background(), question)
	scr.waitFor(t, "choice: ", 1)
	ptmx.Write([]byte("3"))
	if a := waitAnswer(t, ch); a.err != nil || a.id != "reject" {
		t.Fatalf("Ask = %+v", a)
	}
	scr.waitFor(t, "→ Reject", 1)
	got := scr.String()
	for _, want := range []string{
		"permission requested [execute]: rm -rf build",
		"command: rm -rf build",
		"write /home/dev/project/build",
		"read  /etc/passwd (outside the project)",
		"team-rules [HIGH risk]: Deletes the build directory. Risk: Irreversible.",
		"why you are asked: team-rules asks a person",
		"[1] Always Allow (allow_always)",
		"[2] Allow (allow_once)",
		"[3] Reject (reject_once)",
		"→ Reject",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("screen lacks %q:\n%s", want, got)
		}
	}
}

func TestAskIgnoresKeysDuringTheGrace(t *testing.T) {
	clock := newClock()
	term, ptmx, scr := newPTY(t, Options{Now: clock.now}) // default grace
	ch := ask(term, context.Background(), question)
	scr.waitFor(t, "choice: ", 1)
	// A key at once (the clock has not moved): a misclick, ignored.
	ptmx.Write([]byte("1"))
	clock.add(DefaultGrace - time.Millisecond)
	ptmx.Write([]byte("1"))
	select {
	case a := <-ch:
		t.Fatalf("a key within the grace period answered: %+v", a)
	case <-time.After(300 * time.Millisecond):
	}
	clock.add(time.Millisecond)
	ptmx.Write([]byte("2"))
	if a := waitAnswer(t, ch); a.err != nil || a.id != "allow" {
		t.Fatalf("Ask = %+v, want allow", a)
	}
}

func TestAskDiscardsTypeahead(t *testing.T) {
	term, ptmx, scr := newPTY(t, Options{Grace: -1})
	ptmx.Write([]byte("1")) // typed before the question
	time.Sleep(50 * time.Millisecond)
	ch := ask(term, context.Background(), question)
	scr.waitFor(t, "choice: ", 1)
	select {
	case a := <-ch:
		t.Fatalf("type-ahead answered: %+v", a)
	case <-time.After(200 * time.Millisecond):
	}
	ptmx.Write([]byte("3"))
	if a := waitAnswer(t, ch); a.id != "reject" {
		t.Fatalf("Ask = %+v", a)
	}
}

func TestAskOtherKeys(t *testing.T) {
	tests := []struct {
		name  string
		input []string
		want  answer
	}{
		{"escape declines", []string{"\x1b"}, answer{err: ErrDeclined}},
		{"arrow keys and unknown keys are ignored", []string{"\x1b[A", "x", "\r", "9", "2"}, answer{id: "allow"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term, ptmx, scr := newPTY(t, Options{Grace: -1})
			ch := ask(term, context.Background(), question)
			scr.waitFor(t, "choice: ", 1)
			for _, in := range tt.input {
				ptmx.Write([]byte(in))
				time.Sleep(20 * time.Millisecond) // separate reads
			}
			a := waitAnswer(t, ch)
			if a.id != tt.want.id || !errors.Is(a.err, tt.want.err) {
				t.Fatalf("Ask = %+v, want %+v", a, tt.want)
			}
		})
	}
}

func TestAskWithdrawnWhenContextEnds(t *testing.T) {
	term, _, scr := newPTY(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ch := ask(term, ctx, question)
	scr.waitFor(t, "choice: ", 1)
	cancel()
	if a := waitAnswer(t, ch); !errors.Is(a.err, context.Canceled) {
		t.Fatalf("Ask = %+v", a)
	}
	scr.waitFor(t, "(withdrawn)", 1)
}

func TestAskOneQuestionAtATime(t *testing.T) {
	term, ptmx, scr := newPTY(t, Options{Grace: -1})
	first := ask(term, context.Background(), question)
	scr.waitFor(t, "choice: ", 1)
	second := ask(term, context.Background(), question)
	time.Sleep(50 * time.Millisecond)
	if n := strings.Count(scr.String(), "choice: "); n != 1 {
		t.Fatalf("%d questions on screen at once", n)
	}
	ptmx.Write([]byte("2"))
	if a := waitAnswer(t, first); a.id != "allow" {
		t.Fatalf("first = %+v", a)
	}
	scr.waitFor(t, "choice: ", 2)
	ptmx.Write([]byte("3"))
	if a := waitAnswer(t, second); a.id != "reject" {
		t.Fatalf("second = %+v", a)
	}
}

func TestOpenRefusesNonTerminals(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := Open(r, w, Options{}); !errors.Is(err, ErrNotTerminal) {
		t.Fatalf("Open(pipe) = %v", err)
	}
}

func TestRenderNeutralisesControlCharacters(t *testing.T) {
	q := Question{Title: "evil\x1b]0;pwned\x07title", Command: "echo \x1b[2Jhi", Options: []Option{{ID: "a", Kind: "allow_once"}}}
	got := render(q)
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Fatalf("control characters reached the terminal: %q", got)
	}
}
