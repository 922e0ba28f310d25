package e2e

import (
	"bytes"
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

// TestProxyStrictEditorAnswers: through the real binary, an editor's answer
// is read strictly and the agent gets only what permhost re-encodes from it
// (issue 15, points 1 and 10): case-folded and duplicate keys are refused
// (cancelled), ids match by value and the agent gets its own id bytes, a
// second answer and an answer to an id permhost did not forward are
// dropped, a selection after session/cancel becomes cancelled, and an agent
// line that may be a permission request but cannot be read one way only
// (nested past encoding/json's depth, an escaped or unreadable method, a
// broken line, two ids) is answered cancelled and never reaches the editor.
func TestProxyStrictEditorAnswers(t *testing.T) {
	deep := strings.Replace(corePerm("8"), `"kind":"execute"`, `"kind":"execute","rawInput":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001), 1)
	escaped := strings.Replace(corePerm("9"), `"session/request_permission"`, `"session\u002frequest\u005fpermission"`, 1)
	unreadable := strings.Replace(corePerm("10"), `"session/request_permission"`, `"session/request_permission\udc00"`, 1)
	broken := corePerm("11")[:120]
	twoIDs := strings.Replace(corePerm("12"), `"id":12,`, `"id":12,"ID":13,`, 1)
	r := startCore(t, []string{"--log-level", "debug"},
		"> "+corePerm("1"), `< "id":1,`,
		"> "+corePerm("2"), `< "id":2,`,
		"> "+corePerm("55"), `< "id":55,`,
		"> "+corePerm(`"a"`), `< "id":"a"`,
		"> "+corePerm("6"), `< "id":6,`,
		"> "+corePerm("7"), `< "id":7,`,
		"> "+deep, `< "id":8,`,
		"> "+escaped, `< "id":9,`,
		"> "+unreadable, `< "id":10,`,
		"> "+broken, `< "id":11,`,
		"> "+twoIDs, `< "id":13,`,
		`> {"jsonrpc":"2.0","method":"_done"}`)

	var requests []string
	for {
		l := r.next("the next request")
		if strings.Contains(l, `"_done"`) {
			break
		}
		requests = append(requests, l)
		switch {
		case strings.Contains(l, `"id":1,`):
			// encoding/json would read "allow"; the agent, "allow_always".
			r.send(`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}}`)
		case strings.Contains(l, `"id":2,`):
			r.send(`{"jsonrpc":"2.0","id":2,"result":{"outcome":{"outcome":"selected","optionId":"allow","Outcome":"cancelled"}}}`)
		case strings.Contains(l, `"id":55,`):
			r.send(`{"jsonrpc":"2.0","id":55.0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
			r.send(`{"jsonrpc":"2.0","id":5.5e1,"result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}`)
		case strings.Contains(l, `"id":"a"`):
			// An answer to a request the agent has not sent yet, read
			// before that request exists.
			r.send(`{"jsonrpc":"2.0","id":6,"result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}`)
			r.send(`{"jsonrpc":"2.0","id":"\u0061","result":{"outcome":{"outcome":"selected","optionId":"reject"}}}`)
		case strings.Contains(l, `"id":6,`):
			r.send(`{"jsonrpc":"2.0","id":6,"result":{"outcome":{"outcome":"cancelled"},"_meta":{ "by" : "editor" }}}`)
		case strings.Contains(l, `"id":7,`):
			r.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
			r.send(`{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
		case strings.Contains(l, `"id":9,`):
			r.send(`{"jsonrpc":"2.0","id":9,"result":{"outcome":{"outcome":"selected","optionId":"reject","OptionId":"allow_always"}}}`)
		default:
			t.Fatalf("the editor got %q", l)
		}
	}
	expectLines(t, "what the editor was asked", requests,
		corePerm("1")+"\n", corePerm("2")+"\n", corePerm("55")+"\n", corePerm(`"a"`)+"\n", corePerm("6")+"\n", corePerm("7")+"\n", escaped+"\n")
	got, exit := r.finish()
	expectLines(t, "what the agent received", got,
		coreCancelled("1"),
		coreCancelled("2"),
		coreSelected("55", "allow"),
		coreSelected(`"a"`, "reject"),
		`{"jsonrpc":"2.0","id":6,"result":{"outcome":{"outcome":"cancelled"},"_meta":{"by":"editor"}}}`+"\n",
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`+"\n",
		coreCancelled("7"),
		coreCancelled("8"),
		coreCancelled("9"),
		coreCancelled("10"),
		coreCancelled("11"),
		coreCancelled("12"),
		coreCancelled("13"))
	if exit != 0 {
		t.Fatalf("exit %d", exit)
	}
	// The second answer is dropped as a second answer or as one to a
	// request already answered, depending on whether its handler is done.
	logged := r.stderr.String()
	if n := strings.Count(logged, "msg=\"dropped "); n != 2 || !strings.Contains(logged, "did not forward") || !strings.Contains(logged, "failing closed") {
		t.Errorf("stderr: %d answers dropped (want 2, one to an id permhost did not forward), failing closed logged: %v", n, strings.Contains(logged, "failing closed"))
	}
}

// TestProxyStrictAnswersAfterFallback: a failing plugin makes the closed
// fallback show the person the one-time options only; an editor answer
// that smuggles a durable option past that check (a key spelled twice in
// two cases) is refused, so the agent gets its reject option; after
// session/cancel a selection — smuggled or plain — reaches the agent as
// cancelled.
func TestProxyStrictAnswersAfterFallback(t *testing.T) {
	cfg, log := writeConfig(t, "sequential", pluginSpec{name: "trap", path: wasmFixture("unreachable"), timeout: "5s", policy: "closed"})
	r := startCore(t, []string{"--config", cfg},
		"> "+corePerm("1"), `< "id":1,`,
		"> "+corePerm("2"), `< "id":2,`,
		"> "+corePerm("3"), `< "id":3,`,
		"> "+corePerm("4"), `< "id":4,`,
		`> {"jsonrpc":"2.0","method":"_done"}`)
	for {
		l := r.next("the next request")
		if strings.Contains(l, `"_done"`) {
			break
		}
		if !strings.Contains(l, "session/request_permission") {
			continue // the tool_call_update permhost sends about a decision
		}
		if strings.Contains(l, `"optionId":"allow_always"`) || !strings.Contains(l, `"removedOptions":["allow_always"]`) {
			t.Fatalf("the fallback did not narrow the options: %s", l)
		}
		switch {
		case strings.Contains(l, `"id":1,`):
			r.send(`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}}`)
		case strings.Contains(l, `"id":2,`):
			r.send(`{"jsonrpc":"2.0","id":2,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","Outcome":"cancelled"}}}`)
		case strings.Contains(l, `"id":3,`):
			r.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
			r.send(`{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}}`)
		case strings.Contains(l, `"id":4,`):
			r.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
			r.send(`{"jsonrpc":"2.0","id":4,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
		default:
			t.Fatalf("the editor got %q", l)
		}
	}
	got, exit := r.finish()
	cancel := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}` + "\n"
	expectLines(t, "what the agent received", got,
		coreSelected("1", "reject"),
		coreSelected("2", "reject"),
		cancel, coreCancelled("3"),
		cancel, coreCancelled("4"))
	if exit != 0 {
		t.Fatalf("exit %d", exit)
	}
	// The log says what the agent got: the smuggled answers before the
	// cancel refused (the reject option), those after it cancelled.
	entries := (&pipelineRun{t: t, log: log}).decisions(4)
	for id, want := range map[string]string{"t1": "refused", "t2": "refused", "t3": "cancelled", "t4": "cancelled"} {
		e, ok := entries[id]
		switch {
		case !ok:
			t.Errorf("no decision-log entry for %s", id)
		case want == "refused" && (e.Person == nil || !e.Person.Refused || e.Outcome != "selected" || e.OptionID != "reject"):
			t.Errorf("%s: logged %s %s (person %+v), want the refused answer's reject", id, e.Outcome, e.OptionID, e.Person)
		case want == "cancelled" && e.Outcome != "cancelled":
			t.Errorf("%s: logged %s %s, want cancelled as the agent got", id, e.Outcome, e.OptionID)
		}
	}
}

// TestProxyAgentStdinStalled: an agent that reads nothing until its stdout
// has drained: it writes a permission request, 4 MiB, another request, a
// broken one (which permhost answers cancelled itself) and 4 MiB more
// before reading, while the editor answers each request and sends 4 MiB
// after each answer. The agent→editor direction never waits for the agent's
// stdin: the editor gets every line, in order, and then the agent gets both
// answers and every later line, in order, and the cancelled answer once.
func TestProxyAgentStdinStalled(t *testing.T) {
	const fillers = 1024
	r := startCore(t, nil,
		"> "+corePerm("1"),
		"! 4096 a",
		"> "+corePerm("2"),
		// One the proxy answers itself while the agent's stdin is full.
		"> "+corePerm("3")[:100],
		"! 4096 b",
		`> {"jsonrpc":"2.0","method":"_burst_done"}`,
		`< "_last"`)
	filler := func(round string, i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"_filler","params":{"round":%q,"n":%d,"pad":"%s"}}`, round, i, strings.Repeat("y", 4000))
	}
	// The editor writes from a goroutine of its own, as an editor does: its
	// writes block while permhost does not read them.
	sends := make(chan string, 4)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for id := range sends {
			io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":`+id+`,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`+"\n")
			for i := range fillers {
				io.WriteString(r.stdin, filler(id, i)+"\n")
			}
		}
		io.WriteString(r.stdin, `{"jsonrpc":"2.0","method":"_last"}`+"\n")
	}()
	// An intercepted request may come later than the agent's next lines
	// (its handler forwards it), never earlier; everything else keeps its
	// order.
	next := map[string]int{"a": 0, "b": 0}
	asked := 0
	for {
		l := r.next("the agent's next line")
		if strings.Contains(l, "_burst_done") {
			break
		}
		if strings.Contains(l, "session/request_permission") {
			asked++
			id := strconv.Itoa(asked)
			if l != corePerm(id)+"\n" || (id == "2" && next["a"] != 4096) {
				t.Fatalf("request %s out of order (after %d lines of burst a): %.120q", id, next["a"], l)
			}
			sends <- id
			continue
		}
		burst := "a"
		if asked == 2 || next["a"] == 4096 {
			burst = "b"
		}
		if !strings.Contains(l, fmt.Sprintf(`"text":"%s %d `, burst, next[burst])) {
			t.Fatalf("burst line %s %d out of order: %.120s", burst, next[burst], l)
		}
		next[burst]++
	}
	if asked != 2 || next["a"] != 4096 || next["b"] != 4096 {
		t.Fatalf("the editor got %d requests and %d+%d burst lines", asked, next["a"], next["b"])
	}
	close(sends)
	select {
	case <-sent:
	case <-time.After(pipeWait):
		t.Fatal("permhost stopped reading the editor while the agent's stdin was full")
	}
	got, exit := r.finish()
	// permhost's own answer is not part of the editor's order.
	own := 0
	for i := 0; i < len(got); i++ {
		if got[i] == coreCancelled("3") {
			got = append(got[:i], got[i+1:]...)
			own++
		}
	}
	if own != 1 {
		t.Fatalf("the agent got the cancelled answer to its broken request %d times", own)
	}
	var want []string
	for _, id := range []string{"1", "2"} {
		want = append(want, coreSelected(id, "allow"))
		for i := range fillers {
			want = append(want, filler(id, i)+"\n")
		}
	}
	expectLines(t, "what the agent received", got, append(want, `{"jsonrpc":"2.0","method":"_last"}`+"\n")...)
	if exit != 0 {
		t.Fatalf("exit %d", exit)
	}
}

// TestProxyEditorLeavesAgentWithFullStdin: the agent never reads its stdin;
// the editor sends 4 MiB and disconnects. permhost still stops the agent
// (its stdin closed, the grace, SIGTERM to its group) and exits with the
// agent's status, leaving nothing of its group.
func TestProxyEditorLeavesAgentWithFullStdin(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(permhostBin, "proxy", "--shutdown-grace", "300ms", "--", coreAgent(t), "deaf", pidfile)
	stderr := &lockedWriter{w: new(bytes.Buffer)}
	cmd.Stderr, cmd.Stdout = stderr, io.Discard
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var agentPid int
	for agentPid == 0 {
		b, _ := os.ReadFile(pidfile)
		agentPid, _ = strconv.Atoi(string(b))
		time.Sleep(5 * time.Millisecond)
	}
	line := `{"jsonrpc":"2.0","method":"_filler","params":{"pad":"` + strings.Repeat("z", 4000) + `"}}` + "\n"
	sent := make(chan error, 1)
	go func() {
		for range 1024 {
			if _, err := io.WriteString(stdin, line); err != nil {
				sent <- err
				return
			}
		}
		sent <- stdin.Close()
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("writing to permhost: %v", err)
		}
	case <-time.After(pipeWait):
		t.Fatal("permhost stopped reading the editor while the agent's stdin was full")
	}
	if code := pxWaitExit(t, cmd, 60*time.Second); code != 128+15 {
		t.Fatalf("exit %d, want 143 (the agent stopped by SIGTERM); stderr:\n%s", code, stderr)
	}
	pxCheckGone(t, agentPid, agentPid)
}

