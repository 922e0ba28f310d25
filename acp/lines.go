package acp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
	"time"
)

// Buffer sizes of the proxy's readers and writers. Lines that fit in the read
// buffer are forwarded straight from it, without a copy of their own.
const (
	readBufferSize  = 64 << 10
	writeBufferSize = 64 << 10
	// keepBigBuffer is the largest assembled-line buffer kept for reuse.
	keepBigBuffer = 4 << 20
)

// DefaultMaxLineBytes is the default cap on one line: ACP has no size limit
// (base64 images, whole files), so the cap only guards against a runaway peer.
const DefaultMaxLineBytes = 1 << 30

// lineReader reads lines, terminator included, of any length up to max.
type lineReader struct {
	r    *bufio.Reader
	max  int
	from string
	big  []byte
}

func newLineReader(r io.Reader, max int, from string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, readBufferSize), max: max, from: from}
}

// next returns the next line including its terminator, if any (the last
// line of a stream may have none). The slice is valid until the next call.
// At the end of the stream it returns io.EOF.
func (l *lineReader) next() ([]byte, error) {
	if cap(l.big) > keepBigBuffer {
		l.big = nil
	}
	line, err := l.r.ReadSlice('\n')
	switch {
	case err == nil:
		return line, nil
	case errors.Is(err, bufio.ErrBufferFull):
	case err == io.EOF && len(line) > 0:
		return line, nil
	default:
		return nil, err
	}
	l.big = append(l.big[:0], line...)
	for {
		line, err = l.r.ReadSlice('\n')
		n := len(l.big) + len(line)
		if n > l.max {
			return nil, &LineTooLongError{From: l.from, Limit: l.max}
		}
		if n > cap(l.big) { // double: append's gentler growth copies a huge line many times
			l.big = append(make([]byte, 0, 2*n), l.big...)
		}
		l.big = append(l.big, line...)
		switch {
		case err == nil:
			return l.big, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			return l.big, nil
		default:
			return nil, err
		}
	}
}

