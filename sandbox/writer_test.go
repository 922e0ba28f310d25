package sandbox

import "sync"

// limitedWriter keeps the first limit bytes written to it and counts the
// rest. Write never fails, so a guest does not retry or react to a full
// buffer. It is safe for concurrent use (a plugin's stdout and stderr may
// share one).
type limitedWriter struct {
	mu      sync.Mutex
	limit   int
	buf     []byte
	dropped int64
}

// newLimitedWriter returns a writer that keeps at most limit bytes.
func newLimitedWriter(limit int) *limitedWriter {
	if limit < 0 {
		limit = 0
	}
	return &limitedWriter{limit: limit}
}

// Write keeps what fits and drops the rest; it always reports len(p), nil.
func (w *limitedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.limit - len(w.buf)
	if room < 0 {
		room = 0
	}
	keep := min(room, len(p))
	w.buf = append(w.buf, p[:keep]...)
	w.dropped += int64(len(p) - keep)
	return len(p), nil
}

// Bytes returns a copy of what was kept.
func (w *limitedWriter) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.buf...)
}

// String returns what was kept.
func (w *limitedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// Len is the number of bytes kept.
func (w *limitedWriter) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.buf)
}

// Dropped is the number of bytes written past the limit.
func (w *limitedWriter) Dropped() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Reset empties the writer, keeping its buffer for reuse.
func (w *limitedWriter) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = w.buf[:0]
	w.dropped = 0
}
