package proctest

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// A sleeping process is idle at once, and sleeping; one spinning never is
// idle.
func TestWaitIdle(t *testing.T) {
	sleeper := exec.Command("sleep", "60")
	spinner := exec.Command("sh", "-c", "while :; do :; done")
	for _, c := range []*exec.Cmd{sleeper, spinner} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Kill(); c.Wait() }()
	}
	r, err := WaitIdle(sleeper.Process.Pid, 200*time.Millisecond, 20*time.Millisecond, 5*time.Second)
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil || !r.Idle || len(r.Windows) != 1 {
		t.Errorf("sleep: %v, %v; want idle in the first window", r, err)
	}
	r, err = WaitIdle(spinner.Process.Pid, 200*time.Millisecond, 20*time.Millisecond, time.Second)
	if err != nil || r.Idle || len(r.Windows) < 2 {
		t.Errorf("a spinning shell: %v, %v; want never idle", r, err)
	}
	if st, err := ReadStat(sleeper.Process.Pid); err != nil || st.State != 'S' || st.PGrp == 0 || !Alive(sleeper.Process.Pid) {
		t.Errorf("sleep: %+v, %v", st, err)
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
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		st, err := ReadStat(pid)
		if errors.Is(err, ErrUnsupported) {
			t.Skip(err)
		}
		if err == nil && st.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed process is %+v, %v", st, err)
		}
	}
	if Alive(pid) {
		t.Error("a zombie is alive")
	}
}
