//go:build linux

package acp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/proctest"
)

// A zombie is no live member of its group (it may never be reaped where
// PID 1 does not reap), though kill(-pgid, 0) still finds it.
func TestGroupLiveSkipsZombies(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	if !groupLive(pid) {
		t.Fatal("a running process was not found in its group")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Not waited for: it stays a zombie. It becomes one when the kernel has
	// run its exit, which this polls for (the hang guard is generous).
	for deadline := time.Now().Add(10 * time.Second); proctest.Alive(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed process is still alive")
		}
	}
	if st, err := proctest.ReadStat(pid); err != nil || st.State != 'Z' {
		t.Fatalf("the killed process is %+v, %v; want a zombie", st, err)
	}
	if groupLive(pid) {
		t.Error("a zombie counted as alive")
	}
	if !groupSignalable(pid) {
		t.Error("kill(-pgid, 0) did not find the zombie: the test proves nothing")
	}
}

// Once Done is closed, nothing of the agent's group is alive: not the
// agent, not the children it left, also after Stop had to SIGKILL them all.
// (permhost exits right after; it must leave no orphan. A SIGKILLed process
// dies when the kernel next runs it: on a loaded machine permhost once
// exited before its agent's child had, which this machine does not show
// often enough to catch, so the test states the contract.)
func TestAgentDoneMeansGroupGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(a *Agent)
	}{
		{"close", func(a *Agent) { a.Close() }},
		{"stop: SIGTERM ignored, SIGKILL", func(a *Agent) { a.Stop(50*time.Millisecond, 50*time.Millisecond) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pids := filepath.Join(t.TempDir(), "pids")
			// Three children that ignore SIGTERM (an ignored signal is
			// inherited), then the agent waits for its input to end and
			// for them.
			script := `trap '' TERM; for i in 1 2 3; do sleep 300 & echo $! >> "$0"; done; echo $$ >> "$0"; cat >/dev/null; wait`
			a, err := StartAgent(AgentConfig{Argv: []string{"sh", "-c", script, pids}})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			var members []int
			for deadline := time.Now().Add(10 * time.Second); len(members) < 4; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the agent did not start its children")
				}
				b, _ := os.ReadFile(pids)
				members = members[:0]
				for _, f := range strings.Fields(string(b)) {
					n, _ := strconv.Atoi(f)
					members = append(members, n)
				}
			}
			tc.stop(a)
			<-a.Done()
			if groupLive(a.Pid()) {
				t.Errorf("the agent's group is still alive when Done is closed")
			}
			for _, pid := range members {
				if proctest.Alive(pid) {
					t.Errorf("process %d of the agent's group is alive when Done is closed", pid)
				}
			}
		})
	}
}
