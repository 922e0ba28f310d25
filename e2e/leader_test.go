package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/leader"
)

// leaderAskEnv makes this test binary, started again as another user, a
// worker that connects to the socket it names, sends one ask and prints
// the leader's reply.
const leaderAskEnv = "PERMHOST_E2E_LEADER_ASK"

func init() {
	if sock := os.Getenv(leaderAskEnv); sock != "" {
		c, err := net.Dial("unix", sock)
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(1)
		}
		c.Write([]byte(`{"v":1,"type":"ask","id":"intruder","request":{"toolCall":{"id":"x","title":"from another user"},"options":[{"optionId":"yes","name":"Yes","kind":"allow_once"}]}}` + "\n"))
		reply, _ := io.ReadAll(c)
		os.Stdout.Write(reply)
		os.Exit(0)
	}
}

// leaderProc is `permhost leader` on a pseudo-terminal.
type leaderProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	ptmx   *os.File
	socket string
	log    string // its decision log
	stderr *leaderBuffer
	mu     sync.Mutex
	screen bytes.Buffer
	exited chan struct{}
}

// leaderBuffer is a bytes.Buffer safe for a writer and readers.
type leaderBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *leaderBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *leaderBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// leaderSocket returns a socket path in a fresh private directory (short:
// sun_path holds 107 bytes).
func leaderSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "phl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "leader.sock")
}

