package acp

import (
	"bufio"
	"io"
	"slices"
	"sync"
	"time"
)

// writer owns one peer's input. A goroutine of its own writes an ordered
// queue through a buffered writer and flushes whenever nothing more is ready;
// callers only queue, under a lock that is never held across I/O, so a peer
// that stops reading stalls its own direction and nothing else.
//
// The queue holds forwarded lines, messages of permhost's own, and answer
// slots: a place reserved for a message that is not written yet (the
// agent's answer to the editor's answer, which a handler is still turning
// into the agent's response). Lines queued after a slot wait until it is
// filled, or released after a while (at once when they fill the bound); a
// message of permhost's own that is not tied to the peer's order (message)
// goes ahead of the first waiting slot instead of waiting with them.
// Whatever a call accepted with a nil error is written unless the peer
// fails or closeNow gives up on it.
type writer struct {
	dst     io.Writer
	onError func(error) // called once, in a goroutine of its own, on the first write error

	mu      sync.Mutex
	cond    sync.Cond // signalled on every change of the queue or the state
	q       []item
	queued  int   // bytes of forwarded lines in q, for backpressure
	err     error // sticky: the first write error, or ErrClosed
	closing bool  // close dst once q is written
	closeIt bool  // whether closing closes dst
	done    chan struct{}
	closed  chan struct{} // closed once dst is closed or failed
	once    sync.Once     // closes dst
}

// maxQueuedBytes bounds the forwarded bytes waiting for a peer: past it,
// forward waits (the direction's reader stops reading) until the peer has
// taken some. A single line longer than that is still taken.
const maxQueuedBytes = 16 << 20

// answerOrderWait bounds how long the client's later lines are held behind
// its answer to a permission request while the handler turns that answer
// into the agent's response, so that the agent sees them in the client's
// order. Reading from the client goes on meanwhile.
const answerOrderWait = 2 * time.Second

// item is one entry of the queue: a forwarded line (as read, terminator
// included or not), a message of permhost's own (own: written on a line of
// its own), a slot, or a batch.
type item struct {
	line    []byte
	release func() // releases line once written or dropped; nil: nothing to do
	merge   bool   // line is the writer's own copy, which later forwarded lines may join
	chunk   []byte // the chunk (see getChunk) line lies in, put back once written
	own     bool
	slot    *answerSlot
	batch   *batchOut
}

// batchOut is a batch to write once its slots are settled: the remaining
// elements in order, each forwarded bytes or a slot, then the line's
// terminator. A batch left without elements is not written.
type batchOut struct {
	parts []batchPart
	term  []byte
}

type batchPart struct {
	raw  []byte
	slot *answerSlot
}

// answerSlot is a place in a writer's queue reserved for a message that is
// not written yet. Its fields are guarded by writer.mu.
type answerSlot struct {
	w      *writer
	wait   time.Duration // how long lines behind it wait; 0 means answerOrderWait
	timer  *time.Timer
	state  slotState
	body   []byte
	passed bool // the writer went past it: a later fill is written on its own
}

type slotState uint8

const (
	slotWaiting slotState = iota
	slotFilled
	slotReleased
)

func newWriter(dst io.Writer, onError func(error)) *writer {
	w := &writer{dst: dst, onError: onError, done: make(chan struct{}), closed: make(chan struct{})}
	w.cond.L = &w.mu
	go w.run()
	return w
}

// forward queues a forwarded line the writer may keep (the caller gives it
// up), and the function (or nil) that releases it once written or dropped.
// It waits while too much is queued already.
func (w *writer) forward(line []byte, release func()) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.roomLocked(); err != nil {
		if release != nil {
			release()
		}
		return err
	}
	w.q = append(w.q, item{line: line, release: release})
	w.queued += len(line)
	w.cond.Broadcast()
	return nil
}

// forwardChunk queues a run of forwarded lines that lies in chunk (a
// reader's buffer the caller gives up): the writer puts the chunk back once
// the run is written or dropped. It waits as forward does, and leaves
// waking the writer to wake.
func (w *writer) forwardChunk(run, chunk []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.roomLocked(); err != nil {
		putChunk(chunk)
		return err
	}
	w.q = append(w.q, item{line: run, chunk: chunk})
	w.queued += len(run)
	return nil
}

