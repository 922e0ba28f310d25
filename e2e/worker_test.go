package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The process wall through the real binary: `isolation = "process"` runs
// the plugin in a `permhost plugin-worker` child of the proxy. The worker's
// test hooks (PERMHOST_WORKER_TEST_HOOK=1, a tool call titled
// "permhost-worker-test: crash") make the child die of a Go runtime fatal
// error, which nothing can recover in-process.

func workerAgent(t *testing.T) string { return testAgent(t, "workeragent") }

// walledConfig is a configuration of one process-isolated plugin that
// rejects everything, failing closed.
func walledConfig(t *testing.T, timeout string) (cfg, log string) {
	t.Helper()
	dir := t.TempDir()
	toml := fmt.Sprintf(`person_timeout = "0s"
[log]
path = "decisions.jsonl"

[[plugin]]
name = "walled"
path = %q
isolation = "process"
timeout = %q
failure_policy = "closed"
[plugin.config]
decision = '{"outcome":"reject","reason":"walled says no"}'
`, warmPlugin(t, wasmFixture("scripted")), timeout)
	cfg = filepath.Join(dir, "permhost.toml")
	if err := os.WriteFile(cfg, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, filepath.Join(dir, "decisions.jsonl")
}

// cancelForwarded plays an editor that answers every forwarded permission
// request with cancelled, and counts them.
func cancelForwarded(t *testing.T, stdout io.Reader, stdin io.Writer) *int {
	n := new(int)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Method == "session/request_permission" {
				*n++
				fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"cancelled"}}}`+"\n", m.ID)
			}
		}
	}()
	return n
}

// TestProcessIsolationSurvivesACrash: the plugin decides through its
// child; a request that kills the child with the Go runtime's fatal
// "out of memory" gets the builtin fallback (the plugin failed closed: the
// editor is asked), the proxy lives on, and a later request is decided by
// the plugin again, in a new child (at once, or, when a slow machine made
// the requests during the restart fail three times in a row, after the
// chain's 30 s quarantine). The decision log names the failure.
func TestProcessIsolationSurvivesACrash(t *testing.T) {
	cfg, logPath := walledConfig(t, "100ms")
	report := filepath.Join(t.TempDir(), "report")
	cmd := exec.Command(permhostBin, "proxy", "--config", cfg, "--", workerAgent(t), report,
		"ls", "permhost-worker-test: crash", "until-reject:ls")
	cmd.Env = append(os.Environ(), "PERMHOST_WORKER_TEST_HOOK=1")
	var stderr bytes.Buffer
	cmd.Stderr = &lockedWriter{w: &stderr}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	forwarded := cancelForwarded(t, stdout, stdin)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("proxy: %v\n%s", err, stderr.String())
		}
	case <-time.After(30*time.Second + 2*pipeWait):
		cmd.Process.Kill()
		t.Fatalf("proxy did not finish\n%s", stderr.String())
	}
	stdin.Close()
	got, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != 3 || lines[0] != "ls reject" || lines[1] != "permhost-worker-test: crash cancelled" ||
		!strings.HasPrefix(lines[2], "until-reject:ls reject after ") {
		t.Fatalf("agent's answers:\n%s\nproxy stderr:\n%s", got, stderr.String())
	}
	if *forwarded < 1 {
		t.Errorf("the crash's fallback did not reach the editor")
	}
	t.Logf("after the crash: %s", lines[2])

	var crash *workerLogLine
	for _, l := range readLog(t, logPath) {
		if l.ToolCall.Title == "permhost-worker-test: crash" {
			crash = &l
		}
	}
	if crash == nil || len(crash.Plugins) != 1 || crash.Plugins[0].Failure == nil {
		t.Fatalf("no logged failure for the crash: %+v", crash)
	}
	f := crash.Plugins[0].Failure
	// A -race binary's runtime says "too many address space collisions".
	if f.Kind != "memory" || !strings.Contains(f.Message, "plugin worker died") ||
		!strings.Contains(f.Message, "out of memory") && !(raceEnabled && strings.Contains(f.Message, "address space")) {
		t.Errorf("logged failure %+v", f)
	}
	if crash.Fallback == "" {
		t.Errorf("the crash decision did not go to the fallback: %+v", crash)
	}
}

type workerLogLine struct {
	ToolCall struct {
		Title string `json:"title"`
	} `json:"toolCall"`
	Fallback string `json:"fallback"`
	Plugins  []struct {
		Name    string `json:"name"`
		Outcome string `json:"outcome"`
		Failure *struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"failure"`
	} `json:"plugins"`
}

