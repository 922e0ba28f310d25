package proctest

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// A sleeping process is idle at once; a spinning one is never idle. Under
// load a spinner may get little CPU in a window, but not none: the budget
// is one clock tick, so a window counts as idle only when the process did
// not run in it at all; and the sleeper is measured once it sleeps (its
// start, which uses CPU, is over).
func TestWaitIdle(t *testing.T) {
	sleeper := exec.Command("sleep", "60")
	spinner := exec.Command("sh", "-c", "while :; do :; done")
	for _, c := range []*exec.Cmd{sleeper, spinner} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Kill(); c.Wait() }()
	}
	st := waitState(t, sleeper.Process.Pid, 'S')
	if st.PGrp == 0 || !Alive(sleeper.Process.Pid) {
		t.Errorf("sleep: %+v", st)
	}
	r, err := WaitIdle(sleeper.Process.Pid, 200*time.Millisecond, clockTick, 5*time.Second)
	if err != nil || !r.Idle || len(r.Windows) != 1 || r.Windows[0] != 0 {
		t.Errorf("sleep: %v, %v; want idle in the first window, using no CPU", r, err)
	}
	r, err = WaitIdle(spinner.Process.Pid, 200*time.Millisecond, clockTick, time.Second)
	if err != nil || r.Idle || len(r.Windows) == 0 {
		t.Errorf("a spinning shell: %v, %v; want never idle", r, err)
	}
	for i, used := range r.Windows {
		if used < clockTick {
			t.Errorf("a spinning shell: window %d of %v idle", i, r)
		}
	}
	// This process's CPU time grows while it spins (the guard only stops a
	// hang).
	before, err := CPU(0)
	for start := time.Now(); ; {
		after, err2 := CPU(0)
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		if after > before {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("CPU(0) stayed %v while spinning", after)
		}
	}
}

// waitState waits until process pid is in state (the guard only stops a
// hang) and returns its stat.
func waitState(t *testing.T, pid int, state byte) Stat {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		st, err := ReadStat(pid)
		if errors.Is(err, ErrUnsupported) {
			t.Skip(err)
		}
		if err == nil && st.State == state {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is %+v, %v; want state %c", pid, st, err, state)
		}
	}
}

// A process not waited for after it died is a zombie: not alive.
func TestAliveZombie(t *testing.T) {
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	pid := c.Process.Pid
	if !Alive(pid) {
		t.Fatal("a running process is not alive")
	}
	c.Process.Kill()
	waitState(t, pid, 'Z')
	if Alive(pid) {
		t.Error("a zombie is alive")
	}
}
