package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProxyAgentCrash: the agent dies mid-turn; the editor's pending
// request gets -32603 naming the exit and permhost exits with the agent's
// status.
func TestProxyAgentCrash(t *testing.T) {
	cmd, stderr := pxCommand(t, nil, "crash")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`+"\n")
	r := bufio.NewReader(stdout)
	update, _ := r.ReadString('\n')
	if !strings.Contains(update, `"text":"working"`) {
		t.Fatalf("first line %q", update)
	}
	reply, _ := r.ReadString('\n')
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"permhost: the agent (pid `
	if !strings.HasPrefix(reply, want) || !strings.Contains(reply, "exited with status 3 before answering session/prompt") {
		t.Fatalf("reply %q", reply)
	}
	if code := pxWaitExit(t, cmd, 20*time.Second); code != 3 {
		t.Fatalf("exit %d, want the agent's 3; stderr:\n%s", code, stderr)
	}
}

// pxLingering is permhost in front of an agent that ignores the end of its
// input and has a child of its own.
type pxLingering struct {
	cmd             *exec.Cmd
	stdin           io.WriteCloser
	agentPid, child int
	stderr          fmt.Stringer
}

func pxLinger(t *testing.T, grace string, stubborn bool) *pxLingering {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pids")
	args := []string{"linger", pidfile}
	if stubborn {
		args = append(args, "stubborn")
	}
	c, buf := pxCommand(t, []string{"--shutdown-grace", grace, "--log-level", "debug"}, args...)
	stdin, _ := c.StdinPipe()
	c.Stdout = io.Discard
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill() })
	l := &pxLingering{cmd: c, stdin: stdin, stderr: c.Stderr.(*lockedWriter)}
	l.agentPid, l.child = pxReadPids(t, pidfile)
	_ = buf
	return l
}

func pxCheckGone(t *testing.T, agentPid, childPid int) {
	t.Helper()
	if pxAlive(agentPid) || pxAlive(childPid) {
		t.Fatalf("still running: agent %v, its child %v", pxAlive(agentPid), pxAlive(childPid))
	}
	if live := pxGroupAlive(agentPid); len(live) > 0 {
		t.Fatalf("processes left in the agent's group: %v", live)
	}
}

// TestProxyEditorDisconnect: the editor closes stdin; the agent ignores it,
// gets SIGTERM after the grace, and nothing of its group survives.
func TestProxyEditorDisconnect(t *testing.T) {
	for _, c := range []struct {
		name     string
		stubborn bool
		want     int // exit status: killed by SIGTERM or SIGKILL
	}{{"SIGTERM", false, 128 + 15}, {"SIGKILL after ignored SIGTERM", true, 128 + 9}} {
		t.Run(c.name, func(t *testing.T) {
			l := pxLinger(t, "300ms", c.stubborn)
			agentPid, childPid := l.agentPid, l.child
			if !pxAlive(agentPid) || pxGroupAlive(agentPid) == nil {
				t.Fatal("agent not running")
			}
			start := time.Now()
			l.stdin.Close()
			// grace 300ms + 2s between SIGTERM and SIGKILL, generously.
			if code := pxWaitExit(t, l.cmd, 15*time.Second); code != c.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.want, l.stderr)
			}
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Fatalf("stopped after %v, before the grace", d)
			}
			pxCheckGone(t, agentPid, childPid)
		})
	}
}

// TestProxySignal: SIGTERM to permhost shuts down the same way. (SIGINT
// does not: TestProxyInterruptKeepsTheSession.)
func TestProxySignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			l := pxLinger(t, "200ms", false)
			agentPid, childPid := l.agentPid, l.child
			if err := l.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := pxWaitExit(t, l.cmd, 15*time.Second); code != 128+15 {
				t.Fatalf("exit %d, want 143 (agent stopped by SIGTERM); stderr:\n%s", code, l.stderr)
			}
			if !strings.Contains(l.stderr.String(), "signal received") {
				t.Errorf("no shutdown log; stderr:\n%s", l.stderr)
			}
			pxCheckGone(t, agentPid, childPid)
		})
	}
}
