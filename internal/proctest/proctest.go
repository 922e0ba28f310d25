package proctest

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ErrUnsupported: the system has no /proc to read.
var ErrUnsupported = errors.New("proctest: no /proc/PID/stat on this system")

// clockTick is the unit of utime and stime: USER_HZ, 1/100 s on every Linux
// Go supports.
const clockTick = 10 * time.Millisecond

// Stat is what tests read of a process's /proc/PID/stat.
type Stat struct {
	// State is the process's state letter: R, S, D, Z (zombie), X (dead)...
	State byte
	// PGrp is its process group.
	PGrp int
	// CPU is the user and system CPU time it used, its children not
	// included.
	CPU time.Duration
}

// ReadStat reads process pid's stat (0: this process).
func ReadStat(pid int) (Stat, error) {
	if runtime.GOOS != "linux" {
		return Stat{}, ErrUnsupported
	}
	name := "/proc/self/stat"
	if pid != 0 {
		name = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return Stat{}, err
	}
	// The command name (field 2) may hold anything but ends at the last
	// ')': fields are counted from there; fields[0] is field 3 (state),
	// pgrp field 5, utime and stime fields 14 and 15.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 || len(fields[0]) != 1 {
		return Stat{}, fmt.Errorf("proctest: %s: %q", name, s)
	}
	pgrp, err1 := strconv.Atoi(fields[5-3])
	ut, err2 := strconv.ParseInt(fields[14-3], 10, 64)
	st, err3 := strconv.ParseInt(fields[15-3], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Stat{}, fmt.Errorf("proctest: %s: %w", name, err)
	}
	return Stat{State: fields[0][0], PGrp: pgrp, CPU: time.Duration(ut+st) * clockTick}, nil
}

// CPU returns the user and system CPU time process pid has used (0: this
// process), its children not included.
func CPU(pid int) (time.Duration, error) {
	st, err := ReadStat(pid)
	return st.CPU, err
}

// Alive reports whether the process is neither a zombie nor dead.
func (s Stat) Alive() bool { return s.State != 'Z' && s.State != 'X' && s.State != 'x' }

// Alive reports whether process pid exists and is neither a zombie nor
// dead.
func Alive(pid int) bool {
	st, err := ReadStat(pid)
	return err == nil && st.Alive()
}

// Idle is what WaitIdle saw: the CPU time of each window it looked at, in
// order, and whether the last was idle.
type Idle struct {
	Window  time.Duration
	Budget  time.Duration
	Windows []time.Duration
	Idle    bool
}

func (i Idle) String() string {
	return fmt.Sprintf("CPU used in %d consecutive %v windows (idle: under %v): %v", len(i.Windows), i.Window, i.Budget, i.Windows)
}

// WaitIdle looks at process pid (0: this process) in consecutive windows of
// length window until one in which it used less than budget of CPU, or
// until within has passed. An idle process uses next to nothing in any
// window (the Go runtime's own work is a few milliseconds a second); a
// guest left running uses its share of a core in every one, which on a
// loaded machine is still a large part of it. Budgets of a tenth of the
// window tell the two apart.
func WaitIdle(pid int, window, budget, within time.Duration) (Idle, error) {
	r := Idle{Window: window, Budget: budget}
	deadline := time.Now().Add(within)
	for {
		before, err := CPU(pid)
		if err != nil {
			return r, err
		}
		time.Sleep(window)
		after, err := CPU(pid)
		if err != nil {
			return r, err
		}
		used := after - before
		r.Windows = append(r.Windows, used)
		if used < budget {
			r.Idle = true
			return r, nil
		}
		if time.Now().After(deadline) {
			return r, nil
		}
	}
}
