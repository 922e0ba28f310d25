package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/permhost/permhost/internal/acptest"
)

// These tests run the real binary: `permhost run ... -- runagent` (the
// scripted agent of testdata/runagent) and the ACP SDK's example agent.

// runWait bounds every wait of these tests.
const runWait = 30 * time.Second

func runAgent(t *testing.T) string { return testAgent(t, "runagent") }

// runEnv is one test's directory: the session cwd, the config, the
// decision log and the agent's report.
type runEnv struct {
	t                      *testing.T
	dir, cwd, config, dlog string
	report                 string
}

// newRunEnv writes a configuration with the given [[plugin]] TOML.
func newRunEnv(t *testing.T, plugins string) *runEnv {
	t.Helper()
	dir := t.TempDir()
	e := &runEnv{t: t, dir: dir, cwd: filepath.Join(dir, "project"), config: filepath.Join(dir, "permhost.toml"),
		dlog: filepath.Join(dir, "decisions.jsonl"), report: filepath.Join(dir, "report.jsonl")}
	if err := os.Mkdir(e.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	// The agent's own options, as these tests were written for; permhost
	// run with permhost's grants is policy's TestGrantHeadless.
	cfg := fmt.Sprintf("[log]\npath = %q\n\n[session]\nallow_always = \"agent\"\n%s", e.dlog, plugins)
	if err := os.WriteFile(e.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// slowPlugin is the scripted fixture deciding after delay.
func slowPlugin(decision string, delay time.Duration) string {
	return fmt.Sprintf("\n[[plugin]]\nname = \"slow\"\npath = %q\ntimeout = \"50s\"\n[plugin.config]\ndecision = '%s'\ndelay_ms = %d\n",
		filepath.Join(repoRoot, "testdata", "wasm", "scripted.wasm"), decision, delay.Milliseconds())
}

// cmd returns permhost run with flags, then the agent.
func (e *runEnv) cmd(flags []string, agent ...string) *exec.Cmd {
	args := append([]string{"run", "--config", e.config, "--cwd", e.cwd, "--prompt", "clean up"}, flags...)
	args = append(append(args, "--"), agent...)
	c := exec.Command(permhostBin, args...)
	c.Env = append(os.Environ(), "XDG_CONFIG_HOME="+e.dir)
	return c
}

// run runs permhost run to the end.
func (e *runEnv) run(flags []string, agent ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	return runToEnd(e.t, e.cmd(flags, agent...))
}

// runToEnd runs c, a permhost run, to its end (within runWait).
func runToEnd(t *testing.T, c *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var o, er bytes.Buffer
	c.Stdout, c.Stderr = &o, &er
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(runWait):
		c.Process.Kill()
		<-done
		t.Fatalf("permhost run did not end; stderr:\n%s", er.String())
	}
	return c.ProcessState.ExitCode(), o.String(), er.String()
}

// agentGot returns the lines the agent received.
func (e *runEnv) agentGot() []map[string]any {
	e.t.Helper()
	return readJSONLines(e.t, e.report)
}

func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("%s: line %q: %v", path, l, err)
		}
		out = append(out, m)
	}
	return out
}

// permissionAnswer is the agent's view of the answer to its request id 0.
func permissionAnswer(t *testing.T, got []map[string]any) string {
	t.Helper()
	for _, m := range got {
		if id, ok := m["id"].(float64); ok && id == 0 && m["method"] == nil {
			o := m["result"].(map[string]any)["outcome"].(map[string]any)
			if o["outcome"] == "selected" {
				return o["optionId"].(string)
			}
			return o["outcome"].(string)
		}
	}
	return "(no answer)"
}

// decisions returns the decision log.
func (e *runEnv) decisions() []map[string]any {
	e.t.Helper()
	return readJSONLines(e.t, e.dlog)
}