// forwardCopy queues a copy of forwarded lines the caller keeps (a run still
// in its reader's buffer), at most a chunk: consecutive copies share a
// chunk, so that the writer takes them in one go, and one that size goes
// past bufio without a second copy. It waits as forward does, and leaves
// waking the writer to wake.
func (w *writer) forwardCopy(run []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.roomLocked(); err != nil {
		return err
	}
	if n := len(w.q); n > 0 && w.q[n-1].merge && len(w.q[n-1].line)+len(run) <= cap(w.q[n-1].line) {
		w.q[n-1].line = append(w.q[n-1].line, run...)
	} else {
		it := item{merge: true}
		if len(run) <= chunkSize {
			it.chunk = getChunk()
			it.line = it.chunk[:0]
		}
		it.line = append(it.line, run...)
		w.q = append(w.q, it)
	}
	w.queued += len(run)
	return nil
}

// wake has the writer look at its queue (forwardChunk and forwardCopy leave
// it asleep: more follows at once). The caller queued under w.mu before, so
// the writer either sees the line or is waiting already.
func (w *writer) wake() { w.cond.Broadcast() }

// roomLocked waits while too much is queued (waking the writer first: a
// caller that did not kick it may have left it asleep) and returns the
// writer's error, if any. What waits only for a slot at the head of the
// queue is not worth waiting for: the slot is released (its answer is
// written on its own when it comes), since what fills it may be behind
// the lines the caller is about to stop reading (a held session start
// whose mode switch the agent answers after a burst of updates).
func (w *writer) roomLocked() error {
	if w.err == nil && len(w.q) > 0 && w.queued >= maxQueuedBytes {
		w.cond.Broadcast()
		for w.err == nil && len(w.q) > 0 && w.queued >= maxQueuedBytes {
			if w.releaseHeadLocked() {
				continue
			}
			w.cond.Wait()
		}
	}
	return w.err
}

// releaseHeadLocked releases the waiting slots of the queue's first item
// and reports whether there were any.
func (w *writer) releaseHeadLocked() bool {
	it := &w.q[0]
	released := false
	rel := func(s *answerSlot) {
		if s != nil && s.state == slotWaiting {
			if s.timer != nil {
				s.timer.Stop()
			}
			s.state, released = slotReleased, true
		}
	}
	rel(it.slot)
	if it.batch != nil {
		for _, p := range it.batch.parts {
			rel(p.slot)
		}
	}
	if released {
		w.cond.Broadcast()
	}
	return released
}

// message queues a message of permhost's own (without terminator) ahead of
// whatever waits behind a slot: it is not part of the peer's order.
func (w *writer) message(body []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.aheadLocked(body)
	return nil
}

// aheadLocked queues body as a message of permhost's own before the first
// item that waits for a slot.
func (w *writer) aheadLocked(body []byte) { w.insertAheadLocked(item{line: body, own: true}) }

// insertAheadLocked queues it before the first item that waits for a slot.
func (w *writer) insertAheadLocked(it item) {
	at := len(w.q)
	for i := range w.q {
		if !w.q[i].ready() {
			at = i
			break
		}
	}
	w.q = append(w.q, item{})
	copy(w.q[at+1:], w.q[at:])
	w.q[at] = it
	w.cond.Broadcast()
}

// answerAfter queues body, a message of permhost's own, as message does
// but never ahead of slot prev while prev is queued (nil: anywhere message
// puts it). It returns the filled slot body is queued in, for a later
// answer to follow in turn. With body nil the slot is queued empty, to be
// filled at once (Client.Deliver records the answer first).
func (w *writer) answerAfter(body []byte, prev *answerSlot) (*answerSlot, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	s := &answerSlot{w: w, state: slotFilled, body: body}
	if body == nil {
		s.state = slotWaiting
	}
	if prev != nil {
		for i := len(w.q) - 1; i >= 0; i-- {
			if !w.q[i].holds(prev) {
				continue
			}
			if !w.readyUpTo(i + 1) {
				w.q = slices.Insert(w.q, i+1, item{slot: s})
				w.cond.Broadcast()
				return s, nil
			}
			break
		}
	}
	w.insertAheadLocked(item{slot: s})
	return s, nil
}

// answerInOrder queues body, a message of permhost's own, after
// everything queued so far, as messageInOrder does, in a filled slot it
// returns (see answerAfter).
func (w *writer) answerInOrder(body []byte) (*answerSlot, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	s := &answerSlot{w: w, state: slotFilled, body: body}
	w.q = append(w.q, item{slot: s})
	w.cond.Broadcast()
	return s, nil
}

