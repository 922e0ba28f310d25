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
// line longer than the read buffer is assembled in a buffer of its own whose
// capacity never exceeds max plus the read buffer's size (it doubles, but
// stops at that bound), and which take hands over instead of copying.
type lineReader struct {
	r    *bufio.Reader
	max  int
	from string
	big  []byte // the assembled line, when next returned one
	cur  []byte // the line next returned
}

func newLineReader(r io.Reader, max int, from string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, readBufferSize), max: max, from: from}
}

// next returns the next line including its terminator, if any (the last
// line of a stream may have none). The slice is valid until the next call.
// At the end of the stream it returns io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.cur = nil
	if cap(l.big) > 4*readBufferSize {
		l.big = nil // a big buffer is not kept for the next lines
	}
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
	l.big = append(l.big[:0], line...)
	for {
		line, err = l.r.ReadSlice('\n')
		n := len(l.big) + len(line)
		if n > l.max {
			l.big = nil
			return nil, &LineTooLongError{From: l.from, Limit: l.max}
		}
		if n > cap(l.big) {
			// Double (append's gentler growth copies a huge line many
			// times), but never past what the longest line can need.
			c := min(2*n, l.max+readBufferSize)
			l.big = append(make([]byte, 0, c), l.big...)
		}
		l.big = append(l.big, line...)
		switch {
		case err == nil, err == io.EOF:
			l.cur = l.big
			return l.big, nil
		case errors.Is(err, bufio.ErrBufferFull):
		default:
			return nil, err
		}
	}
}

// take returns the line next returned as a slice the caller may keep: the
// assembled buffer of a long line itself (next then starts a new one), a
// copy of a short one.
func (l *lineReader) take() []byte {
	if l.big != nil && len(l.cur) > 0 && &l.cur[0] == &l.big[0] {
		b := l.big
		l.big, l.cur = nil, nil
		return b
	}
	return bytes.Clone(l.cur)
}
