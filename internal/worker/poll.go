package worker

import (
	"io"
	"os"
	"runtime"
	"syscall"
	"time"
)

// DefaultPollFor is how long a reader waiting for the other side's next
// frame polls the pipe before it parks on Go's poller (Options.PollFor).
const DefaultPollFor = 100 * time.Microsecond

// maxPollFor bounds Options.PollFor: polling longer than a scheduler's
// time slice only burns the CPU the other side needs.
const maxPollFor = time.Millisecond

// pollReader reads a pipe in non-blocking mode, polling it for up to
// pollFor before a read that parks: a parked reader is woken through the
// kernel, a thread wake-up of tens of microseconds on a virtual machine
// whose other CPU has gone idle, while a warm decision's answer (or the
// next request of a burst) is often on the pipe well within that time.
// The polling yields the CPU between tries, so that the other side, if
// the kernel woke it on this CPU, runs at once. See RATIONALE.md ("The
// host's own cost per decision", Process wall, third pass). Used by one
// goroutine at a time.
type pollReader struct {
	f       *os.File
	rc      syscall.RawConn
	pollFor time.Duration // 0: park at once
	sharesP bool          // GOMAXPROCS is 1 (the child)

	// The read in progress, for pollFd, made once: a closure per read
	// cost two allocations on every decision's path.
	buf    []byte
	got    int
	pollFd func(fd uintptr)
}

// newPollReader reads f, a pipe in non-blocking mode, as pollReader does.
func newPollReader(f *os.File, pollFor time.Duration) io.Reader {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	r := &pollReader{f: f, rc: rc, pollFor: pollFor, sharesP: runtime.GOMAXPROCS(0) == 1}
	r.pollFd = func(fd uintptr) { r.got = poll(fd, r.buf, r.pollFor, r.sharesP) }
	return r
}

func (r *pollReader) Read(p []byte) (int, error) {
	if r.pollFor > 0 && len(p) > 0 {
		// Control keeps the descriptor open meanwhile. What the polling
		// does not read (the end, an error, nothing in time) the file's
		// own Read reads, with its deadline and its errors.
		r.buf, r.got = p, 0
		_ = r.rc.Control(r.pollFd)
		n := r.got
		r.buf = nil
		if n > 0 {
			return n, nil
		}
	}
	return r.f.Read(p)
}
