package acp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// lineSink reads what a writer writes, line by line.
func lineSink(t *testing.T, r io.Reader) <-chan string {
	ch := make(chan string, 1024)
	go func() {
		br := bufio.NewReader(r)
		for {
			s, err := br.ReadString('\n')
			if s != "" {
				ch <- s
			}
			if err != nil {
				close(ch)
				return
			}
		}
	}()
	return ch
}

// Lines queued after a slot wait for it; a message not tied to the peer's
// order goes ahead of them; a message in order waits with them; a slot
// filled after the writer went past it (released) is written on its own.
func TestWriterSlots(t *testing.T) {
	r, pw := io.Pipe()
	w := newWriter(pw, nil)
	got := lineSink(t, r)
	w.forward([]byte("a\n"), nil)
	expect(t, "before any slot", readLine(t, got, "sink"), "a\n")
	s1, s2 := w.newSlot(), w.newSlot()
	w.place(s1, nil)
	w.forward([]byte("b\n"), nil)
	w.place(s2, nil)
	w.messageInOrder([]byte("c"))
	w.message([]byte("own"))
	expect(t, "an own message goes ahead", readLine(t, got, "sink"), "own\n")
	s2.fill([]byte("second"))
	s1.fill([]byte("first"))
	for _, want := range []string{"first\n", "b\n", "second\n", "c\n"} {
		expect(t, "in order", readLine(t, got, "sink"), want)
	}
	s3 := w.newSlot()
	w.place(s3, nil)
	w.forward([]byte("d\n"), nil)
	if !s3.release() {
		t.Fatal("a waiting slot was not released")
	}
	expect(t, "released", readLine(t, got, "sink"), "d\n")
	s3.fill([]byte("late"))
	expect(t, "a late fill on its own", readLine(t, got, "sink"), "late\n")
	w.closeAfter(true)
	if _, ok := <-got; ok {
		t.Fatal("more after the close")
	}
}

// A batch with a slot waits for it and is written with the slot's message
// in the element's place; a released slot leaves the batch; a batch left
// empty is not written.
func TestWriterBatches(t *testing.T) {
	r, pw := io.Pipe()
	w := newWriter(pw, nil)
	got := lineSink(t, r)
	s1, s2, s3 := w.newSlot(), w.newSlot(), w.newSlot()
	w.placeBatch(&batchOut{parts: []batchPart{{raw: []byte(`1`)}, {slot: s1}, {raw: []byte(`3`)}}, term: []byte("\r\n")}, nil)
	w.placeBatch(&batchOut{parts: []batchPart{{raw: []byte(`4`)}, {slot: s2}}, term: []byte("\n")}, nil)
	w.placeBatch(&batchOut{parts: []batchPart{{slot: s3}}, term: []byte("\n")}, nil)
	w.forward([]byte("after\n"), nil)
	s1.fill([]byte(`2`))
	expect(t, "filled in place", readLine(t, got, "sink"), "[1,2,3]\r\n")
	s2.release()
	expect(t, "released, left out", readLine(t, got, "sink"), "[4]\n")
	s3.release()
	expect(t, "nothing left: not written", readLine(t, got, "sink"), "after\n")
	s2.fill([]byte(`5`))
	expect(t, "the late answer on its own", readLine(t, got, "sink"), "5\n")
	w.closeNow()
}

// A peer that stops reading stalls only its own writer: queuing never
// waits for the write in progress, forward waits only past the bound, and
// closeNow ends a blocked write.
func TestWriterStalledPeer(t *testing.T) {
	r, pw := io.Pipe() // nobody reads r until the end
	w := newWriter(pw, nil)
	// Five quarters of the bound: one may be in the blocked write, the rest
	// reach it.
	big := bytes.Repeat([]byte("x"), maxQueuedBytes/4)
	for range 5 {
		if err := w.forward(append(big[:len(big):len(big)], '\n'), nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 1000 { // never waits, full or not
		w.message([]byte("own"))
		w.messageInOrder([]byte("own"))
	}
	blocked := make(chan error)
	go func() { blocked <- w.forward([]byte("over the bound\n"), nil) }()
	w.closeNow()
	if err := <-blocked; !errors.Is(err, ErrClosed) {
		t.Fatalf("forward past the bound after closeNow: %v", err)
	}
	<-w.done
	if err := w.message([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("message after closeNow: %v", err)
	}
	r.Close()
}

// An own message after a forwarded line without terminator starts a new
// line.
func TestWriterOpenLine(t *testing.T) {
	var b strings.Builder
	w := newWriter(&b, nil)
	w.forward([]byte("last, unterminated"), nil)
	w.message([]byte("own"))
	w.closeAfter(false)
	<-w.done
	expect(t, "output", b.String(), "last, unterminated\nown\n")
}

// A line's release runs once it is written, or when it is dropped.
func TestWriterReleases(t *testing.T) {
	var b strings.Builder
	w := newWriter(&b, nil)
	released := make(chan string, 2)
	w.forward([]byte("a\n"), func() { released <- "a" })
	expect(t, "written, released", <-released, "a")
	s := w.newSlot()
	w.place(s, nil)
	w.forward([]byte("b\n"), func() { released <- "b" })
	w.closeNow()
	expect(t, "dropped, released", <-released, "b")
	if err := w.forward([]byte("c\n"), func() { released <- "c" }); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	expect(t, "refused, released", <-released, "c")
}

// chunkyReader returns its bytes in reads of the sizes it is given, in turn.
type chunkyReader struct {
	b     []byte
	sizes []int
	i     int
}

func (c *chunkyReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.b), c.sizes[c.i%len(c.sizes)])
	c.i++
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// The agent's lines reach the client byte for byte and in order, however
// reads cut them: plain lines queued as runs (copied, or handed over with
// their buffer), lines of the strict path between them, lines longer than
// the buffer, an unterminated last line.
func TestForwardedRunsKeepBytesAndOrder(t *testing.T) {
	plain := func(n int) string {
		head := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`
		return head + strings.Repeat(string(rune('a'+n%26)), n) + `"}}}}` + "\n"
	}
	var in strings.Builder
	for i := range 3000 {
		switch {
		case i%97 == 0:
			in.WriteString(`{"jsonrpc":"2.0","method":"_x/note","params":{"i":` + strings.Repeat("1", i%7+1) + "}}\r\n")
		case i%401 == 0:
			in.WriteString(plain(3*readBufferSize + i))
		case i%13 == 0 && i < 1500:
			in.WriteString("not json\n")
		default:
			in.WriteString(plain(i % 2000))
		}
	}
	in.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{}}`) // no terminator
	want := in.String()
	for _, sizes := range [][]int{{1 << 20}, {readBufferSize}, {1, 7, 4096, 70000, 300}, {readBufferSize - 1, 3}} {
		p, err := NewProxy(Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		clientIn, clientW := io.Pipe()
		clientW.Close()
		if err := p.Run(t.Context(), clientIn, &out, io.Discard, &chunkyReader{b: []byte(want), sizes: sizes}); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != want {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("reads of %v: the client got %d bytes, want %d; first difference at %d: %.80q", sizes, len(got), len(want), i, got[i:])
		}
	}
}
