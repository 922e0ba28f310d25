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