func TestRunExitStatuses(t *testing.T) {
	t.Parallel()
	agent := runAgent(t)
	tests := []struct {
		name  string
		args  []string
		code  int
		tells string // on stderr
	}{
		{"end_turn", []string{"-stop", "end_turn"}, 0, "turn ended: end_turn"},
		{"cancelled", []string{"-stop", "cancelled"}, 4, "turn ended: cancelled"},
		{"refusal", []string{"-stop", "refusal"}, 5, "turn ended: refusal"},
		{"max_tokens", []string{"-stop", "max_tokens"}, 6, "turn ended: max_tokens"},
		{"max_turn_requests", []string{"-stop", "max_turn_requests"}, 6, "turn ended: max_turn_requests"},
		{"unknown stop reason", []string{"-stop", "bored"}, 3, `unknown stop reason "bored"`},
		{"agent crash", []string{"-mode", "crash"}, 3, "exited with status 3 before the turn ended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t, "")
			code, stdout, stderr := e.run(nil, append([]string{agent, "-report", e.report}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.tells) {
				t.Fatalf("exit %d, want %d; stderr lacks %q?\n%s", code, tt.code, tt.tells, stderr)
			}
			if !strings.HasPrefix(stdout, "Cleaning up.\n") {
				t.Errorf("stdout %q", stdout)
			}
		})
	}
	t.Run("usage errors", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, "")
		for _, flags := range [][]string{{"--on-undecided", "maybe"}, {"--permission-timeout", "-1s"}, {"--prompt-file", "/nonexistent"}} {
			if code, _, stderr := e.run(flags, agent); code != 2 || !strings.Contains(stderr, "permhost run:") {
				t.Errorf("%v: exit %d\n%s", flags, code, stderr)
			}
		}
		c := exec.Command(permhostBin, "run", "--prompt", "x")
		if out, _ := c.CombinedOutput(); c.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "no agent command") {
			t.Errorf("no agent: exit %d\n%s", c.ProcessState.ExitCode(), out)
		}
		bad := filepath.Join(t.TempDir(), "bad.toml")
		os.WriteFile(bad, []byte("strategy = \"sometimes\"\n"), 0o600)
		c = exec.Command(permhostBin, "run", "--config", bad, "--prompt", "x", "--", agent)
		if out, _ := c.CombinedOutput(); c.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "strategy") {
			t.Errorf("bad config: exit %d\n%s", c.ProcessState.ExitCode(), out)
		}
		c = exec.Command(permhostBin, "run", "--help")
		if out, _ := c.CombinedOutput(); c.ProcessState.ExitCode() != 0 || !strings.Contains(string(out), "6  a limit ended the turn") {
			t.Errorf("--help: exit %d\n%s", c.ProcessState.ExitCode(), out)
		}
	})
}

func TestRunOnUndecided(t *testing.T) {
	t.Parallel()
	agent := runAgent(t)
	tests := []struct {
		mode       string
		wantAnswer string
		wantBy     string
		stderr     string
	}{
		{"reject", "reject", "builtin", `rejected: "Reject" (reject_once) by the builtin fallback: every plugin abstained; headless policy: reject`},
		{"cancel", "cancelled", "builtin", "cancelled by the builtin fallback: every plugin abstained; headless policy: cancel"},
		{"prompt", "reject", "builtin", "stdin is not a terminal: --on-undecided prompt behaves as reject"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t, slowPlugin("{\"outcome\":\"abstain\"}", 0))
			code, stdout, stderr := e.run([]string{"--on-undecided", tt.mode}, agent, "-report", e.report)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if got := permissionAnswer(t, e.agentGot()); got != tt.wantAnswer {
				t.Errorf("the agent got %q, want %q", got, tt.wantAnswer)
			}
			if !strings.Contains(stderr, tt.stderr) || !strings.Contains(stderr, "? permission rm -rf build [execute]") {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr)
			}
			if !strings.Contains(stdout, "Answer: ") || !strings.Contains(stderr, "rm -rf build → failed") {
				t.Errorf("transcript:\n%s\n%s", stdout, stderr)
			}
			log := e.decisions()
			if len(log) != 1 || log[0]["via"] != "run" || log[0]["decidedBy"] != tt.wantBy {
				t.Fatalf("decision log %v", log)
			}
		})
	}
	t.Run("plugin decides", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, slowPlugin(`{"outcome":"allow","reason":"cleanup is fine"}`, 0))
		code, _, stderr := e.run(nil, agent, "-report", e.report)
		if code != 0 || permissionAnswer(t, e.agentGot()) != "allow" ||
			!strings.Contains(stderr, `allowed: "Allow" (allow_once) by plugin slow: cleanup is fine`) {
			t.Fatalf("exit %d, answer %q\n%s", code, permissionAnswer(t, e.agentGot()), stderr)
		}
		if log := e.decisions(); len(log) != 1 || log[0]["decidedBy"] != "slow" || log[0]["optionId"] != "allow" {
			t.Fatalf("decision log %v", log)
		}
	})
}

