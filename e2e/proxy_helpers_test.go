package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/proctest"
)

// pxAgent builds the fake agent of testdata/proxyagent once per run.
func pxAgent(t *testing.T) string { return testAgent(t, "proxyagent") }

// pxCommand returns `permhost proxy [flags] -- proxyagent ARGS`, with stderr
// collected.
func pxCommand(t *testing.T, flags []string, agentArgs ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	args := append([]string{"proxy"}, flags...)
	args = append(args, "--", pxAgent(t))
	cmd := exec.Command(permhostBin, append(args, agentArgs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &lockedWriter{w: &stderr}
	return cmd, &stderr
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// pxWaitExit waits for cmd with a deadline and returns its exit code.
func pxWaitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(within):
		cmd.Process.Kill()
		t.Fatalf("permhost did not exit within %v", within)
		return -1
	}
}

// pxAlive reports whether pid is a live (not zombie) process.
func pxAlive(pid int) bool { return proctest.Alive(pid) }

// pxGroupAlive lists the live processes of process group pgid.
func pxGroupAlive(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := proctest.ReadStat(pid); err == nil && st.PGrp == pgid && st.Alive() {
			live = append(live, pid)
		}
	}
	return live
}

// pxReadPids waits for the linger agent's pid file.
func pxReadPids(t *testing.T, path string) (agent, child int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if err == nil && len(b) > 0 {
			f := strings.Fields(string(b))
			a, _ := strconv.Atoi(f[0])
			c, _ := strconv.Atoi(f[1])
			return a, c
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the agent did not write its pids")
	return 0, 0
}
