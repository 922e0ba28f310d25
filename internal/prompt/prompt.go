package prompt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/permhost/permhost/internal/safetext"
)

// DefaultGrace is how long after a question appears keypresses are ignored.
const DefaultGrace = 200 * time.Millisecond

// Errors of Ask and Open.
var (
	// ErrNotTerminal means the input is not a terminal.
	ErrNotTerminal = errors.New("prompt: input is not a terminal")
	// ErrDeclined means the person pressed Esc: no option chosen.
	ErrDeclined = errors.New("prompt: the person declined to choose")
	// ErrHangup means the terminal's input ended before an answer.
	ErrHangup = errors.New("prompt: the terminal's input ended")
)

// Option is one choice offered to the person.
type Option struct {
	ID   string
	Name string
	// Kind is allow_once, allow_always, reject_once or reject_always.
	Kind string
}

// Explanation is what one plugin said about the request.
type Explanation struct {
	Plugin  string
	Summary string
	Risk    string
	// RiskLevel is low, medium or high; empty when not given.
	RiskLevel string
	Reason    string
}

// Path is a file the call touches.
type Path struct {
	Path string
	// Access is read or write.
	Access string
	// Outside is true when the path lies outside the session directory.
	Outside bool
}

// Question is one permission request as shown to the person.
type Question struct {
	Title string
	// Kind is the ACP tool kind (execute, edit, ...).
	Kind string
	// Command is the shell command, when there is one.
	Command string
	Paths   []Path
	// Explanations are shown in order, with their risk.
	Explanations []Explanation
	// Reason says why a person is asked (what the plugins said, or why
	// they could not decide).
	Reason string
	// Deadline, when set, is shown: what happens then is the caller's
	// business (Expiry says what).
	Deadline time.Time
	Expiry   string
	// Options are the choices, one key each, in order.
	Options []Option
}