func TestRunJSONEvents(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "")
	code, stdout, stderr := e.run([]string{"--json"}, runAgent(t), "-report", e.report)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var kinds []string
	var perm, tool map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("stdout line %q is not JSON: %v", l, err)
		}
		k := ev["event"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ev["time"].(string)); err != nil {
			t.Errorf("event time %v", ev["time"])
		}
		kinds = append(kinds, k)
		switch k {
		case "permission":
			perm = ev["permission"].(map[string]any)
		case "tool_call":
			tool = ev["toolCall"].(map[string]any)
		case "stop":
			if ev["stopReason"] != "end_turn" {
				t.Errorf("stop event %v", ev)
			}
		}
	}
	want := "text tool_call permission tool_call_update text stop"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("events %q, want %q", strings.Join(kinds, " "), want)
	}
	if tool["runBy"] != "agent" || tool["kind"] != "execute" || tool["title"] != "rm -rf build" {
		t.Errorf("tool_call %v", tool)
	}
	if perm["decidedBy"] != "builtin" || perm["outcome"] != "selected" || perm["optionId"] != "reject" ||
		perm["optionKind"] != "reject_once" || perm["inTurn"] != true || perm["durationMs"] == nil || perm["decisionId"] == "" {
		t.Errorf("permission event %v", perm)
	}
	if strings.Contains(stderr, "? permission") {
		t.Errorf("--json also printed the transcript on stderr:\n%s", stderr)
	}
}