// moreBuffered reports whether a whole further line is already buffered, in
// which case the writer need not flush yet: the next line follows at once.
func (l *lineReader) moreBuffered() bool {
	n := l.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := l.r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// outWriter serialises whole lines onto one peer's input. The first write
// error is sticky and reported once to onError; later writes are dropped.
//
// Lines are written in the order of the calls, except behind an answer slot
// (reserve): forwarded lines that come after a slot wait in memory until the
// slot is filled or released, so that a handler's answer keeps its place in
// the peer's stream without the forwarding loop waiting for the handler.
// Messages of permhost's own (message) are not ordered with forwarded lines
// and never wait.
type outWriter struct {
	mu      sync.Mutex
	bw      *bufio.Writer
	dst     io.Writer
	err     error
	onError func(error)
	// open is true when the last forwarded line had no terminator (a peer's
	// final line): a message of permhost's own then starts a new line.
	open bool

	held      []heldLine // forwarded lines and slots waiting behind the first slot
	heldBytes int
	drained   sync.Cond // signalled when held shrinks or the writer fails
}

// maxHeldBytes bounds the forwarded bytes held behind answer slots: past it,
// forward waits until the slots ahead are filled or released.
const maxHeldBytes = 16 << 20

// heldLine is a forwarded line (a copy), a message of permhost's own to
// keep in order with them (msg), or an answer slot.
type heldLine struct {
	line []byte
	msg  bool
	slot *answerSlot
}

// answerSlot is a place in an outWriter's stream reserved for a message
// that is not written yet.
type answerSlot struct {
	o      *outWriter
	timer  *time.Timer
	state  slotState
	body   []byte
	passed bool // no longer held: a later fill is written at once
}

type slotState uint8

const (
	slotWaiting slotState = iota
	slotFilled
	slotReleased
)

func newOutWriter(w io.Writer, onError func(error)) *outWriter {
	o := &outWriter{bw: bufio.NewWriterSize(w, writeBufferSize), dst: w, onError: onError}
	o.drained.L = &o.mu
	return o
}

// forward writes line (terminator included) and flushes unless more is
// coming right away. Behind an answer slot it keeps a copy instead.
func (o *outWriter) forward(line []byte, flush bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if len(o.held) > 0 {
		o.held = append(o.held, heldLine{line: bytes.Clone(line)})
		o.heldBytes += len(line)
		for o.heldBytes > maxHeldBytes && len(o.held) > 0 && o.err == nil {
			o.drained.Wait()
		}
		return o.err
	}
	err := o.writeLineLocked(line)
	if err == nil && flush {
		err = o.bw.Flush()
	}
	return o.fail(err)
}

func (o *outWriter) writeLineLocked(line []byte) error {
	_, err := o.bw.Write(line)
	if len(line) > 0 {
		o.open = line[len(line)-1] != '\n'
	}
	return err
}

// writeMessageLocked writes body and "\n" on a line of its own.
func (o *outWriter) writeMessageLocked(body []byte) error {
	var err error
	if o.open {
		err = o.bw.WriteByte('\n')
		o.open = false
	}
	if err == nil {
		_, err = o.bw.Write(body)
	}
	if err == nil {
		err = o.bw.WriteByte('\n')
	}
	return err
}

// message writes body followed by "\n" and flushes, ahead of any held
// forwarded lines.
func (o *outWriter) message(body []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	return o.flushMessageLocked(body)
}

// flushMessageLocked writes body on a line of its own and flushes.
func (o *outWriter) flushMessageLocked(body []byte) error {
	err := o.writeMessageLocked(body)
	if err == nil {
		err = o.bw.Flush()
	}
	return o.fail(err)
}

// messageInOrder is message for a message that must follow the lines
// forwarded before it: behind an answer slot it is held with them.
func (o *outWriter) messageInOrder(body []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if len(o.held) == 0 {
		return o.flushMessageLocked(body)
	}
	o.held = append(o.held, heldLine{line: bytes.Clone(body), msg: true})
	o.heldBytes += len(body)
	return nil
}

// reserve holds the lines forwarded from now on until the returned slot is
// filled, or released: at the latest after wait, when onRelease (if not
// nil) is called and the held lines go on without it.
func (o *outWriter) reserve(wait time.Duration, onRelease func()) *answerSlot {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := &answerSlot{o: o}
	if o.err != nil {
		s.state, s.passed = slotReleased, true
		return s
	}
	o.held = append(o.held, heldLine{slot: s})
	s.timer = time.AfterFunc(wait, func() {
		if s.release() && onRelease != nil {
			onRelease()
		}
	})
	return s
}

// fill writes body in the slot's place: now, if nothing before it is held,
// and then the lines held behind it.
func (s *answerSlot) fill(body []byte) error {
	o := s.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	if o.err != nil {
		return o.err
	}
	if s.state == slotFilled {
		return nil
	}
	if s.passed {
		return o.flushMessageLocked(body)
	}
	s.state, s.body = slotFilled, body
	return o.drainLocked()
}

// release lets the lines held behind the slot go on; it reports whether the
// slot was still waiting.
func (s *answerSlot) release() bool {
	o := s.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if s.state != slotWaiting {
		return false
	}
	s.state = slotReleased
	_ = o.drainLocked()
	return true
}

// drainLocked writes the held lines up to the first slot still waiting.
func (o *outWriter) drainLocked() error {
	wrote := false
	var err error
	for len(o.held) > 0 && err == nil {
		h := o.held[0]
		if s := h.slot; s != nil {
			switch s.state {
			case slotWaiting:
				goto done
			case slotFilled:
				err = o.writeMessageLocked(s.body)
				s.body = nil
			}
			s.passed = true
		} else {
			if h.msg {
				err = o.writeMessageLocked(h.line)
			} else {
				err = o.writeLineLocked(h.line)
			}
			o.heldBytes -= len(h.line)
		}
		o.held[0] = heldLine{}
		o.held = o.held[1:]
		wrote = true
	}
done:
	if len(o.held) == 0 {
		o.held, o.heldBytes = nil, 0
	}
	if err == nil && wrote {
		err = o.bw.Flush()
	}
	o.drained.Broadcast()
	return o.fail(err)
}

// awaitHeld waits until nothing is held behind a slot (each is released
// after its wait at the latest) or the writer has failed.
func (o *outWriter) awaitHeld() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.held) > 0 && o.err == nil {
		o.drained.Wait()
	}
}

func (o *outWriter) flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	return o.fail(o.bw.Flush())
}

// close flushes and closes the destination when it is an io.Closer. Later
// writes fail with ErrClosed.
func (o *outWriter) close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil && errors.Is(o.err, ErrClosed) {
		return nil
	}
	var err error
	if o.err == nil {
		err = o.bw.Flush()
	}
	if c, ok := o.dst.(io.Closer); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	o.err = ErrClosed
	o.dropHeldLocked()
	return err
}

// dropHeldLocked forgets the held lines of a writer that has failed or is
// closed, and wakes their waiters.
func (o *outWriter) dropHeldLocked() {
	for _, h := range o.held {
		if h.slot != nil && h.slot.timer != nil {
			h.slot.timer.Stop()
		}
	}
	o.held, o.heldBytes = nil, 0
	o.drained.Broadcast()
}

// fail records err (if any) and reports it once; o.mu is held.
func (o *outWriter) fail(err error) error {
	if err == nil {
		return nil
	}
	o.err = err
	o.dropHeldLocked()
	if o.onError != nil {
		f := o.onError
		o.onError = nil
		go f(err)
	}
	return err
}