// startLeader runs `permhost leader --socket socket --config cfg` with a
// pseudo-terminal for its person, and waits until it listens.
func startLeader(t *testing.T, socket, cfg, log string) *leaderProc {
	t.Helper()
	lp := &leaderProc{t: t, socket: socket, log: log, stderr: &leaderBuffer{}, exited: make(chan struct{})}
	lp.cmd = exec.Command(permhostBin, "leader", "--socket", socket, "--config", cfg)
	lp.cmd.Stderr = lp.stderr
	ptmx, err := pty.StartWithAttrs(lp.cmd, &pty.Winsize{Rows: 60, Cols: 250}, &syscall.SysProcAttr{Setsid: true, Setctty: true})
	if err != nil {
		t.Fatal(err)
	}
	lp.ptmx = ptmx
	go func() {
		var buf [4096]byte
		for {
			n, err := ptmx.Read(buf[:])
			lp.mu.Lock()
			lp.screen.Write(buf[:n])
			lp.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		lp.cmd.Wait()
		close(lp.exited)
	}()
	t.Cleanup(func() {
		lp.cmd.Process.Kill()
		<-lp.exited
		ptmx.Close()
		if t.Failed() {
			t.Logf("leader screen:\n%s\nleader stderr:\n%s", lp.text(), lp.stderr.String())
		}
	})
	lp.waitFor("listening", func() bool { return strings.Contains(lp.stderr.String(), "listening on "+socket) })
	return lp
}

func (lp *leaderProc) text() string {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.screen.String()
}

func (lp *leaderProc) waitFor(what string, cond func() bool) {
	lp.t.Helper()
	deadline := time.Now().Add(pipeWait)
	for !cond() {
		select {
		case <-lp.exited:
			if cond() {
				return
			}
			lp.t.Fatalf("the leader exited while waiting for %s", what)
		default:
		}
		if time.Now().After(deadline) {
			lp.t.Fatalf("leader: no %s within %v", what, pipeWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitPrompt waits for the n-th prompt (counted from the start) and
// returns the screen from its header on.
func (lp *leaderProc) waitPrompt(n int) string {
	lp.t.Helper()
	lp.waitFor(fmt.Sprintf("prompt %d", n), func() bool { return strings.Count(lp.text(), "choice: ") >= n })
	s := lp.text()
	i := 0
	for k := 0; k < n; k++ {
		j := strings.Index(s[i:], "── request #")
		if j < 0 {
			lp.t.Fatalf("prompt %d has no header:\n%s", n, s)
		}
		if k < n-1 {
			i += j + 1
		} else {
			i += j
		}
	}
	return s[i:]
}

// waitQueued waits until the leader has queued n requests in all.
func (lp *leaderProc) waitQueued(n int) {
	lp.t.Helper()
	lp.waitFor(fmt.Sprintf("%d queued requests", n), func() bool {
		return strings.Count(lp.stderr.String(), "request queued") >= n
	})
}

// press types key after the anti-misclick grace has passed.
func (lp *leaderProc) press(key string) {
	lp.t.Helper()
	time.Sleep(400 * time.Millisecond) // the prompt ignores keys for 200 ms
	if _, err := lp.ptmx.Write([]byte(key)); err != nil {
		lp.t.Fatal(err)
	}
}

// decisions reads the leader's decision log, waiting for n lines.
func leaderLogLines(t *testing.T, path string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(pipeWait)
	for {
		data, _ := os.ReadFile(path)
		var out []map[string]any
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("decision log line %q: %v", sc.Bytes(), err)
			}
			out = append(out, m)
		}
		if len(out) >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("decision log %s has %d lines, want %d:\n%s", path, len(out), n, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leaderQuestion is a worker's question as permhost run would send it.
func leaderQuestion(title, session string) leader.Question {
	return leader.Question{
		Worker: leader.Worker{PID: os.Getpid(), Cwd: "/work/" + session, Agent: "claude-agent-acp 0.23.1", Session: session},
		Request: abi.Request{ABI: abi.Current, DecisionID: "d-" + session,
			Session:  abi.Session{ID: session, Cwd: "/work/" + session},
			ToolCall: abi.ToolCall{ID: "tc-" + session, Title: title, Kind: abi.KindExecute},
			Shell:    &abi.Shell{Source: title, Parsed: true},
			Options: []abi.Option{
				{OptionID: "allow_always", Name: "Always Allow", Kind: abi.OptionAllowAlways, Durable: true},
				{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
				{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
			}},
		Explanations: []leader.Explanation{{Plugin: "explainer", Summary: "runs " + title, RiskLevel: "medium"}},
		Reason:       "every plugin abstained",
	}
}

type leaderAsked struct {
	a   leader.Answer
	err error
}

func askLeader(ctx context.Context, t *testing.T, socket string, q leader.Question) <-chan leaderAsked {
	c, err := leader.NewClient(socket)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan leaderAsked, 1)
	go func() {
		a, err := c.Ask(ctx, q)
		ch <- leaderAsked{a, err}
	}()
	return ch
}

func leaderWaitAsked(t *testing.T, ch <-chan leaderAsked) leaderAsked {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(pipeWait):
		t.Fatal("the worker got no answer")
	}
	return leaderAsked{}
}

// rawLeaderConn sends lines by hand and reads one reply.
func leaderRawExchange(t *testing.T, socket string, line []byte) (reply map[string]any, closed bool) {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(pipeWait))
	go c.Write(line) // an oversized line may not be read whole
	r := bufio.NewReader(c)
	l, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no reply to %.60q: %v", line, err)
	}
	if err := json.Unmarshal(l, &reply); err != nil {
		t.Fatalf("reply %q: %v", l, err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = r.ReadByte()
	return reply, errors.Is(err, io.EOF)
}

// The real leader, a person at a pseudo-terminal: bad input from workers
// (a line over 1 MiB, malformed JSON, a connection from another user id)
// is refused with a clear error, and the leader keeps serving; a worker
// withdrawn while queued disappears from the queue; both sides' answers
// reach the right request.
func TestLeaderRefusesAndKeepsServing(t *testing.T) {
	cfg, log := writeConfig(t, "sequential")
	socket := leaderSocket(t)
	lp := startLeader(t, socket, cfg, log)

	huge := append([]byte(`{"v":1,"type":"ask","id":"big","request":{"raw":"`), bytes.Repeat([]byte("x"), 1<<20)...)
	huge = append(huge, "\"}}\n"...)
	reply, closed := leaderRawExchange(t, socket, huge)
	if reply["code"] != "too_large" || !strings.Contains(fmt.Sprint(reply["message"]), "exceeds 1048576 bytes") || !closed {
		t.Fatalf("oversized line: %v (closed %v)", reply, closed)
	}
	reply, closed = leaderRawExchange(t, socket, []byte(`{"v":1,"type":"ask","id":"m",`+"\n"))
	if reply["code"] != "malformed" || !strings.Contains(fmt.Sprint(reply["message"]), "malformed JSON") || closed {
		t.Fatalf("malformed JSON: %v (closed %v)", reply, closed)
	}

	if os.Getuid() == 0 {
		const nobody = 65534
		// Let another user reach the socket (the private directory
		// normally stops it first), and run this test binary as that user.
		bin := filepath.Join(filepath.Dir(socket), "..", filepath.Base(filepath.Dir(socket))+"-helper")
		data, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(bin)
		os.Chmod(filepath.Dir(socket), 0o711)
		os.Chmod(socket, 0o666)
		cmd := exec.Command(bin)
		cmd.Env = []string{leaderAskEnv + "=" + socket}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("worker as uid %d: %v\n%s", nobody, err, out)
		}
		if err := json.Unmarshal(bytes.TrimSpace(out), &reply); err != nil {
			t.Fatalf("reply to another user: %q", out)
		}
		if reply["code"] != "forbidden" || !strings.Contains(fmt.Sprint(reply["message"]), "refused a connection from uid 65534") {
			t.Fatalf("another user: %v", reply)
		}
		os.Chmod(filepath.Dir(socket), 0o700)
		os.Chmod(socket, 0o600)
	} else {
		t.Log("not root: the connection from another user id is covered only by internal/leader's tests when run as root")
	}
	if strings.Contains(lp.text(), "choice: ") {
		t.Fatalf("a refused request reached the person:\n%s", lp.text())
	}

	// Still serving: three workers, the second withdrawn while queued.
	first := askLeader(context.Background(), t, socket, leaderQuestion("npm test", "s-one"))
	screen := lp.waitPrompt(1)
	for _, want := range []string{"request #1 from worker pid", "session s-one", "cwd /work/s-one", "0 more waiting",
		"permission requested [execute]: npm test", "command: npm test", "explainer [MEDIUM risk]: runs npm test",
		"why you are asked: every plugin abstained", "[1] Always Allow (allow_always)", "[2] Allow (allow_once)", "[3] Reject (reject_once)"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("prompt lacks %q:\n%s", want, screen)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	second := askLeader(ctx, t, socket, leaderQuestion("rm -rf /tmp/cache", "s-two"))
	lp.waitQueued(2)
	third := askLeader(context.Background(), t, socket, leaderQuestion("git push", "s-three"))
	lp.waitQueued(3)
	cancel()
	if r := leaderWaitAsked(t, second); !errors.Is(r.err, leader.ErrWithdrawn) {
		t.Fatalf("cancelled worker: %v", r.err)
	}
	withdrawn := leaderLogLines(t, log, 1)[0]
	if withdrawn["outcome"] != "withdrawn" || withdrawn["session"] != "s-two" || withdrawn["via"] != "leader" {
		t.Fatalf("leader log of the withdrawn request: %v", withdrawn)
	}
	lp.press("2")
	if r := leaderWaitAsked(t, first); r.err != nil || r.a.OptionID != "allow" || r.a.DecidedBy != "person" {
		t.Fatalf("first worker: %+v %v", r.a, r.err)
	}
	screen = lp.waitPrompt(2)
	if !strings.Contains(screen, "request #3 from") || !strings.Contains(screen, "git push") || !strings.Contains(screen, "0 more waiting") {
		t.Fatalf("after the withdrawn request, want #3 (git push) with none waiting:\n%s", screen)
	}
	lp.press("3")
	if r := leaderWaitAsked(t, third); r.err != nil || r.a.OptionID != "reject" {
		t.Fatalf("third worker: %+v %v", r.a, r.err)
	}
	entries := leaderLogLines(t, log, 3)
	for i, want := range []struct{ session, outcome, option string }{{"s-two", "withdrawn", ""}, {"s-one", "selected", "allow"}, {"s-three", "selected", "reject"}} {
		e := entries[i]
		if e["session"] != want.session || e["outcome"] != want.outcome || fmt.Sprint(e["optionId"]) != fmt.Sprint(leaderOrNil(want.option)) {
			t.Fatalf("leader log %d = %v, want %+v", i, e, want)
		}
		if want.outcome == "selected" {
			p, _ := e["person"].(map[string]any)
			if p == nil || p["answer"] != want.option || !strings.Contains(fmt.Sprint(p["who"]), "session "+want.session) || e["decidedBy"] != "person" {
				t.Fatalf("leader log %d person = %v", i, e["person"])
			}
		}
	}
}

func leaderOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// A leader killed mid-question answers nothing: the waiting worker learns
// at once. Its socket is left behind, stale; a new leader replaces it, and
// a second leader on a live socket is refused.
func TestLeaderKilledThenReplaced(t *testing.T) {
	cfg, log := writeConfig(t, "sequential")
	socket := leaderSocket(t)
	lp := startLeader(t, socket, cfg, log)
	res := askLeader(context.Background(), t, socket, leaderQuestion("make deploy", "s-k"))
	lp.waitPrompt(1)
	start := time.Now()
	lp.cmd.Process.Signal(syscall.SIGKILL)
	r := leaderWaitAsked(t, res)
	if !errors.Is(r.err, leader.ErrGone) {
		t.Fatalf("worker of a killed leader: %v", r.err)
	}
	t.Logf("worker learned of the killed leader after %v", time.Since(start))
	<-lp.exited
	if fi, err := os.Lstat(socket); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("a killed leader should leave its socket behind: %v", err)
	}

	lp2 := startLeader(t, socket, cfg, log)
	second := exec.Command(permhostBin, "leader", "--socket", socket, "--config", cfg)
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "a leader is already listening") {
		t.Fatalf("second leader on a live socket: %v\n%s", err, out)
	}
	res = askLeader(context.Background(), t, socket, leaderQuestion("make deploy", "s-k2"))
	lp2.waitPrompt(1)
	lp2.press("\x1b") // Esc declines: the worker is answered cancelled
	if r := leaderWaitAsked(t, res); r.err != nil || r.a.OptionID != "" || r.a.DecidedBy != "person" {
		t.Fatalf("declined: %+v %v", r.a, r.err)
	}
}

// --- permhost run --leader: workers against scripted fake agents ---

// leaderWorkerTranscript is a fake agent's session: one Bash-like tool
// call that needs permission, then the end of the turn. With cancel set,
// the agent expects session/cancel and ends the turn cancelled.
func leaderWorkerTranscript(t *testing.T, name, title string, cancel bool) string {
	t.Helper()
	session := "sess-" + name
	msgs := []struct{ dir, msg string }{
		{"client->agent", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{"agent->client", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"fake-agent","version":"1.0"},"authMethods":[]}}`},
		{"client->agent", `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`},
		{"agent->client", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":%q}}`, session)},
		{"client->agent", `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}`},
		{"agent->client", fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"tool_call","toolCallId":"call-%s","title":%q,"kind":"execute","status":"pending","rawInput":{"command":%q}}}}`, session, name, title, title)},
		{"agent->client", fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":%q,"toolCall":{"toolCallId":"call-%s","title":%q,"kind":"execute","rawInput":{"command":%q}},"options":[{"optionId":"allow_always","name":"Always Allow","kind":"allow_always"},{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`, session, name, title, title)},
	}
	if cancel {
		msgs = append(msgs,
			struct{ dir, msg string }{"client->agent", `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`},
			struct{ dir, msg string }{"client->agent", `{"jsonrpc":"2.0","id":0,"result":{}}`},
			struct{ dir, msg string }{"agent->client", `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`})
	} else {
		msgs = append(msgs,
			struct{ dir, msg string }{"client->agent", `{"jsonrpc":"2.0","id":0,"result":{}}`},
			struct{ dir, msg string }{"agent->client", fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"tool_call_update","toolCallId":"call-%s","status":"completed"}}}`, session, name)},
			struct{ dir, msg string }{"agent->client", `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`})
	}
	var b strings.Builder
	for i, m := range msgs {
		fmt.Fprintf(&b, `{"seq":%d,"dir":%q,"msg":%s}`+"\n", i+1, m.dir, m.msg)
	}
	path := filepath.Join(t.TempDir(), name+".jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// leaderWorker is one `permhost run --leader` process.
type leaderWorker struct {
	name, report, log string
	cmd               *exec.Cmd
	stderr, stdout    *leaderBuffer
	exit              chan int
}

// startLeaderWorker runs a worker whose own configuration has no plugins
// (every request is undecided) and whose headless policy is reject.
func startLeaderWorker(t *testing.T, socket, name, title string, timeout time.Duration, cancel bool) *leaderWorker {
	t.Helper()
	cfg, log := writeConfig(t, "sequential")
	w := &leaderWorker{name: name, report: filepath.Join(t.TempDir(), name+".report"), log: log,
		stderr: &leaderBuffer{}, stdout: &leaderBuffer{}, exit: make(chan int, 1)}
	w.cmd = exec.Command(permhostBin, "run", "--config", cfg, "--leader", socket, "--on-undecided", "reject",
		"--permission-timeout", timeout.String(), "--cwd", t.TempDir(), "--prompt", "do "+title, "--",
		pipelineAgent(t), "-transcript", leaderWorkerTranscript(t, name, title, cancel), "-report", w.report)
	w.cmd.Stdout, w.cmd.Stderr = w.stdout, w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.cmd.Wait()
		w.exit <- w.cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("worker %s stderr:\n%s", name, w.stderr.String())
		}
	})
	return w
}

// wait waits for the worker to exit and returns its status.
func (w *leaderWorker) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-w.exit:
		return code
	case <-time.After(pipeWait):
		t.Fatalf("worker %s did not finish", w.name)
	}
	return -1
}

// agentGot returns the result the fake agent received for its permission
// request (id 0).
func (w *leaderWorker) agentGot(t *testing.T) string {
	t.Helper()
	data, _ := os.ReadFile(w.report)
	for _, line := range bytes.Split(data, []byte("\n")) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(line, &m) == nil && m.Method == "" && string(m.ID) == "0" {
			var c bytes.Buffer
			json.Compact(&c, m.Result)
			return c.String()
		}
	}
	t.Fatalf("agent %s received no answer to its permission request:\n%s", w.name, data)
	return ""
}

func leaderSelected(option string) string {
	return `{"outcome":{"outcome":"selected","optionId":"` + option + `"}}`
}

// leaderRunReady skips the tests of workers until `permhost run` knows
// --leader.
func leaderRunReady(t *testing.T) {
	t.Helper()
	out, _ := exec.Command(permhostBin, "run", "-h").CombinedOutput()
	if !strings.Contains(string(out), "\n  -leader ") { // flag.PrintDefaults' line for the flag
		t.Skip("permhost run has no --leader flag yet")
	}
}

// Three workers, one person: requests shown one at a time in arrival
// order, each answer reaching the right worker's agent, every turn ending.
func TestLeaderThreeWorkers(t *testing.T) {
	leaderRunReady(t)
	cfg, log := writeConfig(t, "sequential")
	socket := leaderSocket(t)
	lp := startLeader(t, socket, cfg, log)
	titles := []string{"npm test", "rm -rf dist", "git push origin main"}
	keys := []string{"2", "3", "1"}
	options := []string{"allow", "reject", "allow_always"}
	var workers []*leaderWorker
	for i, title := range titles {
		workers = append(workers, startLeaderWorker(t, socket, fmt.Sprintf("w%d", i+1), title, time.Minute, false))
		lp.waitQueued(i + 1) // arrival order is start order
	}
	for i, w := range workers {
		screen := lp.waitPrompt(i + 1)
		for _, want := range []string{fmt.Sprintf("request #%d from worker pid %d", i+1, w.cmd.Process.Pid),
			"session sess-" + w.name, "agent fake-agent 1.0", "permission requested [execute]: " + titles[i]} {
			if !strings.Contains(screen, want) {
				t.Fatalf("prompt %d lacks %q:\n%s", i+1, want, screen)
			}
		}
		if i == 0 && strings.Count(lp.text(), "choice: ") != 1 {
			t.Fatal("more than one prompt shown at once")
		}
		lp.press(keys[i])
		if code := w.wait(t); code != 0 {
			t.Fatalf("worker %s exit %d", w.name, code)
		}
		if got := w.agentGot(t); got != leaderSelected(options[i]) {
			t.Fatalf("agent of %s got %s, want %s", w.name, got, leaderSelected(options[i]))
		}
		e := leaderLogLines(t, w.log, 1)[0]
		p, _ := e["person"].(map[string]any)
		if e["optionId"] != options[i] || e["decidedBy"] != "person" || p == nil || !strings.Contains(fmt.Sprint(p["who"]), "leader pid") {
			t.Fatalf("worker %s log: %v", w.name, e)
		}
	}
	entries := leaderLogLines(t, log, 3)
	for i, e := range entries {
		if e["session"] != "sess-"+workers[i].name || e["optionId"] != options[i] || e["via"] != "leader" {
			t.Fatalf("leader log %d: %v", i, e)
		}
	}
}

// Leader down, leader killed mid-question, leader silent past the bound:
// each time the worker falls back to its headless policy (reject), within
// the bound, and logs why.
func TestLeaderWorkerFallback(t *testing.T) {
	leaderRunReady(t)
	socket := leaderSocket(t)
	const bound = 20 * time.Second

	check := func(w *leaderWorker, why string, start time.Time) {
		t.Helper()
		if code := w.wait(t); code != 0 {
			t.Fatalf("worker %s exit %d", w.name, code)
		}
		took := time.Since(start)
		if took > bound {
			t.Fatalf("worker %s fell back after %v, past its %v bound", w.name, took, bound)
		}
		t.Logf("worker %s: %s, turn over %v later", w.name, why, took.Round(time.Millisecond))
		if got := w.agentGot(t); got != leaderSelected("reject") {
			t.Fatalf("agent of %s got %s, want the headless reject", w.name, got)
		}
		e := leaderLogLines(t, w.log, 1)[0]
		if e["optionId"] != "reject" || !strings.Contains(fmt.Sprint(e["fallback"])+fmt.Sprint(e["reason"]), why) {
			t.Fatalf("worker %s log should say %q: %v", w.name, why, e)
		}
	}

	start := time.Now()
	check(startLeaderWorker(t, socket, "down", "make deploy", bound, false), "leader unreachable", start)

	cfg, log := writeConfig(t, "sequential")
	lp := startLeader(t, socket, cfg, log)
	w := startLeaderWorker(t, socket, "killed", "make deploy", bound, false)
	lp.waitPrompt(1)
	start = time.Now()
	lp.cmd.Process.Signal(syscall.SIGKILL)
	check(w, "leader gone", start)

	startLeader(t, socket, cfg, log)
	start = time.Now()
	check(startLeaderWorker(t, socket, "slow", "make deploy", 2*time.Second, false), "leader timed out", start)
	if e := leaderLogLines(t, log, 1)[0]; e["outcome"] != "withdrawn" || e["session"] != "sess-slow" {
		t.Fatalf("leader log of the timed-out request: %v", e)
	}
}

// A worker whose turn is cancelled (Ctrl-C) withdraws its request: it
// disappears from the leader's queue and is never shown.
func TestLeaderCancelledWorker(t *testing.T) {
	leaderRunReady(t)
	cfg, log := writeConfig(t, "sequential")
	socket := leaderSocket(t)
	lp := startLeader(t, socket, cfg, log)
	first := startLeaderWorker(t, socket, "first", "npm test", time.Minute, false)
	lp.waitPrompt(1)
	cancelled := startLeaderWorker(t, socket, "cancelled", "rm -rf ~", time.Minute, true)
	lp.waitQueued(2)
	last := startLeaderWorker(t, socket, "last", "ls", time.Minute, false)
	lp.waitQueued(3)
	cancelled.cmd.Process.Signal(os.Interrupt)
	cancelled.wait(t)
	if e := leaderLogLines(t, log, 1)[0]; e["outcome"] != "withdrawn" || e["session"] != "sess-cancelled" {
		t.Fatalf("leader log: %v", e)
	}
	lp.press("2")
	first.wait(t)
	screen := lp.waitPrompt(2)
	if strings.Contains(screen, "rm -rf ~") || !strings.Contains(screen, "session sess-last") || !strings.Contains(screen, "0 more waiting") {
		t.Fatalf("after the withdrawn request, want the last one with none waiting:\n%s", screen)
	}
	lp.press("3")
	if code := last.wait(t); code != 0 || last.agentGot(t) != leaderSelected("reject") {
		t.Fatalf("last worker: exit %d", code)
	}
}

// The leader's own plugins run first: what they decide never reaches the
// person, and the leader's log names the plugin and the worker.
func TestLeaderPluginsDecideFirst(t *testing.T) {
	cfg, log := writeConfig(t, "sequential", scripted("leader-rules", `{"outcome":"allow","reason":"allowed by the team"}`, 0, "2s"))
	socket := leaderSocket(t)
	lp := startLeader(t, socket, cfg, log)
	r := leaderWaitAsked(t, askLeader(context.Background(), t, socket, leaderQuestion("npm test", "s-auto")))
	if r.err != nil || r.a.OptionID != "allow" || r.a.DecidedBy != "leader-rules" || r.a.Reason != "allowed by the team" {
		t.Fatalf("worker got %+v, %v", r.a, r.err)
	}
	e := leaderLogLines(t, log, 1)[0]
	plugins, _ := e["plugins"].([]any)
	if e["decidedBy"] != "leader-rules" || e["optionId"] != "allow" || e["person"] != nil || len(plugins) != 1 ||
		!strings.Contains(fmt.Sprint(e["reason"]), "session s-auto") {
		t.Fatalf("leader log: %v", e)
	}
	if strings.Contains(lp.text(), "choice: ") {
		t.Fatalf("a request the plugins decided reached the person:\n%s", lp.text())
	}
}
