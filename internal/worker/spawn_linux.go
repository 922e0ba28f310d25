//go:build linux

package worker

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

const supported = true

// selfExe is what a child re-executes: the very binary the parent runs,
// even if the file was replaced or removed since (an upgrade while a
// session is open), so that parent and child always speak one protocol.
const selfExe = "/proc/self/exe"

// sysProcAttr puts the child in its own process group (so that killing it
// kills whatever it might start, and a terminal's ^C to the proxy's group
// does not reach it: the parent decides when it ends) and has the kernel
// send it SIGKILL when the thread that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Linux's parent-death signal fires when the thread that forked the child
// exits, not the process; Go ends a thread when a goroutine locked to it
// returns without unlocking. So every child is started from one goroutine
// locked to its thread (the spawner), which holds the thread for as long
// as any child it started is alive: no other goroutine can lock that thread
// and end it meanwhile. It returns (unlocking) when the last child is
// reaped, so that nothing is left running when no worker exists.
var spawner struct {
	mu   sync.Mutex
	live int // children started and not yet reaped, plus starts in flight
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// start starts cmd from the spawner's thread. On success the caller must
// call released once the child is reaped.
func start(cmd *exec.Cmd) error {
	spawner.mu.Lock()
	if spawner.live == 0 {
		spawner.reqs = make(chan spawnReq)
		go spawnLoop(spawner.reqs)
	}
	spawner.live++
	reqs := spawner.reqs
	spawner.mu.Unlock()
	done := make(chan error, 1)
	reqs <- spawnReq{cmd: cmd, done: done}
	err := <-done
	if err != nil {
		released()
	}
	return err
}

// released counts a reaped child out; the last one ends the spawner.
func released() {
	spawner.mu.Lock()
	defer spawner.mu.Unlock()
	spawner.live--
	if spawner.live == 0 {
		close(spawner.reqs)
	}
}

func spawnLoop(reqs <-chan spawnReq) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}

// setLimits sets the child's address-space and CPU-time limits. The soft
// CPU limit sends SIGXCPU (the child then asks to be replaced), the hard
// one SIGKILL.
func setLimits(pid int, addressSpace uint64, cpuSoft, cpuHard uint64) error {
	if addressSpace > 0 {
		if err := unix.Prlimit(pid, unix.RLIMIT_AS, &unix.Rlimit{Cur: addressSpace, Max: addressSpace}, nil); err != nil {
			return fmt.Errorf("RLIMIT_AS: %w", err)
		}
	}
	if cpuSoft > 0 {
		if err := unix.Prlimit(pid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: cpuSoft, Max: cpuHard}, nil); err != nil {
			return fmt.Errorf("RLIMIT_CPU: %w", err)
		}
	}
	return nil
}

// vmSize is a process's virtual memory size in bytes (VmSize), what
// RLIMIT_AS bounds.
func vmSize(pid int) (uint64, error) {
	return procStatus(pid, "VmSize:")
}

// procStatus reads one "kB" field of /proc/<pid>/status, in bytes.
func procStatus(pid int, field string) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// waitExited blocks until the child has exited, without reaping it: while
// it is a zombie its pid, and so its process group id, cannot be reused,
// which makes killGroup safe until cmd.Wait reaps it.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// killGroup sends SIGKILL to the child's process group.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// closeInherited closes the descriptors above stderr that this process
// inherited: those without close-on-exec. Go opens every descriptor of its
// own close-on-exec, so what lacks the flag came through exec from a
// parent that leaked it (Go's exec passes only the files it is given, but
// a descriptor opened without O_CLOEXEC by anything in the parent would
// survive the exec).
func closeInherited() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err == nil && flags&unix.FD_CLOEXEC == 0 {
			_ = unix.Close(fd)
		}
	}
}

// xcpu is the signal of the soft CPU limit.
var xcpu os.Signal = syscall.SIGXCPU
