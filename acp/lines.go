package acp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
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
type outWriter struct {
	mu      sync.Mutex
	bw      *bufio.Writer
	dst     io.Writer
	err     error
	onError func(error)
	// open is true when the last forwarded line had no terminator (a peer's
	// final line): a message of permhost's own then starts a new line.
	open bool
}

func newOutWriter(w io.Writer, onError func(error)) *outWriter {
	return &outWriter{bw: bufio.NewWriterSize(w, writeBufferSize), dst: w, onError: onError}
}

// forward writes line (terminator included) and flushes unless more is
// coming right away.
func (o *outWriter) forward(line []byte, flush bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	_, err := o.bw.Write(line)
	if len(line) > 0 {
		o.open = line[len(line)-1] != '\n'
	}
	if err == nil && flush {
		err = o.bw.Flush()
	}
	return o.fail(err)
}

// message writes body followed by "\n" and flushes.
func (o *outWriter) message(body []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
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
	if err == nil {
		err = o.bw.Flush()
	}
	return o.fail(err)
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
	return err
}

// fail records err (if any) and reports it once; o.mu is held.
func (o *outWriter) fail(err error) error {
	if err == nil {
		return nil
	}
	o.err = err
	if o.onError != nil {
		f := o.onError
		o.onError = nil
		go f(err)
	}
	return err
}
