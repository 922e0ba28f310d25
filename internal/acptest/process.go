package acptest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Process is a child process whose stdin and stdout are pipes held by the
// test and whose stderr is captured.
type Process struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	stderr SyncBuffer
	done   chan struct{}
	err    error // Wait's result; read after done is closed
}

// Start starts argv[0] with arguments argv[1:] in its own process group. When
// the test ends, a process still running is killed with its group, and if the
// test failed its stderr is logged.
func Start(t testing.TB, argv ...string) *Process {
	t.Helper()
	if len(argv) == 0 {
		t.Fatal("acptest: Start needs a command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	// Plain os.Pipes rather than cmd.StdoutPipe: Wait closes those as soon
	// as the process exits, losing output the test has not read yet.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	p.Stdin, p.Stdout = stdinW, stdoutR
	err = cmd.Start()
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		t.Fatalf("acptest: starting %q: %v", argv, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		p.Stdin.Close()
		p.Stdout.Close()
		if t.Failed() {
			t.Logf("stderr of %q:\n%s", argv, p.Stderr())
		}
	})
	return p
}

// Stderr returns what the process has written to stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits up to timeout for the process to exit and returns its exit
// status. If it is still running then, Wait kills its process group and
// returns an error.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return -1, fmt.Errorf("acptest: %s still running after %v; killed", p.Cmd.Path, timeout)
	}
	var exit *exec.ExitError
	if p.err != nil && !errors.As(p.err, &exit) {
		return -1, p.err
	}
	return p.Cmd.ProcessState.ExitCode(), nil
}