// vmHWM is a process's peak resident set size, from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestProxyLongLineMemory: a 64 MiB line each way through the real binary.
// permhost's peak RSS stays within the line plus the runtime: a long line
// is assembled once (on Linux in a mapping of its own that grows without
// copying and is unmapped once written), in a buffer that never grows past
// the line cap, and handed to the writer without a copy. (Before: 281 MiB.)
func TestProxyLongLineMemory(t *testing.T) {
	const mib = 64
	r := startCore(t, []string{"--max-line-bytes", strconv.Itoa(mib<<20 + 4096)},
		"@ "+strconv.Itoa(mib),
		`< "_big"`,
		`> {"jsonrpc":"2.0","method":"_done"}`)
	if l := r.next("the long line"); len(l) < mib<<20 || !strings.HasSuffix(l, `"}}}}`+"\n") {
		t.Fatalf("the long line arrived with %d bytes", len(l))
	}
	big := `{"jsonrpc":"2.0","method":"_big","params":{"data":"` + strings.Repeat("QUJD", mib<<18-16) + `"}}`
	go io.WriteString(r.stdin, big+"\n") // the agent reads it while the editor reads on
	if l := r.next("the agent's last line"); !strings.Contains(l, "_done") {
		t.Fatalf("got %.100q", l)
	}
	peak := vmHWM(t, r.cmd.Process.Pid)
	t.Logf("permhost's peak RSS with a %d MiB line each way: %.1f MiB", mib, float64(peak)/(1<<20))
	// The line once, plus the runtime (about 10 MiB, 30 under -race): a
	// copy of the line, or the buffers it outgrew, take 64 MiB more.
	if limit := int64(mib+48) << 20; peak > limit {
		t.Errorf("peak RSS %.1f MiB, want at most %d MiB", float64(peak)/(1<<20), limit>>20)
	}
	got, exit := r.finish()
	if len(got) < 1 || len(got[0]) != len(big)+1 || exit != 0 {
		t.Fatalf("the agent got %d lines, the first of %d bytes; exit %d", len(got), len(got[0]), exit)
	}
}

