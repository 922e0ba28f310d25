package acp

import (
	"bytes"
	"io"
	"sync"
)

// Buffer sizes of the proxy's readers and writers.
const (
	readBufferSize  = 64 << 10
	writeBufferSize = 64 << 10
)

// DefaultMaxLineBytes is the default cap on one line: ACP has no size limit
// (base64 images, whole files), so the cap only guards against a runaway peer.
const DefaultMaxLineBytes = 1 << 30

// chunkSize is the size of the buffers lines are read into and forwarded
// in: a reader's buffer, handed to the writer whole when it holds a long run
// of forwarded lines, and the writer's merge buffers of copied lines.
const chunkSize = readBufferSize

// chunks recycles the chunkSize buffers between the readers and the writers:
// each is taken by a reader or a merge, and put back once written or dropped.
var chunks = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

func getChunk() []byte  { return (*chunks.Get().(*[]byte))[:chunkSize] }
func putChunk(b []byte) { b = b[:chunkSize]; chunks.Put(&b) }

// lineReader reads lines, terminator included, of any length up to max.
// Lines that fit in its buffer are returned from it; a longer one is
// assembled in a buffer of its own (lineBuf) whose capacity never exceeds
// max plus the read buffer's size, and which take hands over instead of
// copying.
//
// Forwarded lines (forwardTo) are not queued one by one: consecutive ones
// make a run of the buffer, queued at once when the reader is about to read
// again or handles another line (flush). A run that fills most of the buffer
// is handed to the writer with the buffer itself, without a copy, and the
// reader goes on in a fresh one.
type lineReader struct {
	src  io.Reader
	max  int
	from string
	buf  []byte // chunkSize; buf[r:w] is read and not returned yet
	r, w int
	err  error   // the read error, returned once buf holds no more lines
	big  lineBuf // the line being or last assembled
	cur  []byte  // the line next returned
	own  bool    // cur is big's

	// The run of forwarded lines not queued yet, buf[runFrom:runTo], for
	// to; kick is set when something was queued on to without waking its
	// writer.
	to             *writer
	runFrom, runTo int
	kick           bool

	fast fastPath // the fast path of the lines read, with its memo
}

// handOverRun is the run length from which a run is handed over with its
// buffer rather than copied: a short one goes into the writer's merge
// buffer, where it may join others.
const handOverRun = chunkSize / 2

func newLineReader(r io.Reader, max int, from string) *lineReader {
	return &lineReader{src: r, max: max, from: from, buf: getChunk()}
}

// next returns the next line including its terminator, if any (the last
// line of a stream may have none). The slice is valid until the next call.
// At the end of the stream it returns io.EOF. Before it reads (and may
// block) it queues the pending run and wakes the writer.
func (l *lineReader) next() ([]byte, error) {
	if l.own || cap(l.big.b) > 4*readBufferSize {
		l.big.release() // the last long line was not taken, or is not worth keeping
	}
	l.cur, l.own = nil, false
	if i := bytes.IndexByte(l.buf[l.r:l.w], '\n'); i >= 0 {
		return l.line(l.r + i + 1), nil
	}
	l.flush(true)
	empty := 0
	for {
		if l.r > 0 {
			l.w = copy(l.buf, l.buf[l.r:l.w])
			l.r = 0
		}
		if l.err != nil {
			if l.err == io.EOF && l.w > 0 {
				return l.line(l.w), nil
			}
			l.w = 0
			return nil, l.err
		}
		if l.w == len(l.buf) {
			return l.long()
		}
		n, err := l.src.Read(l.buf[l.w:])
		if err != nil {
			l.err = err
		}
		if n == 0 && err == nil {
			if empty++; empty == 100 {
				l.err = io.ErrNoProgress
			}
			continue
		}
		l.w += n
		if i := bytes.IndexByte(l.buf[l.w-n:l.w], '\n'); i >= 0 {
			return l.line(l.w - n + i + 1), nil
		}
	}
}

// line returns buf[r:end] as the next line.
func (l *lineReader) line(end int) []byte {
	l.cur = l.buf[l.r:end]
	l.r = end
	return l.cur
}

// long assembles a line longer than the buffer, which is full, in big.
func (l *lineReader) long() ([]byte, error) {
	l.big.b = append(l.big.b[:0], l.buf[:l.w]...)
	l.w = 0
	for empty := 0; ; {
		n, err := l.src.Read(l.buf)
		if n == 0 && err == nil {
			if empty++; empty == 100 {
				err = io.ErrNoProgress
			}
		}
		end, found := n, false
		if i := bytes.IndexByte(l.buf[:n], '\n'); i >= 0 {
			end, found = i+1, true
		}
		size := len(l.big.b) + end
		if size > l.max {
			l.big.release()
			return nil, &LineTooLongError{From: l.from, Limit: l.max}
		}
		if size > cap(l.big.b) {
			l.big.grow(size, l.max+readBufferSize)
		}
		l.big.b = append(l.big.b, l.buf[:end]...)
		l.r, l.w = end, n
		if err != nil {
			l.err = err
		}
		switch {
		case found, err == io.EOF:
			l.cur, l.own = l.big.b, true
			return l.cur, nil
		case err != nil:
			l.big.release()
			return nil, err
		}
	}
}

// forwardTo queues the line next returned on w, which must be the same
// writer every time: a long line's buffer is handed over, a short one joins
// the pending run.
func (l *lineReader) forwardTo(w *writer) error {
	if l.to != w {
		l.flush(true)
		l.to = w
	}
	if l.own {
		l.flush(false)
		l.kick = true
		return w.forward(l.take())
	}
	start := l.r - len(l.cur)
	if l.runTo != start || l.runFrom == l.runTo {
		l.flush(false)
		l.runFrom = start
	}
	l.runTo = l.r
	return nil
}

// forwardNow queues the line next returned on w at once (after the pending
// run), for a line whose effects (a session/cancel's, say) must follow it.
func (l *lineReader) forwardNow(w *writer) error {
	err := l.forwardTo(w)
	l.flush(false)
	return err
}

// flush queues the pending run, if any, and wakes the writer when kick (or
// leaves that to a later flush). Call it before queuing anything else on
// the writer, so that the order holds.
func (l *lineReader) flush(kick bool) {
	if l.runFrom != l.runTo {
		run := l.buf[l.runFrom:l.runTo]
		if len(run) >= handOverRun && l.runTo == l.r {
			// The buffer goes with the run; what follows the run moves to a
			// fresh one.
			full := l.buf
			l.buf = getChunk()
			l.w = copy(l.buf, full[l.r:l.w])
			l.r = 0
			_ = l.to.forwardChunk(run, full)
		} else {
			_ = l.to.forwardCopy(run)
		}
		l.runFrom, l.runTo = 0, 0
		l.kick = true
	}
	if kick && l.kick {
		l.to.wake()
		l.kick = false
	}
}

// take returns the line next returned as a slice the caller may keep, and
// the function that releases it once nothing refers to it any more (after
// it is written, or dropped): the assembled buffer of a long line itself
// (next then starts a new one), a copy of a short one.
func (l *lineReader) take() ([]byte, func()) {
	if l.own {
		big := l.big
		l.big, l.own = lineBuf{}, false
		return big.b, big.release
	}
	return bytes.Clone(l.cur), nil
}