// Options configure a Terminal.
type Options struct {
	// Grace is how long keypresses are ignored after a question appears;
	// 0 means DefaultGrace, negative none.
	Grace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Terminal asks questions on a terminal. Its methods are safe for
// concurrent use; questions are asked one at a time.
type Terminal struct {
	in    *os.File
	out   io.Writer
	grace time.Duration
	now   func() time.Time
	turn  chan struct{} // holds one token: the right to ask
}

// Open returns a Terminal reading keys from in, which must be a terminal
// (ErrNotTerminal otherwise), and writing questions to out.
func Open(in *os.File, out io.Writer, opts Options) (*Terminal, error) {
	if !IsTerminal(in) {
		return nil, ErrNotTerminal
	}
	t := &Terminal{in: in, out: out, grace: opts.Grace, now: opts.Now, turn: make(chan struct{}, 1)}
	if t.grace == 0 {
		t.grace = DefaultGrace
	}
	if t.now == nil {
		t.now = time.Now
	}
	t.turn <- struct{}{}
	return t, nil
}

// keys are the keys of the options, in order.
const keys = "123456789abcdefghijklmnopqrstuvwxyz"

// Ask shows q and returns the id of the option the person chose. It
// returns ErrDeclined on Esc, ErrHangup when the input ends, and ctx.Err()
// when ctx ends first (the question is then marked withdrawn).
func (t *Terminal) Ask(ctx context.Context, q Question) (string, error) {
	a, err := t.ask(ctx, q, false)
	return a.ID, err
}

// Answer is the person's answer: the option chosen and, for a reject, the
// reason the person typed ("" for none).
type Answer struct {
	ID, Reason string
}

// ReasonKey is the key that rejects with a reason: it chooses the first
// reject option shown and reads a line, the reason, up to Enter.
const ReasonKey = 'R'

// maxReasonBytes bounds a typed reason.
const maxReasonBytes = 1000

// AskReason is Ask that also offers ReasonKey when a reject option is
// shown: the person may then type why, which permhost tells the agent's
// model ([session] reasons). Esc while typing rejects without a reason.
func (t *Terminal) AskReason(ctx context.Context, q Question) (Answer, error) {
	return t.ask(ctx, q, true)
}

// firstReject returns the index of the first reject option, or -1.
func firstReject(opts []Option) int {
	for i, o := range opts {
		if strings.HasPrefix(o.Kind, "reject") {
			return i
		}
	}
	return -1
}

func (t *Terminal) ask(ctx context.Context, q Question, reasons bool) (Answer, error) {
	if len(q.Options) == 0 {
		return Answer{}, errors.New("prompt: no options to choose from")
	}
	if len(q.Options) > len(keys) {
		q.Options = q.Options[:len(keys)]
	}
	reject := -1
	if reasons {
		reject = firstReject(q.Options)
	}
	select {
	case <-t.turn:
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
	defer func() { t.turn <- struct{}{} }()

	restore, err := cbreak(t.in)
	if err != nil {
		return Answer{}, fmt.Errorf("prompt: %w", err)
	}
	defer restore()
	discardTypeahead(t.in)
	// The grace runs from the moment the question is written: a key read
	// sooner cannot be an answer to it.
	shown := t.now()
	io.WriteString(t.out, render(q, reject))
	var buf [64]byte
	for {
		n, err := readKeys(ctx, t.in, buf[:])
		if err != nil {
			return Answer{}, t.readFailed(ctx)
		}
		if t.grace > 0 && t.now().Sub(shown) < t.grace {
			continue // too soon to be an answer to this question
		}
		chunk := buf[:n]
		if chunk[0] == 0x1b { // Esc alone declines; an escape sequence (arrow keys...) is ignored
			if n == 1 {
				fmt.Fprintln(t.out, "\r\n  → declined")
				return Answer{}, ErrDeclined
			}
			continue
		}
		for j, k := range chunk {
			if k == ReasonKey && reject >= 0 {
				o := q.Options[reject]
				fmt.Fprintf(t.out, "%c\r\n  → %s; reason (Enter to send): ", k, safetext.Terminal(label(o)))
				why, err := t.readLine(ctx, chunk[j+1:])
				if err != nil {
					return Answer{}, err
				}
				return Answer{ID: o.ID, Reason: why}, nil
			}
			if i := strings.IndexByte(keys, k); i >= 0 && i < len(q.Options) {
				o := q.Options[i]
				fmt.Fprintf(t.out, "%c\r\n  → %s\r\n", k, safetext.Terminal(label(o)))
				return Answer{ID: o.ID}, nil
			}
		}
	}
}

// readFailed is the error of a read that ended: ctx's, or ErrHangup.
func (t *Terminal) readFailed(ctx context.Context) error {
	if ctx.Err() != nil {
		fmt.Fprintln(t.out, "\r\n  (withdrawn)")
		return ctx.Err()
	}
	fmt.Fprintln(t.out, "\r\n  (no answer: the terminal's input ended)")
	return ErrHangup
}

// readLine reads a line in cbreak mode, echoing it, starting with the
// bytes already read: Enter ends it, Backspace erases, Esc ends it empty.
// Control bytes are dropped.
func (t *Terminal) readLine(ctx context.Context, pending []byte) (string, error) {
	var line []byte
	var buf [64]byte
	for {
		for _, c := range pending {
			switch {
			case c == '\r' || c == '\n':
				fmt.Fprint(t.out, "\r\n")
				return strings.ToValidUTF8(strings.TrimSpace(string(line)), ""), nil
			case c == 0x1b:
				fmt.Fprint(t.out, "\r\n  (no reason)\r\n")
				return "", nil
			case c == 0x7f || c == 0x08:
				if len(line) > 0 {
					// Erase a whole UTF-8 sequence.
					i := len(line) - 1
					for i > 0 && line[i]&0xc0 == 0x80 {
						i--
					}
					line = line[:i]
					fmt.Fprint(t.out, "\b \b")
				}
			case c < 0x20:
			case len(line) < maxReasonBytes:
				line = append(line, c)
				t.out.Write([]byte{c})
			}
		}
		n, err := readKeys(ctx, t.in, buf[:])
		if err != nil {
			return "", t.readFailed(ctx)
		}
		pending = buf[:n]
	}
}

func label(o Option) string {
	if o.Name == "" {
		return o.ID
	}
	return o.Name
}

// render formats the question for a terminal in cbreak mode ("\r\n" line
// ends, no colours: the output may be a log). Every field is the agent's,
// a worker's or a plugin's, and goes through safetext. reject is the index
// of the option the reason key rejects with, or -1 for no reason key.
func render(q Question, reject int) string {
	var b strings.Builder
	line := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteString("\r\n")
	}
	line("")
	title := q.Title
	if title == "" {
		title = "(untitled tool call)"
	}
	if q.Kind != "" {
		line("permission requested [%s]: %s", text(q.Kind), text(title))
	} else {
		line("permission requested: %s", text(title))
	}
	if q.Command != "" {
		for i, l := range strings.Split(strings.TrimRight(q.Command, "\n"), "\n") {
			if i == 0 {
				line("  command: %s", text(l))
			} else {
				line("           %s", text(l))
			}
		}
	}
	for _, p := range q.Paths {
		where := ""
		if p.Outside {
			where = " (outside the project)"
		}
		line("  %-5s %s%s", text(p.Access), text(p.Path), where)
	}
	for _, x := range q.Explanations {
		risk := ""
		if x.RiskLevel != "" {
			risk = " [" + text(strings.ToUpper(x.RiskLevel)) + " risk]"
		}
		summary := x.Summary
		if x.Risk != "" {
			summary += " Risk: " + x.Risk
		}
		if summary == "" {
			summary = x.Reason
		}
		line("  %s%s: %s", text(x.Plugin), risk, text(summary))
	}
	if q.Reason != "" {
		line("  why you are asked: %s", text(q.Reason))
	}
	for i, o := range q.Options {
		line("  [%c] %s (%s)", keys[i], text(label(o)), text(o.Kind))
	}
	if reject >= 0 {
		line("  [%c] %s, and type a reason the agent is told", ReasonKey, text(label(q.Options[reject])))
	}
	hint := "  Esc: decline"
	if !q.Deadline.IsZero() {
		expiry := q.Expiry
		if expiry == "" {
			expiry = "no answer"
		}
		hint += fmt.Sprintf(" · %s at %s", text(expiry), q.Deadline.Format("15:04:05"))
	}
	line("%s", hint)
	b.WriteString("  choice: ")
	return b.String()
}

// text is how render shows a field: on one line, escaped.
func text(s string) string { return safetext.Terminal(s) }