// readyUpTo reports whether the queue's items before i are all ready;
// w.mu is held.
func (w *writer) readyUpTo(i int) bool {
	for j := range i {
		if !w.q[j].ready() {
			return false
		}
	}
	return true
}

// holds reports whether the item is slot s or a batch with s in it.
func (it *item) holds(s *answerSlot) bool {
	if it.slot == s {
		return true
	}
	if it.batch != nil {
		for _, p := range it.batch.parts {
			if p.slot == s {
				return true
			}
		}
	}
	return false
}

// messageInOrder queues a message of permhost's own after everything queued
// so far (for example what the client's latest line caused).
func (w *writer) messageInOrder(body []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.q = append(w.q, item{line: body, own: true})
	w.cond.Broadcast()
	return nil
}

// newSlot returns a slot that is not queued yet: queue it alone (place) or
// as part of a batch (placeBatch).
func (w *writer) newSlot() *answerSlot { return &answerSlot{w: w} }

// newSlotWait is newSlot for a slot whose lines wait up to d.
func (w *writer) newSlotWait(d time.Duration) *answerSlot { return &answerSlot{w: w, wait: d} }

// place queues s; the lines queued after it wait until it is filled, or
// for answerOrderWait at most, when onRelease (if not nil) is called.
func (w *writer) place(s *answerSlot, onRelease func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.q = append(w.q, item{slot: s})
	w.armLocked(s, onRelease)
	w.cond.Broadcast()
}

// placeBatch queues a batch, its slots armed as place arms one.
func (w *writer) placeBatch(b *batchOut, onRelease func()) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	n := len(b.term)
	for _, p := range b.parts {
		n += len(p.raw)
		if p.slot != nil {
			w.armLocked(p.slot, onRelease)
		}
	}
	w.q = append(w.q, item{batch: b})
	w.queued += n
	w.cond.Broadcast()
	return nil
}

func (w *writer) armLocked(s *answerSlot, onRelease func()) {
	if w.err != nil {
		s.state, s.passed = slotReleased, true
		return
	}
	if s.state != slotWaiting {
		return
	}
	wait := answerOrderWait
	if s.wait > 0 {
		wait = s.wait
	}
	s.timer = time.AfterFunc(wait, func() {
		if s.release() && onRelease != nil {
			onRelease()
		}
	})
}

// fill writes body (without terminator) in the slot's place, or on its own
// once the writer went past the slot.
func (s *answerSlot) fill(body []byte) {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	if w.err != nil || s.state == slotFilled {
		return
	}
	if s.passed {
		w.aheadLocked(body)
		return
	}
	s.state, s.body = slotFilled, body
	w.cond.Broadcast()
}

// release lets the lines queued behind the slot go on; it reports whether
// the slot was still waiting.
func (s *answerSlot) release() bool {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.state != slotWaiting {
		return false
	}
	s.state = slotReleased
	w.cond.Broadcast()
	return true
}

// free gives back what the item's line lives in, once written or dropped.
func (it *item) free() {
	if it.release != nil {
		it.release()
	}
	if it.chunk != nil {
		putChunk(it.chunk)
	}
}

// ready reports whether the writer may write it now; w.mu is held.
func (it *item) ready() bool {
	switch {
	case it.slot != nil:
		return it.slot.state != slotWaiting
	case it.batch != nil:
		for _, p := range it.batch.parts {
			if p.slot != nil && p.slot.state == slotWaiting {
				return false
			}
		}
	}
	return true
}

// closeAfter has the writer close dst (when closeDst and it is an
// io.Closer) once everything queued is written; messages may still be
// queued until then.
func (w *writer) closeAfter(closeDst bool) {
	w.mu.Lock()
	w.closing, w.closeIt = true, closeDst
	w.cond.Broadcast()
	w.mu.Unlock()
}

// closeNow drops what is queued, closes dst (ending a write in progress
// when dst is an *os.File or a pipe) and makes later calls fail with
// ErrClosed.
func (w *writer) closeNow() {
	w.mu.Lock()
	w.failLocked(ErrClosed)
	w.mu.Unlock()
	w.closeDst()
}

func (w *writer) closeDst() {
	w.once.Do(func() {
		if c, ok := w.dst.(io.Closer); ok {
			_ = c.Close()
		}
		close(w.closed)
	})
}

