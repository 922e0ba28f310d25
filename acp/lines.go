package acp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Buffer sizes of the proxy's readers and writers.
const (
	readBufferSize  = 64 << 10
	writeBufferSize = 64 << 10
)

// DefaultMaxLineBytes is the default cap on one line: ACP has no size limit
// (base64 images, whole files), so the cap only guards against a runaway peer.
const DefaultMaxLineBytes = 1 << 30

// lineReader reads lines, terminator included, of any length up to max. A
// line longer than the read buffer is assembled in a buffer of its own
// (lineBuf) whose capacity never exceeds max plus the read buffer's size,
// and which take hands over instead of copying.
type lineReader struct {
	r    *bufio.Reader
	max  int
	from string
	big  lineBuf // the line being or last assembled
	cur  []byte  // the line next returned
	own  bool    // cur is big's
}

func newLineReader(r io.Reader, max int, from string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, readBufferSize), max: max, from: from}
}

// next returns the next line including its terminator, if any (the last
// line of a stream may have none). The slice is valid until the next call.
// At the end of the stream it returns io.EOF.
func (l *lineReader) next() ([]byte, error) {
	if l.own || cap(l.big.b) > 4*readBufferSize {
		l.big.release() // the last long line was not taken, or is not worth keeping
	}
	l.cur, l.own = nil, false
	line, err := l.r.ReadSlice('\n')
	switch {
	case err == nil:
		l.cur = line
		return line, nil
	case errors.Is(err, bufio.ErrBufferFull):
	case err == io.EOF && len(line) > 0:
		l.cur = line
		return line, nil
	default:
		return nil, err
	}
	l.big.b = append(l.big.b[:0], line...)
	for {
		line, err = l.r.ReadSlice('\n')
		n := len(l.big.b) + len(line)
		if n > l.max {
			l.big.release()
			return nil, &LineTooLongError{From: l.from, Limit: l.max}
		}
		if n > cap(l.big.b) {
			l.big.grow(n, l.max+readBufferSize)
		}
		l.big.b = append(l.big.b, line...)
		switch {
		case err == nil, err == io.EOF:
			l.cur, l.own = l.big.b, true
			return l.cur, nil
		case errors.Is(err, bufio.ErrBufferFull):
		default:
			l.big.release()
			return nil, err
		}
	}
}

// forwardTo queues the line next returned on w: a long line's buffer is
// handed over, a short one copied, and the writer woken only once no
// further line is buffered already (the next follows at once otherwise).
func (l *lineReader) forwardTo(w *writer) error {
	if l.own {
		return w.forward(l.take())
	}
	return w.forwardCopy(l.cur, !l.moreBuffered())
}

// moreBuffered reports whether a whole further line is already buffered.
func (l *lineReader) moreBuffered() bool {
	n := l.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := l.r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
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