// startRun starts permhost run and returns it with its stdout as lines.
func (e *runEnv) startRun(flags []string, agent ...string) (*exec.Cmd, chan string, *runLockedWriter) {
	e.t.Helper()
	c := e.cmd(flags, agent...)
	stdout, err := c.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	stderr := &runLockedWriter{w: &bytes.Buffer{}}
	c.Stderr = stderr
	if err := c.Start(); err != nil {
		e.t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	e.t.Cleanup(func() { c.Process.Kill() })
	return c, lines, stderr
}

type runLockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *runLockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *runLockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// waitStderr waits until a line of stderr shows every one of want.
func waitStderr(t *testing.T, stderr *runLockedWriter, want ...string) {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for !logHas(stderr.String(), want...) {
		if time.Now().After(deadline) {
			t.Fatalf("no line of stderr shows %q:\n%s", want, stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logHas reports whether one line of log holds every one of want.
func logHas(log string, want ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, w := range want {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

func waitLine(t *testing.T, lines chan string, prefix string) {
	t.Helper()
	timeout := time.After(runWait)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended before %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return
			}
		case <-timeout:
			t.Fatalf("no line %q", prefix)
		}
	}
}

func waitExit(t *testing.T, c *exec.Cmd) int {
	t.Helper()
	return pxWaitExit(t, c, runWait)
}

func TestRunCtrlC(t *testing.T) {
	t.Parallel()
	agent := runAgent(t)
	t.Run("cancels the turn and answers the pending request cancelled", func(t *testing.T) {
		t.Parallel()
		// The plugin takes 20 s: the request is pending when Ctrl-C comes.
		e := newRunEnv(t, slowPlugin(`{"outcome":"allow"}`, 20*time.Second))
		c, lines, stderr := e.startRun([]string{"--json", "--permission-timeout", "0", "--log-level", "debug"}, agent, "-mode", "wait-cancel", "-report", e.report)
		waitLine(t, lines, `{"event":"tool_call"`)
		waitStderr(t, stderr, `msg="calling plugin"`, `plugin=slow`) // the request is with the plugin
		c.Process.Signal(syscall.SIGINT)
		if code := waitExit(t, c); code != 4 {
			t.Fatalf("exit %d, want 4\n%s", code, stderr.String())
		}
		got := e.agentGot()
		if permissionAnswer(t, got) != "cancelled" {
			t.Errorf("the agent got %q for its request", permissionAnswer(t, got))
		}
		sawCancel := false
		for _, m := range got {
			sawCancel = sawCancel || m["method"] == "session/cancel"
		}
		if !sawCancel {
			t.Error("no session/cancel reached the agent")
		}
		if log := e.decisions(); len(log) != 1 || log[0]["decidedBy"] != "cancel" || log[0]["outcome"] != "cancelled" {
			t.Errorf("decision log %v", log)
		}
	})
	t.Run("a second Ctrl-C stops an agent that ignores the first", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, slowPlugin(`{"outcome":"reject"}`, 0))
		c, lines, stderr := e.startRun(nil, agent, "-mode", "stubborn", "-report", e.report)
		waitLine(t, lines, "Cleaning up.")
		time.Sleep(200 * time.Millisecond)
		c.Process.Signal(syscall.SIGINT)
		time.Sleep(300 * time.Millisecond)
		c.Process.Signal(syscall.SIGINT)
		if code := waitExit(t, c); code != 4 {
			t.Fatalf("exit %d, want 4\n%s", code, stderr.String())
		}
		if s := stderr.String(); !strings.Contains(s, "cancelling the turn") || !strings.Contains(s, "stopping the agent") {
			t.Errorf("stderr:\n%s", s)
		}
	})
}

func TestRunPermissionTimeout(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, slowPlugin(`{"outcome":"allow"}`, 20*time.Second))
	start := time.Now()
	code, _, stderr := e.run([]string{"--permission-timeout", "300ms"}, runAgent(t), "-report", e.report)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the run took %v: the plugin's 20 s were waited for", took)
	}
	if got := permissionAnswer(t, e.agentGot()); got != "reject" {
		t.Errorf("the agent got %q", got)
	}
	if !strings.Contains(stderr, "by the builtin fallback: no decision within 300ms (--permission-timeout)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if log := e.decisions(); len(log) != 1 || log[0]["decidedBy"] != "builtin" {
		t.Errorf("decision log %v", log)
	}
}

// terminalRun starts permhost run --on-undecided prompt on a
// pseudo-terminal and waits for the question.
type terminalRun struct {
	c      *exec.Cmd
	ptmx   *os.File
	mu     sync.Mutex
	screen bytes.Buffer
}

