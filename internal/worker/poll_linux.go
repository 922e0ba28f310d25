//go:build linux

package worker

import (
	"runtime"
	"syscall"
	"time"
)

// poll reads fd, in non-blocking mode, into p until bytes come or for up
// to d, yielding between tries; it returns how many it read, 0 when it
// read nothing (nothing came in time, the end, an error: the caller's
// read that follows says which). sharesP is true in a process with one P
// (the child), whose other goroutines get it between tries.
func poll(fd uintptr, p []byte, d time.Duration, sharesP bool) int {
	var until time.Time
	for {
		n, err := syscall.Read(int(fd), p)
		switch {
		case err == nil:
			return n // 0 at the end
		case err == syscall.EINTR:
			continue
		case err != syscall.EAGAIN:
			return 0
		}
		now := time.Now()
		if until.IsZero() {
			until = now.Add(d)
		} else if now.After(until) {
			return 0
		}
		if sharesP {
			runtime.Gosched()
		}
		// This CPU to other threads: without it a child woken on the CPU
		// the parent polls on waited for the polling to end (RATIONALE.md).
		_, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
	}
}
