package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/permhost/permhost/internal/edkey"
)

// ErrNotChained is returned by Open for a file whose last line is not a
// log line: a log written without a key cannot be continued as a chain.
var ErrNotChained = errors.New("auditlog: the existing file is not a chained log (written without a key? move it aside)")

// sealEvery bounds the lines of a segment when the caller never runs out
// of lines to write.
const sealEvery = 256

// maxTail bounds how far back Open looks for the last complete line.
const maxTail = 64 << 20

// Writer appends chained lines to a file. Its methods are not safe for
// concurrent use: one goroutine writes, so that the chain is in the order
// written.
type Writer struct {
	path     string
	key      ed25519.PrivateKey
	pub      string
	maxSize  int64
	now      func() time.Time
	f        *os.File
	size     int64
	seq      uint64
	prev     [sha256.Size]byte
	unsealed int
	buf      bytes.Buffer
	broken   error // a failed write: nothing more is written after it
	// Recovered is how many bytes of an incomplete last line (a crash
	// while writing) Open removed before continuing the chain.
	Recovered int64
}

// Open opens (creating, 0600) the log at path for appending lines signed
// with key. A positive maxSize rotates the file before a line would take
// it past maxSize: it is renamed path.N (N one more than the highest
// such file) and a new path is started whose first line links to the
// renamed file's last. The chain continues from the last complete line of
// path, or of the newest rotated file when path is absent or empty.
//
// A nil key gives a plain log, rotated the same way: lines are written as
// given, with no seq, prev or seals.
func Open(path string, key ed25519.PrivateKey, maxSize int64) (*Writer, error) {
	w := &Writer{path: path, key: key, maxSize: maxSize, now: time.Now}
	if key != nil {
		w.pub = edkey.FormatPublic(key.Public().(ed25519.PublicKey))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := w.resume(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w.f = f
	return w, nil
}

// resume reads where the chain stands from f, or from the newest rotated
// file when f is empty.
func (w *Writer) resume(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	w.size = st.Size()
	if w.key == nil {
		return nil
	}
	src := f
	if w.size == 0 {
		n, err := lastRotation(w.path)
		if err != nil || n == 0 {
			return err
		}
		r, err := os.Open(rotatedName(w.path, n))
		if err != nil {
			return err
		}
		defer r.Close()
		src = r
	}
	last, cut, err := lastLine(src)
	if err != nil {
		return err
	}
	if cut > 0 && src == f {
		// The tail after the last newline is a line a crash left half
		// written: it was never part of the chain.
		if err := f.Truncate(w.size - cut); err != nil {
			return err
		}
		w.size -= cut
		w.Recovered = cut
	}
	if last == nil {
		return nil
	}
	l, err := parseLine(last)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNotChained, err)
	}
	w.seq, w.prev = l.seq, l.hash
	if l.seal == nil {
		w.unsealed = 1
	}
	return nil
}

// lastLine returns the last complete line of f (nil when there is none)
// and the length of what follows it without a newline.
func lastLine(f *os.File) ([]byte, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := st.Size()
	n := min(size, maxTail)
	b := make([]byte, n)
	if _, err := f.ReadAt(b, size-n); err != nil && err != io.EOF {
		return nil, 0, err
	}
	end := bytes.LastIndexByte(b, '\n')
	cut := n - int64(end) - 1
	if end < 0 {
		if n < size {
			return nil, 0, fmt.Errorf("%w: no newline in the last %d bytes", ErrNotChained, maxTail)
		}
		return nil, n, nil
	}
	start := bytes.LastIndexByte(b[:end], '\n') + 1
	if start == 0 && n < size {
		return nil, 0, fmt.Errorf("%w: a line longer than %d bytes", ErrNotChained, maxTail)
	}
	return b[start:end], cut, nil
}

// rotatedName is the name of the nth rotated file of path.
func rotatedName(path string, n int) string { return path + "." + strconv.Itoa(n) }

// lastRotation returns the highest N of the files path.N, 0 when none.
func lastRotation(path string) (int, error) {
	names, err := filepath.Glob(escapeGlob(path) + ".*")
	if err != nil {
		return 0, err
	}
	high := 0
	for _, name := range names {
		n, err := strconv.Atoi(strings.TrimPrefix(name, path+"."))
		if err == nil && n > high && rotatedName(path, n) == name {
			high = n
		}
	}
	return high, nil
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Append writes obj, a JSON object, as the chain's next line: "seq" and
// "prev" are put before its members.
func (w *Writer) Append(obj []byte) error {
	obj = bytes.TrimSpace(obj)
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return fmt.Errorf("auditlog: append: not a JSON object")
	}
	if err := w.rotateFor(len(obj) + 100); err != nil {
		return err
	}
	w.buf.Reset()
	if w.key == nil {
		w.buf.Write(obj)
		return w.write()
	}
	fmt.Fprintf(&w.buf, `{"seq":%d,"prev":"%x"`, w.seq+1, w.prev)
	if body := bytes.TrimSpace(obj[1 : len(obj)-1]); len(body) > 0 {
		w.buf.WriteByte(',')
		w.buf.Write(body)
	}
	w.buf.WriteByte('}')
	if err := w.write(); err != nil {
		return err
	}
	w.unsealed++
	if w.unsealed >= sealEvery {
		return w.Seal()
	}
	return nil
}

// Seal writes a seal line when lines were written since the last one.
func (w *Writer) Seal() error {
	if w.unsealed == 0 || w.key == nil {
		return nil
	}
	seq := w.seq + 1
	t := w.now().UTC().Format(time.RFC3339Nano)
	sig := ed25519.Sign(w.key, sealMessage(seq, w.prev, t))
	w.buf.Reset()
	fmt.Fprintf(&w.buf, `{"seq":%d,"prev":"%x","seal":{"time":%q,"key":%q,"sig":%q}}`, seq, w.prev, t, w.pub, base64.StdEncoding.EncodeToString(sig))
	if err := w.write(); err != nil {
		return err
	}
	w.unsealed = 0
	return nil
}

// write writes w.buf and a newline as one write and moves the chain on.
func (w *Writer) write() error {
	var sum [sha256.Size]byte
	if w.key != nil {
		sum = sha256.Sum256(w.buf.Bytes())
	}
	w.buf.WriteByte('\n')
	if w.broken != nil {
		return w.broken
	}
	n, err := w.f.Write(w.buf.Bytes())
	w.size += int64(n)
	if err != nil {
		// A short write leaves a half line: later lines would follow it
		// in the middle of the file, so nothing more is written.
		w.broken = fmt.Errorf("auditlog: write: %w", err)
		return w.broken
	}
	w.seq, w.prev = w.seq+1, sum
	return nil
}

// rotateFor rotates the file when a line of about n bytes and a seal would
// take it past maxSize.
func (w *Writer) rotateFor(n int) error {
	if w.maxSize <= 0 || w.size == 0 || w.size+int64(n)+400 <= w.maxSize {
		return nil
	}
	if err := w.Seal(); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	high, err := lastRotation(w.path)
	if err != nil {
		return err
	}
	if err := os.Rename(w.path, rotatedName(w.path, high+1)); err != nil {
		return err
	}
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	w.f, w.size = f, 0
	return nil
}

// Close seals what is not sealed and closes the file.
func (w *Writer) Close() error {
	err := w.Seal()
	return errors.Join(err, w.f.Close())
}
