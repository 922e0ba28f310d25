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
	"golang.org/x/sys/unix"
)

// screen collects what the terminal shows.
type screen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // signalled after each write
}

func newScreen() *screen { return &screen{changed: make(chan struct{}, 1)} }

func (s *screen) write(b []byte) {
	s.mu.Lock()
	s.buf.Write(b)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the screen shows want n times in all.
func (s *screen) waitFor(t *testing.T, want string, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for strings.Count(s.String(), want) < n {
		select {
		case <-s.changed:
		case <-timeout:
			t.Fatalf("the terminal never showed %q (%d times); it shows:\n%s", want, n, s.String())
		}
	}
}

// fakeClock is a clock the test moves. The terminal reads it when it shows
// a question and for every input it reads: each reading is reported on
// read, so that a test knows a key has been judged before it moves the
// clock or types the next one.
type fakeClock struct {
	ns   atomic.Int64
	read chan struct{}
}

func (c *fakeClock) now() time.Time {
	// Read first, then report: once the test hears of the reading, moving
	// the clock cannot change what this input was judged at.
	now := time.Unix(0, c.ns.Load())
	c.read <- struct{}{}
	return now
}
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newClock() *fakeClock {
	c := &fakeClock{read: make(chan struct{}, 64)}
	c.ns.Store(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

// judged waits until the terminal has read the clock for one more input.
func (c *fakeClock) judged(t *testing.T) {
	t.Helper()
	select {
	case <-c.read:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal read no input")
	}
}

// typeOne writes in and waits until the terminal has read and judged it,
// so that the next input is a read of its own.
func typeOne(t *testing.T, ptmx *os.File, clock *fakeClock, in string) {
	t.Helper()
	ptmx.Write([]byte(in))
	clock.judged(t)
}

// newPTY returns a Terminal on the slave side of a pseudo-terminal, the
// master to type into, and the screen.
func newPTY(t *testing.T, opts Options) (*Terminal, *os.File, *screen) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	scr := newScreen()
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			scr.write(b[:n])
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
	clock.judged(t) // the question is shown
	scr.waitFor(t, "choice: ", 1)
	// A key at once (the clock has not moved): a misclick, ignored; so is
	// one just before the grace ends ([1] would be Always Allow).
	typeOne(t, ptmx, clock, "1")
	clock.add(DefaultGrace - time.Millisecond)
	typeOne(t, ptmx, clock, "1")
	clock.add(time.Millisecond)
	ptmx.Write([]byte("2"))
	if a := waitAnswer(t, ch); a.err != nil || a.id != "allow" {
		t.Fatalf("Ask = %+v, want allow (the keys within the grace ignored)", a)
	}
}

// inputQueued waits until the terminal's input holds n bytes not read yet:
// a poll, the kernel's count having no event to wait on.
func inputQueued(t *testing.T, term *Terminal, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q, err := unix.IoctlGetInt(int(term.in.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Skipf("TIOCINQ: %v", err)
		}
		if q >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAskDiscardsTypeahead(t *testing.T) {
	term, ptmx, scr := newPTY(t, Options{Grace: -1})
	// Typed before the question (a whole line: the terminal is not in
	// cbreak mode yet, so that a partial line would not be readable).
	ptmx.Write([]byte("1\n")) // [1] is Always Allow
	inputQueued(t, term, 2)
	ch := ask(term, context.Background(), question)
	scr.waitFor(t, "choice: ", 1)
	ptmx.Write([]byte("3"))
	// Had the type-ahead been kept, it would have been read first.
	if a := waitAnswer(t, ch); a.id != "reject" {
		t.Fatalf("Ask = %+v, want reject", a)
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
			// A grace of 1 ns that is long over: keys count, and the clock
			// tells when each input was read on its own.
			clock := newClock()
			term, ptmx, scr := newPTY(t, Options{Grace: time.Nanosecond, Now: clock.now})
			ch := ask(term, context.Background(), question)
			clock.judged(t)
			clock.add(time.Second)
			scr.waitFor(t, "choice: ", 1)
			for _, in := range tt.input[:len(tt.input)-1] {
				typeOne(t, ptmx, clock, in)
			}
			ptmx.Write([]byte(tt.input[len(tt.input)-1]))
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
	// A second question waits for the first to be answered: withdrawn
	// while it waits, it was never shown. (Shown, it would have written
	// its question and "(withdrawn)" before Ask returned, so before the
	// first's answer below.)
	ctx, cancel := context.WithCancel(context.Background())
	second := ask(term, ctx, question)
	cancel()
	if a := waitAnswer(t, second); !errors.Is(a.err, context.Canceled) {
		t.Fatalf("second = %+v", a)
	}
	// A third waits too, and is asked once the first is answered.
	third := ask(term, context.Background(), question)
	ptmx.Write([]byte("2"))
	if a := waitAnswer(t, first); a.id != "allow" {
		t.Fatalf("first = %+v", a)
	}
	scr.waitFor(t, "choice: ", 2)
	ptmx.Write([]byte("3"))
	if a := waitAnswer(t, third); a.id != "reject" {
		t.Fatalf("third = %+v", a)
	}
	got := scr.String()
	answered := strings.Index(got, "→ Allow")
	if before := got[:answered]; strings.Count(before, "choice: ") != 1 || strings.Contains(before, "(withdrawn)") {
		t.Fatalf("a question was shown while another waited for its answer:\n%s", got)
	}
	if strings.Count(got[answered:], "choice: ") != 1 {
		t.Fatalf("the third question was not shown once after the first's answer:\n%s", got)
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
	got := render(q, -1)
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Fatalf("control characters reached the terminal: %q", got)
	}
}

// TestAskReason: the reason key rejects with the first reject option and
// reads a line (Backspace erases, control bytes are dropped); Ask offers
// no such key.
func TestAskReason(t *testing.T) {
	term, ptmx, scr := newPTY(t, Options{Grace: -1})
	ch := make(chan Answer, 1)
	errs := make(chan error, 1)
	go func() {
		a, err := term.AskReason(context.Background(), question)
		ch <- a
		errs <- err
	}()
	scr.waitFor(t, "choice: ", 1)
	if !strings.Contains(scr.String(), "[R] Reject, and type a reason") {
		t.Fatalf("the reason key is not shown:\n%s", scr.String())
	}
	ptmx.Write([]byte("Ruse make cleanx\x7f\x01\r"))
	var a Answer
	select {
	case a = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("AskReason did not return")
	}
	if err := <-errs; err != nil || a != (Answer{ID: "reject", Reason: "use make clean"}) {
		t.Fatalf("AskReason = %+v, %v", a, err)
	}

	// Ask alone: R is no key, the next key answers.
	ch2 := ask(term, context.Background(), question)
	scr.waitFor(t, "choice: ", 2)
	ptmx.Write([]byte("R2"))
	if got := waitAnswer(t, ch2); got.err != nil || got.id != "allow" {
		t.Fatalf("Ask = %+v", got)
	}
}