func startTerminalRun(t *testing.T, e *runEnv, flags ...string) *terminalRun {
	t.Helper()
	c := e.cmd(append([]string{"--on-undecided", "prompt"}, flags...), runAgent(t), "-report", e.report)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	var stdout bytes.Buffer
	c.Stdin, c.Stderr, c.Stdout = tty, tty, &stdout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	r := &terminalRun{c: c, ptmx: ptmx}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			r.mu.Lock()
			r.screen.Write(b[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(runWait)
	for !r.shows("choice: ") {
		if time.Now().After(deadline) {
			t.Fatalf("no prompt on the terminal")
		}
		time.Sleep(time.Millisecond)
	}
	return r
}

func (r *terminalRun) shows(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Contains(r.screen.String(), s)
}

// showsSoon waits for the terminal to show s: what permhost wrote before it
// exited may still be on its way through the pseudo-terminal.
func (r *terminalRun) showsSoon(s string) bool {
	deadline := time.Now().Add(runWait)
	for !r.shows(s) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func (r *terminalRun) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.screen.String()
}

// A key pressed inside the grace after the question appears is not an
// answer. The grace here is an hour, so that the key is inside it however
// slow the machine: the question stays open until --permission-timeout,
// and the builtin rejects ([1], Always Allow, was ignored). The boundary of
// the grace itself is tested with a fake clock in internal/prompt.
func TestRunTerminalPromptIgnoresKeysInTheGrace(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "")
	r := startTerminalRun(t, e, "--prompt-grace", "1h", "--permission-timeout", "2s")
	r.ptmx.Write([]byte("1"))
	if code := waitExit(t, r.c); code != 0 {
		t.Fatalf("exit %d\n%s", code, r)
	}
	if got := permissionAnswer(t, e.agentGot()); got != "reject" {
		t.Fatalf("the agent got %q, want the builtin's reject (the key in the grace ignored)\n%s", got, r)
	}
	if log := e.decisions(); len(log) != 1 || log[0]["decidedBy"] != "builtin" || !strings.Contains(fmt.Sprint(log[0]["reason"]), "no decision within 2s") {
		t.Errorf("decision log %v", log)
	}
}

func TestRunTerminalPrompt(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "")
	r := startTerminalRun(t, e, "--prompt-grace", "0", "--permission-timeout", "20s")
	r.ptmx.Write([]byte("2")) // Allow
	if code := waitExit(t, r.c); code != 0 {
		t.Fatalf("exit %d\n%s", code, r)
	}
	if got := permissionAnswer(t, e.agentGot()); got != "allow" {
		t.Fatalf("the agent got %q, want allow\n%s", got, r)
	}
	for _, want := range []string{"permission requested [execute]: rm -rf build", "command: rm -rf build", "[1] Always Allow (allow_always)", "[3] Reject (reject_once)", `allowed: "Allow" (allow_once) by you`} {
		if !r.showsSoon(want) {
			t.Errorf("the terminal did not show %q", want)
		}
	}
	if log := e.decisions(); len(log) != 1 || log[0]["decidedBy"] != "person" || log[0]["person"].(map[string]any)["answer"] != "allow" {
		t.Errorf("decision log %v", log)
	}
}

func TestRunFileAccess(t *testing.T) {
	t.Parallel()
	agent := runAgent(t)
	e := newRunEnv(t, "")
	inside := filepath.Join(e.cwd, "notes.txt")
	os.WriteFile(inside, []byte("inside text"), 0o644)
	outside := filepath.Join(e.dir, "secret.txt")
	os.WriteFile(outside, []byte("hunter2"), 0o644)
	tests := []struct {
		name, path string
		flags      []string
		want       string
	}{
		{"inside with --allow-fs", inside, []string{"--allow-fs"}, "read ok: inside text"},
		{"outside with --allow-fs", outside, []string{"--allow-fs"}, `read error: {"code":-32602`},
		{"without --allow-fs", inside, nil, `read error: {"code":-32601`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := e.run(tt.flags, agent, "-read", tt.path)
			if code != 0 || !strings.Contains(stdout, tt.want) || strings.Contains(stdout, "hunter2") {
				t.Fatalf("exit %d, stdout lacks %q:\n%s\n%s", code, tt.want, stdout, stderr)
			}
		})
	}
}

// The ACP SDK's example agent: an edit request "Modifying critical
// configuration file" with options allow / reject.
func TestRunSDKAgent(t *testing.T) {
	t.Parallel()
	sdk := acptest.SDKAgent(t)
	tests := []struct {
		name    string
		plugins string
		flags   []string
		want    string // on stderr
	}{
		{"reject", "", []string{"--on-undecided", "reject"}, `rejected: "Skip this change" (reject_once) by the builtin fallback`},
		{"cancel", "", []string{"--on-undecided", "cancel"}, "cancelled by the builtin fallback"},
		{"plugin allows", slowPlugin(`{"outcome":"allow","reason":"ok"}`, 0), nil, `allowed: "Allow this change" (allow_once) by plugin slow: ok`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t, tt.plugins)
			code, stdout, stderr := e.run(append([]string{"--json"}, tt.flags...), sdk...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stdout, `"event":"stop"`) || !strings.Contains(stdout, `"stopReason":"end_turn"`) {
				t.Errorf("stdout:\n%s", stdout)
			}
			code, _, stderr = e.run(tt.flags, sdk...)
			if code != 0 || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "turn ended: end_turn") {
				t.Errorf("exit %d; stderr lacks %q:\n%s", code, tt.want, stderr)
			}
			if log := e.decisions(); len(log) != 2 || log[0]["via"] != "run" {
				t.Errorf("decision log %v", log)
			}
		})
	}
}