// TestProxyInterruptKeepsTheSession: as a proxy, permhost's session belongs
// to the editor. A terminal's Ctrl-C (SIGINT to permhost's whole process
// group, the way a terminal ACP client is hit with it) does not end the
// agent: the next prompt is still answered, and the end of the editor's
// input ends the session as before, with the agent's own exit status.
func TestProxyInterruptKeepsTheSession(t *testing.T) {
	prompt := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`
	}
	r := startCoreGroup(t, nil,
		`< "id":1,`, `> {"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`,
		`< "id":2,`, `> {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`)
	r.send(prompt("1"))
	if l := r.next("the first prompt's answer"); !strings.Contains(l, `"id":1,"result"`) {
		t.Fatalf("got %q", l)
	}
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(pipeWait)
	for !strings.Contains(r.stderr.String(), "SIGINT ignored") {
		if time.Now().After(deadline) {
			t.Fatalf("permhost did not report the SIGINT; stderr:\n%s", r.stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.send(prompt("2"))
	if l := r.next("the second prompt's answer"); !strings.Contains(l, `"id":2,"result"`) {
		t.Fatalf("after SIGINT the session did not go on: %q", l)
	}
	got, exit := r.finish()
	expectLines(t, "what the agent received", got, prompt("1")+"\n", prompt("2")+"\n")
	if exit != 0 {
		t.Fatalf("exit %d, want the agent's 0", exit)
	}
}

// TestProxyBatches: batches element by element through the real binary.
// The agent answers the editor's prompt inside a batch that also holds a
// permission request spelled with escapes: the editor gets the batch
// without the request, then the request on its own line; its batched answer
// reaches the agent in its place, re-encoded; and since the batched
// response answered the prompt, the agent's end sends the editor no error
// for it.
func TestProxyBatches(t *testing.T) {
	escaped := strings.Replace(corePerm("2"), `"session/request_permission"`, `"session\u002frequest\u005fpermission"`, 1)
	response := `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`
	r := startCore(t, nil,
		`< "id":1,`,
		`> [{"jsonrpc":"2.0","method":"_a"},`+escaped+`,`+response+`]`,
		`< "_b"`)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)
	expectLines(t, "what the editor got", []string{r.next("the batch"), r.next("the request")},
		`[{"jsonrpc":"2.0","method":"_a"},`+response+"]\n", escaped+"\n")
	r.send(`[{"jsonrpc":"2.0","id":2.0,"result":{"outcome":{"optionId":"allow","outcome":"selected"}}},{"jsonrpc":"2.0","method":"_b"}]`)
	got, exit := r.finish()
	expectLines(t, "what the agent received", got,
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`+"\n",
		`[`+strings.TrimSpace(coreSelected("2", "allow"))+`,{"jsonrpc":"2.0","method":"_b"}]`+"\n")
	if exit != 0 {
		t.Fatalf("exit %d", exit)
	}
	for _, l := range r.seen[2:] {
		t.Errorf("the editor got more: %q", l)
	}
}
