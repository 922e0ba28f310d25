package acptest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Side is the peer a [Player] acts as.
type Side int

const (
	// Client plays the editor: it sends the client->agent lines.
	Client Side = iota + 1
	// Agent plays the agent: it sends the agent->client lines.
	Agent
)

func (s Side) String() string {
	switch s {
	case Client:
		return "client"
	case Agent:
		return "agent"
	}
	return fmt.Sprintf("Side(%d)", int(s))
}

// sends is the direction of the lines this side writes.
func (s Side) sends() Direction {
	if s == Client {
		return ClientToAgent
	}
	return AgentToClient
}

// DefaultLineTimeout is how long a player waits for each expected line when
// Player.LineTimeout is zero.
const DefaultLineTimeout = 10 * time.Second

// ErrUnexpectedEOF reports that the peer's stream ended while lines were still
// expected.
var ErrUnexpectedEOF = errors.New("acptest: stream ended before the transcript did")

// Player plays one side of a transcript over a byte stream. It writes its own
// side's lines in transcript order, as fast as the order allows: a line is
// written only once every line of the other side that precedes it in the
// transcript has been received. It checks that the other side's lines arrive
// in order and byte for byte. Timestamps are ignored.
type Player struct {
	Side Side
	// LineTimeout bounds the wait for each expected line; zero means
	// DefaultLineTimeout.
	LineTimeout time.Duration
	// CloseAfterScript closes the writer once every line has been exchanged
	// (a client hanging up). Either way Play then reads until end of stream
	// and fails on any further line.
	CloseAfterScript bool
}

// MismatchError reports a received line that differs from the transcript.
type MismatchError struct {
	Seq  int       // transcript seq of the expected line; 0 if none was expected
	Dir  Direction // direction of the expected line
	Want []byte    // expected bytes, newline included; nil if none was expected
	Got  []byte    // received bytes, newline included if there was one
}

func (e *MismatchError) Error() string {
	if e.Want == nil {
		return fmt.Sprintf("acptest: unexpected %s line after the end of the transcript (%d bytes):\n  got: %s",
			e.Dir, len(e.Got), snippet(e.Got, 0, 300))
	}
	return fmt.Sprintf("acptest: seq %d (%s) differs: %s", e.Seq, e.Dir, Diff(e.Want, e.Got))
}

// TimeoutError reports an expected line that did not arrive in time.
type TimeoutError struct {
	Seq  int
	Dir  Direction
	Want []byte
	Wait time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("acptest: seq %d (%s) not received within %v; waiting for:\n  %s",
		e.Seq, e.Dir, e.Wait, snippet(e.Want, 0, 300))
}

// Diff describes how got differs from want: lengths, the offset of the first
// differing byte and both texts around it.
func Diff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return "no difference"
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("first difference at byte %d (want %d bytes, got %d bytes)\n  want: %s\n   got: %s",
		i, len(want), len(got), snippet(want, i, 80), snippet(got, i, 80))
}

// snippet quotes b around offset at, at most width bytes each side.
func snippet(b []byte, at, width int) string {
	lo, hi := max(at-width, 0), min(at+width, len(b))
	s := fmt.Sprintf("%q", b[lo:hi])
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(b) {
		s += "…"
	}
	return s
}

type received struct {
	line []byte
	err  error
}

// Play runs the player's side of tr, reading the other side's lines from r and
// writing its own to w. It returns nil once every line is exchanged and the
// stream r has ended with nothing further on it. Cancelling ctx stops Play,
// but a read in progress continues until r is closed by its owner.
func (p *Player) Play(ctx context.Context, tr *Transcript, r io.Reader, w io.Writer) error {
	if p.Side != Client && p.Side != Agent {
		return fmt.Errorf("acptest: Player.Side %v is neither Client nor Agent", p.Side)
	}
	timeout := p.LineTimeout
	if timeout <= 0 {
		timeout = DefaultLineTimeout
	}
	out := p.Side.sends()
	var want []Entry // the other side's lines, in order
	for _, e := range tr.Entries {
		if e.Dir != out {
			want = append(want, e)
		}
	}

	lines := make(chan received)
	stop := make(chan struct{})
	defer close(stop)
	go readLines(r, lines, stop)

	got := 0 // how many of want have been received and checked
	// await receives and checks lines until got reaches n.
	await := func(n int) error {
		for got < n {
			e := want[got]
			timer := time.NewTimer(timeout)
			select {
			case <-ctx.Done():
				timer.Stop()
				return fmt.Errorf("acptest: waiting for seq %d (%s): %w", e.Seq, e.Dir, context.Cause(ctx))
			case <-timer.C:
				return &TimeoutError{Seq: e.Seq, Dir: e.Dir, Want: line(e.Msg), Wait: timeout}
			case rcv := <-lines:
				timer.Stop()
				if rcv.err != nil {
					return fmt.Errorf("%w: waiting for seq %d (%s): %w", ErrUnexpectedEOF, e.Seq, e.Dir, rcv.err)
				}
				if wl := line(e.Msg); !bytes.Equal(wl, rcv.line) {
					return &MismatchError{Seq: e.Seq, Dir: e.Dir, Want: wl, Got: rcv.line}
				}
				got++
			}
		}
		return nil
	}

	before := 0 // lines of the other side that precede the current entry
	for _, e := range tr.Entries {
		if e.Dir != out {
			before++
			continue
		}
		if err := await(before); err != nil {
			return err
		}
		if _, err := w.Write(line(e.Msg)); err != nil {
			return fmt.Errorf("acptest: writing seq %d (%s): %w", e.Seq, e.Dir, err)
		}
	}
	if err := await(len(want)); err != nil {
		return err
	}
	if p.CloseAfterScript {
		if c, ok := w.(io.Closer); ok {
			if err := c.Close(); err != nil {
				return fmt.Errorf("acptest: closing after the transcript: %w", err)
			}
		}
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("acptest: waiting for end of stream: %w", context.Cause(ctx))
	case rcv := <-lines:
		if rcv.err == io.EOF {
			return nil
		}
		if rcv.err != nil {
			return fmt.Errorf("acptest: reading after the transcript: %w", rcv.err)
		}
		var dir Direction = AgentToClient
		if out == AgentToClient {
			dir = ClientToAgent
		}
		return &MismatchError{Dir: dir, Got: rcv.line}
	}
}

// line returns msg followed by a newline, as sent on the wire.
func line(msg []byte) []byte {
	b := make([]byte, 0, len(msg)+1)
	return append(append(b, msg...), '\n')
}

// readLines sends each line of r (newline kept) on lines until an error,
// which it sends last. An unterminated last line is sent as is, then io.EOF.
func readLines(r io.Reader, lines chan<- received, stop <-chan struct{}) {
	br := bufio.NewReader(r)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			select {
			case lines <- received{line: b}:
			case <-stop:
				return
			}
		}
		if err != nil {
			select {
			case lines <- received{err: err}:
			case <-stop:
			}
			return
		}
	}
}