// failLocked records err (ErrClosed when closing) and forgets the queue.
func (w *writer) failLocked(err error) {
	if w.err != nil {
		return
	}
	w.err = err
	for _, it := range w.q {
		it.free()
		if it.slot != nil && it.slot.timer != nil {
			it.slot.timer.Stop()
		}
		if it.batch != nil {
			for _, p := range it.batch.parts {
				if p.slot != nil && p.slot.timer != nil {
					p.slot.timer.Stop()
				}
			}
		}
	}
	w.q, w.queued = nil, 0
	w.cond.Broadcast()
	if err != ErrClosed && w.onError != nil {
		f := w.onError
		go f(err)
	}
}

// directWrite is the length from which a forwarded item is written to dst
// directly rather than through the buffer.
const directWrite = 16 << 10

// run is the writer's goroutine.
func (w *writer) run() {
	defer close(w.done)
	bw := bufio.NewWriterSize(w.dst, writeBufferSize)
	open := false // the last line written had no terminator
	dirty := false
	for {
		w.mu.Lock()
		for w.err == nil && !(len(w.q) > 0 && w.q[0].ready()) && !(len(w.q) == 0 && w.closing) {
			if dirty {
				w.mu.Unlock()
				err := bw.Flush()
				dirty = false
				w.mu.Lock()
				if err != nil {
					w.failLocked(err)
				}
				continue
			}
			w.cond.Wait()
		}
		if w.err != nil {
			w.mu.Unlock()
			return
		}
		if len(w.q) == 0 { // closing, everything written
			if dirty {
				// Flush first, then look again: what was queued meanwhile
				// was accepted, and is written before the writer closes.
				w.mu.Unlock()
				err := bw.Flush()
				dirty = false
				w.mu.Lock()
				if err != nil {
					w.failLocked(err)
					w.mu.Unlock()
					w.closeDst()
					return
				}
				w.mu.Unlock()
				continue
			}
			// Nothing queued, nothing buffered: from here every call
			// fails with ErrClosed, under the lock that saw it empty.
			closeIt := w.closeIt
			w.failLocked(ErrClosed)
			w.mu.Unlock()
			if closeIt {
				w.closeDst()
			}
			return
		}
		it := w.q[0]
		w.q[0] = item{}
		w.q = w.q[1:]
		own, line := it.own, it.line
		switch {
		case it.slot != nil:
			own, line = true, it.slot.body
			it.slot.body, it.slot.passed = nil, true
		case it.batch != nil:
			line = it.batch.assemble()
			w.queued -= it.batch.size()
		default:
			if !own {
				w.queued -= len(line)
			}
		}
		if len(w.q) == 0 {
			w.q = nil // let a long queue's array go
		}
		w.cond.Broadcast()
		w.mu.Unlock()

		if line == nil {
			continue
		}
		var err error
		if own {
			if open {
				err = bw.WriteByte('\n')
			}
			if err == nil {
				_, err = bw.Write(line)
			}
			if err == nil {
				err = bw.WriteByte('\n')
			}
			open = false
		} else if len(line) > 0 {
			if len(line) >= directWrite {
				// A run of lines goes to dst as it is, not through bufio's
				// buffer (a copy for nothing).
				if err = bw.Flush(); err == nil {
					_, err = w.dst.Write(line)
				}
			} else {
				_, err = bw.Write(line)
			}
			open = line[len(line)-1] != '\n'
		}
		it.free() // bufio keeps nothing of what it was given
		dirty = true
		if err != nil {
			w.mu.Lock()
			w.failLocked(err)
			w.mu.Unlock()
			w.closeDst()
			return
		}
	}
}

// assemble returns the batch to write, or nil when no element is left; the
// caller holds w.mu. Released slots are left out (their late answers go on
// their own).
func (b *batchOut) assemble() []byte {
	var elems [][]byte
	for _, p := range b.parts {
		switch {
		case p.slot == nil:
			elems = append(elems, p.raw)
		case p.slot.state == slotFilled:
			elems = append(elems, p.slot.body)
			p.slot.body, p.slot.passed = nil, true
		default:
			p.slot.passed = true
		}
	}
	if len(elems) == 0 {
		return nil
	}
	n := 2 + len(b.term)
	for _, e := range elems {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	out = append(out, ']')
	return append(out, b.term...)
}

func (b *batchOut) size() int {
	n := len(b.term)
	for _, p := range b.parts {
		n += len(p.raw)
	}
	return n
}
