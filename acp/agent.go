//go:build unix

package acp

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// AgentConfig describes the agent process to start.
type AgentConfig struct {
	// Argv is the agent's command and arguments; Argv[0] is looked up in
	// PATH.
	Argv []string
	// Stderr receives the agent's stderr; nil means os.Stderr.
	Stderr io.Writer
	// Env is the agent's environment; nil means permhost's own.
	Env []string
	// Dir is the agent's working directory; empty means permhost's own.
	Dir string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Agent is a running agent process in its own process group, so that
// stopping it reaches every process it started and a terminal's Ctrl-C
// reaches permhost alone. The creator calls Close.
type Agent struct {
	cmd    *exec.Cmd
	log    *slog.Logger
	stdin  *os.File
	stdout *os.File
	done   chan struct{}
	state  *os.ProcessState
	err    error // from Wait when there is no state

	stopMu   sync.Mutex
	stopping bool
}

// StartAgent starts the agent described by cfg.
func StartAgent(cfg AgentConfig) (*Agent, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, errors.New("acp: no agent command given")
	}
	a := &Agent{log: cfg.Logger, done: make(chan struct{})}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	cmd := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	cmd.Env, cmd.Dir = cfg.Env, cfg.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	// Real pipes, not exec's copying goroutines: Wait must not wait for a
	// grandchild that keeps a descriptor open, and no output is lost when
	// the agent exits.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("acp: agent stdin: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("acp: agent stdout: %w", err)
	}
	childFiles := []*os.File{inR, outW}
	cmd.Stdin, cmd.Stdout = inR, outW
	var errR *os.File
	switch w := cfg.Stderr.(type) {
	case nil:
		cmd.Stderr = os.Stderr
	case *os.File:
		cmd.Stderr = w
	default:
		var errW *os.File
		if errR, errW, err = os.Pipe(); err != nil {
			closeAll(inR, inW, outR, outW)
			return nil, fmt.Errorf("acp: agent stderr: %w", err)
		}
		cmd.Stderr = errW
		childFiles = append(childFiles, errW)
		go func() {
			_, _ = io.Copy(w, errR)
			errR.Close()
		}()
	}
	if err := cmd.Start(); err != nil {
		closeAll(append(childFiles, inW, outR)...)
		if errR != nil {
			errR.Close()
		}
		return nil, fmt.Errorf("acp: starting the agent: %w", err)
	}
	closeAll(childFiles...)
	a.cmd, a.stdin, a.stdout = cmd, inW, outR
	a.log.Debug("agent started", "pid", cmd.Process.Pid, "argv", cfg.Argv)
	go a.wait()
	return a, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

func (a *Agent) wait() {
	err := a.cmd.Wait()
	a.state = a.cmd.ProcessState
	if a.state == nil {
		a.err = err
	}
	// Whatever the agent left behind in its group goes with it, and is
	// gone before Done says so: a SIGKILLed process dies when the kernel
	// next runs it (tearing down a large one takes a while), and permhost
	// must not exit before its agent's processes (no orphan).
	a.killGroup(syscall.SIGKILL)
	if !waitGroupGone(a.cmd.Process.Pid, groupGoneWait) {
		a.log.Warn("processes of the agent's group are still alive after SIGKILL", "pgid", a.cmd.Process.Pid, "waited", groupGoneWait)
	}
	a.log.Debug("agent ended", "pid", a.cmd.Process.Pid, "how", a.describe())
	close(a.done)
}

// groupGoneWait bounds how long the end of the agent waits for its group
// to be gone after SIGKILL (a process stuck in the kernel may not die).
const groupGoneWait = time.Second

// waitGroupGone polls until no process of group pgid is alive, for at most
// bound; false when some still is.
func waitGroupGone(pgid int, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	pause := 500 * time.Microsecond
	for groupLive(pgid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
	return true
}

// groupSignalable reports whether kill(-pgid, 0) finds a process, zombies
// included.
func groupSignalable(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Stdin is the agent's standard input.
func (a *Agent) Stdin() io.WriteCloser { return a.stdin }

// Stdout is the agent's standard output.
func (a *Agent) Stdout() io.Reader { return a.stdout }

// Pid is the agent's process id, which is also its process group id.
func (a *Agent) Pid() int { return a.cmd.Process.Pid }

// Done is closed once the agent has exited and its process group was
// killed and is gone (at most a second after the kill: a process stuck in
// the kernel may outlive it, which is logged).
func (a *Agent) Done() <-chan struct{} { return a.done }

// ExitCode is the agent's exit status once Done is closed: its exit code,
// or 128+N when signal N ended it.
func (a *Agent) ExitCode() int {
	<-a.done
	if a.state == nil {
		return 1
	}
	if ws, ok := a.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return a.state.ExitCode()
}

// ExitDescription says how the agent ended, for messages to the client;
// it waits for Done.
func (a *Agent) ExitDescription() string {
	<-a.done
	return a.describe()
}

func (a *Agent) describe() string {
	if a.state == nil {
		return fmt.Sprintf("the agent could not be waited for: %v", a.err)
	}
	if ws, ok := a.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("the agent (pid %d) was killed by signal %d (%v)", a.cmd.Process.Pid, int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("the agent (pid %d) exited with status %d", a.cmd.Process.Pid, a.state.ExitCode())
}

// Stop ends the agent the polite way: close its stdin, give it grace to
// exit, then SIGTERM its process group, then after killGrace SIGKILL the
// group. It returns once the agent has exited. Concurrent and repeated calls
// wait for the first one.
func (a *Agent) Stop(grace, killGrace time.Duration) {
	a.stopMu.Lock()
	first := !a.stopping
	a.stopping = true
	a.stopMu.Unlock()
	if !first {
		<-a.done
		return
	}
	a.stdin.Close()
	if a.waitFor(grace) {
		return
	}
	a.log.Info("the agent did not exit in time; sending SIGTERM to its process group", "pid", a.Pid(), "grace", grace)
	a.killGroup(syscall.SIGTERM)
	if a.waitFor(killGrace) {
		return
	}
	a.log.Warn("the agent ignored SIGTERM; sending SIGKILL to its process group", "pid", a.Pid())
	a.killGroup(syscall.SIGKILL)
	<-a.done
}

func (a *Agent) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.done:
		return true
	case <-t.C:
		return false
	}
}

func (a *Agent) killGroup(sig syscall.Signal) {
	if err := syscall.Kill(-a.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		a.log.Warn("signalling the agent's process group failed", "pid", a.cmd.Process.Pid, "signal", sig, "err", err)
	}
}

// Close kills the agent's process group at once if it is still running,
// waits for it, and releases the pipes. It is idempotent.
func (a *Agent) Close() error {
	select {
	case <-a.done:
	default:
		a.killGroup(syscall.SIGKILL)
		<-a.done
	}
	a.stdin.Close()
	a.stdout.Close()
	return nil
}
