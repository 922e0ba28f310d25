package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// coreAgent builds the scripted agent of testdata/coreagent once per run.
func coreAgent(t *testing.T) string { return testAgent(t, "coreagent") }

// coreRun is `permhost proxy [flags] -- coreagent script SCRIPT RECORD` with
// the test as the editor.
type coreRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // what the editor receives, line by line
	record string      // what the agent received
	stderr *lockedWriter
	seen   []string
}

func startCore(t *testing.T, flags []string, script ...string) *coreRun {
	t.Helper()
	return startCoreWith(t, false, flags, script)
}

// startCoreGroup is startCore with permhost leading a process group of its
// own, as a terminal's foreground job does.
func startCoreGroup(t *testing.T, flags []string, script ...string) *coreRun {
	t.Helper()
	return startCoreWith(t, true, flags, script)
}

func startCoreWith(t *testing.T, group bool, flags []string, script []string) *coreRun {
	t.Helper()
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "script")
	if err := os.WriteFile(scriptPath, []byte(strings.Join(script, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &coreRun{t: t, record: filepath.Join(dir, "record"), lines: make(chan string, 1<<16), stderr: &lockedWriter{w: new(bytes.Buffer)}}
	args := append([]string{"proxy"}, flags...)
	args = append(args, "--", coreAgent(t), "script", scriptPath, r.record)
	r.cmd = exec.Command(permhostBin, args...)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	r.cmd.Stderr = r.stderr
	r.stdin, _ = r.cmd.StdinPipe()
	stdout, _ := r.cmd.StdoutPipe()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("the editor received:\n%s\nstderr:\n%s", strings.Join(r.seen, ""), r.stderr)
		}
	})
	go func() {
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				r.lines <- line
			}
			if err != nil {
				close(r.lines)
				return
			}
		}
	}()
	return r
}

// send writes one line (a "\n" is added) to permhost's stdin.
func (r *coreRun) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatalf("writing to permhost: %v", err)
	}
}

// next returns the next line the editor receives.
func (r *coreRun) next(what string) string {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("permhost's output ended before %s", what)
		}
		if len(l) < 2000 {
			r.seen = append(r.seen, l)
		} else {
			r.seen = append(r.seen, l[:200]+"…\n")
		}
		return l
	case <-time.After(pipeWait):
		r.t.Fatalf("the editor did not receive %s within %v", what, pipeWait)
		return ""
	}
}

// finish closes permhost's stdin, drains its output, waits for it and
// returns what the agent received, line by line.
func (r *coreRun) finish() (received []string, exit int) {
	r.t.Helper()
	r.stdin.Close()
	for l := range r.lines {
		r.seen = append(r.seen, l)
	}
	exit = pxWaitExit(r.t, r.cmd, 60*time.Second)
	b, err := os.ReadFile(r.record)
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n"), exit
}

// corePerm is a session/request_permission from the agent with the usual
// three options.
func corePerm(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t` +
		strings.Trim(id, `"`) + `","title":"rm -rf build","kind":"execute"},"options":[{"optionId":"allow_always","name":"Always Allow","kind":"allow_always"},` +
		`{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`
}

func coreSelected(id, option string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"selected","optionId":"` + option + `"}}}` + "\n"
}

func coreCancelled(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"cancelled"}}}` + "\n"
}

// expectLines fails unless got (lines with terminators) is want, line by line.
func expectLines(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) > 0 && got[len(got)-1] == "" {
		got = got[:len(got)-1]
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("%s, line %d:\n got %.300q\nwant %.300q\n(all %d lines: %.2000q)", what, i+1, g, w, len(got), got)
		}
	}
}