func readLog(t *testing.T, path string) []workerLogLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []workerLogLine
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var l workerLogLine
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("log line %s: %v", line, err)
		}
		out = append(out, l)
	}
	return out
}

// childrenOf lists the child processes of pid (all its threads').
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(s)
			out = append(out, n)
		}
	}
	return out
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// TestProcessIsolationDiesWithTheProxy: SIGKILL of the proxy (nothing
// closed, nothing said) takes its plugin worker along, even one busy with
// a call that never ends and so deaf to the end of its stdin.
func TestProcessIsolationDiesWithTheProxy(t *testing.T) {
	cfg, _ := walledConfig(t, "1m")
	cmd := exec.Command(permhostBin, "proxy", "--config", cfg, "--", workerAgent(t), "hold", "permhost-worker-test: hang")
	cmd.Env = append(os.Environ(), "PERMHOST_WORKER_TEST_HOOK=1")
	var stderr bytes.Buffer
	cmd.Stderr = &lockedWriter{w: &stderr}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var worker, agent int
	deadline := time.Now().Add(pipeWait)
	for worker == 0 || !busy(worker) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no busy plugin worker under the proxy\n%s", stderr.String())
		}
		for _, c := range childrenOf(t, cmd.Process.Pid) {
			if strings.Contains(cmdline(c), "plugin-worker walled") {
				worker = c
			} else {
				agent = c
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if agent != 0 {
		defer syscall.Kill(agent, syscall.SIGKILL)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline = time.Now().Add(pipeWait)
	for running(worker) {
		if time.Now().After(deadline) {
			syscall.Kill(worker, syscall.SIGKILL)
			t.Fatalf("plugin worker %d outlived the proxy", worker)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// busy reports whether pid has used CPU time: the hang hook spins.
func busy(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return false
	}
	utime, _ := strconv.Atoi(f[11])
	return utime > 10 // ticks: the spin has run a while
}

// TestEvalProcessIsolation: `permhost eval --isolation process` ends every
// hostile fixture as in-process does (kind for kind), and exits 3 for a
// failure, never crashing.
func TestEvalProcessIsolation(t *testing.T) {
	req := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(req, []byte(`{"decisionId":"d","session":{"id":"s"},"toolCall":{"id":"t","kind":"execute","title":"npm test"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"good", "infinite_loop", "call_tree", "unreachable", "invalid_json", "huge_output", "deep_recursion", "abi_major", "forbidden_import"} {
		t.Run(name, func(t *testing.T) {
			kinds := map[string]string{}
			for _, iso := range []string{"in-process", "process"} {
				cmd := exec.Command(permhostBin, "eval", "--plugin", wasmFixture(name), "--isolation", iso, req)
				out, err := cmd.Output()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				var res struct {
					Decision *json.RawMessage
					Failure  *struct{ Kind string }
				}
				if err := json.Unmarshal(out, &res); err != nil {
					t.Fatalf("%s: %v: %s", iso, err, out)
				}
				switch {
				case res.Failure != nil && code == 3:
					kinds[iso] = res.Failure.Kind
				case res.Decision != nil && code == 0:
					kinds[iso] = "decision"
				default:
					t.Fatalf("%s: exit %d, output %s", iso, code, out)
				}
			}
			if kinds["in-process"] != kinds["process"] {
				t.Errorf("in-process %s, process %s", kinds["in-process"], kinds["process"])
			}
		})
	}
}
