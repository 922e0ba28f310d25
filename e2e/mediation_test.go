package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The mediation tests (issue #19, "complete mediation under any
// interleaving") run `permhost proxy` in front of testdata/likeagent
// misbehaving: a request under an id of permhost's own, an id reused, a
// read's permission stretched to a write, a command's to another
// directory, a grant's script changed by one operator, a terminal's
// command line with no args. Each checks what the agent got and that the
// decision log says the same (logged).

// logged waits for the decision-log entry match accepts and fails the test
// unless it records the outcome and option the agent got; it returns the
// entry for further checks.
func (r *likeRun) logged(what string, match func(map[string]any) bool, outcome, option string) map[string]any {
	r.t.Helper()
	e := r.entries(what, match)[0]
	if got, _ := e["optionId"].(string); e["outcome"] != outcome || got != option {
		r.t.Errorf("the decision log has %s as %v/%q, the agent got %s/%q: %v", what, e["outcome"], got, outcome, option, e)
	}
	return e
}

// entriesN waits for n decision-log entries match accepts and returns
// them.
func (r *likeRun) entriesN(what string, match func(map[string]any) bool, n int) []map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(pipeWait)
	for {
		if out := r.entries(what, match); len(out) >= n || time.Now().After(deadline) {
			if len(out) < n {
				r.t.Fatalf("%d decision-log entries %s, want %d", len(out), what, n)
			}
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// agentAnswerLogged is the decision log's outcome and option for the
// answer a permission request got as likeagent reports it ("" for
// cancelled).
func agentAnswerLogged(answer string) (string, string) {
	if answer == "" {
		return "cancelled", ""
	}
	return "selected", answer
}

// ofRequest matches the decision-log entries of an agent request other
// than a permission request (fs/..., terminal/create, elicitation/create).
func ofRequest(method string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["request"] == method }
}

// ofToolCall matches the decision-log entries of a permission request for
// the tool call id.
func ofToolCall(id string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		tc, _ := m["toolCall"].(map[string]any)
		return isPermission(m) && tc["id"] == id
	}
}

// isPermission reports whether a decision-log entry is a permission
// request's answer (not another request's, nor a mode action's alone).
func isPermission(m map[string]any) bool {
	return m["request"] == nil && (m["outcome"] == "selected" || m["outcome"] == "cancelled")
}

// ofFSWrite matches the decision-log entries of a write of the file
// named name.
func ofFSWrite(name string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		tc, _ := m["toolCall"].(map[string]any)
		title, _ := tc["title"].(string)
		return m["request"] == "fs/write_text_file" && strings.HasSuffix(title, "/"+name)
	}
}

// ofTitle matches the decision-log entries of a permission request whose
// tool call has that title.
func ofTitle(title string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		tc, _ := m["toolCall"].(map[string]any)
		return isPermission(m) && tc["title"] == title
	}
}

// fsOutcome is the decision log's outcome of a file or terminal request
// the agent reports as "...: ok" or "...: error MSG".
func fsOutcome(got string) string {
	if strings.Contains(got, ": error ") {
		return "refused"
	}
	return "forwarded"
}

// editorServes answers the agent's file and terminal requests as an
// editor would.
func editorServes(r *likeRun, m *wireMsg) []byte {
	switch m.Method {
	case "terminal/create":
		return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"terminalId":"term-1"}}`)
	}
	return elicitationAnswer("null")(r, m)
}

// ownID is the form of permhost's own request ids: 128 random bits.
var ownID = regexp.MustCompile(`^"permhost-([0-9a-f]{32})"$`)

// TestMediationAgentRequestUnderOwnID (#19 item 3): Gemini CLI in yolo
// writes a file unasked; permhost asks the editor under an id of its own.
// The agent then sends a harmless-looking permission request (options
// "allow" and "reject", as permhost's own) under that very id: it gets an
// error, the editor never sees it, and the person's answer goes to
// permhost's prompt alone: rejected, the write is refused. (Before, the
// editor had two requests under one id and the allow of the harmless one
// released the write.)
func TestMediationAgentRequestUnderOwnID(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "gemini", start: "yolo", plugins: protectSecrets, session: `modes = "pass"`, caps: fsCaps, serve: editorServes})
	own := make(chan *wireMsg, 1)
	r.mu.Lock()
	r.answerMsg = func(m *wireMsg) []byte {
		if bytes.Contains(m.Params, []byte(`"toolCallId":"harmless"`)) {
			return editorAnswer(m.ID, "allow") // it looks harmless: the person allows it
		}
		own <- m // answered below, once the agent has tried the collision
		return nil
	}
	r.mu.Unlock()
	r.client.send([]byte(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":` + quote(r.session) + `,"prompt":[{"type":"text","text":"write: a.txt"}]}}`))
	var prompt *wireMsg
	select {
	case prompt = <-own:
	case <-time.After(pipeWait):
		t.Fatal("permhost never asked about the unasked write")
	}
	if !bytes.Contains(prompt.Params, []byte(`"title":"Write `)) {
		t.Fatalf("permhost's prompt: %s", prompt.Raw)
	}
	r.client.send([]byte(`{"jsonrpc":"2.0","id":"collide","method":"_e2e/collide","params":{"id":` + string(prompt.ID) + `}}`))
	isEnd := func(m *wireMsg) bool { return m.isResponse() && string(m.ID) == `"p"` }
	_, first := r.client.waitFor("the colliding request's answer or the turn's end", func(m *wireMsg) bool {
		return isEnd(m) || m.Method == "session/update" && bytes.Contains(m.Params, []byte(`collide: `))
	})
	if isEnd(first) {
		t.Fatalf("the turn ended before permhost's prompt was answered (the write: %+v)", r.lastEvents(1)[0])
	}
	if ev := r.waitEvent("collide"); !strings.HasPrefix(ev["answer"].(string), "error ") || !strings.Contains(ev["answer"].(string), "in use") {
		t.Errorf("the agent's request under permhost's id got %q, want an error", ev["answer"])
	}
	r.client.send(editorAnswer(prompt.ID, "reject"))
	r.client.waitFor("the turn's end", isEnd)
	ev := r.lastEvents(1)[0]
	if ev.Step != "write: a.txt" || ev.Ran || len(ev.FS) != 2 || !strings.Contains(ev.FS[1], "write a.txt: error permhost:") {
		t.Fatalf("the write: %+v", ev)
	}
	if i := r.client.index(func(m *wireMsg) bool {
		return m.Method == "fs/write_text_file" || bytes.Contains(m.Params, []byte(`"toolCallId":"harmless"`))
	}); i >= 0 {
		t.Errorf("the editor got %s", r.client.received()[i].Raw)
	}
	e := r.logged("of the write", ofRequest("fs/write_text_file"), fsOutcome(ev.FS[1]), "reject")
	if e["decidedBy"] != "person" {
		t.Errorf("the write's entry: %v", e)
	}
	r.finish()
}

// TestMediationOwnIDsUnpredictable (#19 item 3): the ids of permhost's
// own prompts in the editor's stream are 128 random bits each, in one run
// and across runs: no tag, no counter, nothing one tells of another.
func TestMediationOwnIDsUnpredictable(t *testing.T) {
	t.Parallel()
	var seen []string
	for run := range 2 {
		r := startLikeWith(t, likeOpts{agent: "gemini", start: "yolo", plugins: protectSecrets, session: `modes = "pass"`, caps: fsCaps, serve: editorServes})
		asked := r.prompt(pick(t, "allow"), "write: a.txt", "write: b.txt")
		if len(asked) != 2 {
			t.Fatalf("run %d: %d prompts, want 2", run, len(asked))
		}
		for _, m := range r.client.received() {
			if m.Method == "session/request_permission" {
				seen = append(seen, string(m.ID))
			}
		}
		for i, ev := range r.lastEvents(2) {
			r.logged("of write "+fmt.Sprint(i), func(m map[string]any) bool {
				return m["request"] == "fs/write_text_file" && strings.Contains(fmt.Sprint(m["toolCall"]), ev.Step[len("write: "):])
			}, fsOutcome(ev.FS[len(ev.FS)-1]), "allow")
		}
		r.finish()
	}
	if len(seen) != 4 {
		t.Fatalf("ids %v, want 4", seen)
	}
	for i, id := range seen {
		if !ownID.MatchString(id) {
			t.Errorf("own id %s is not permhost- and 32 hex digits", id)
			continue
		}
		for _, other := range seen[:i] {
			a, b := ownID.FindStringSubmatch(id)[1], ownID.FindStringSubmatch(other)[1]
			if a[:8] == b[:8] || a[24:] == b[24:] {
				t.Errorf("own ids %s and %s share a prefix or suffix", id, other)
			}
		}
	}
}

// TestMediationReusedID (#19 item 3): the agent sends a second permission
// request under the id of one the editor is shown. The first is withdrawn
// ($/cancel_request) before the second is shown (which the agent sends
// once the first is shown), and the editor's answers
// under the id, which could be either's, apply to neither: the agent gets
// cancelled for both, and the second is withdrawn too.
func TestMediationReusedID(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "gemini", plugins: protectSecrets})
	var first *wireMsg
	r.mu.Lock()
	r.answerMsg = func(m *wireMsg) []byte {
		r.mu.Lock()
		defer r.mu.Unlock()
		if first == nil {
			first = m // answered with the second
			r.client.send([]byte(`{"jsonrpc":"2.0","id":"again","method":"_e2e/again","params":{}}`))
			return nil
		}
		// The person allows both.
		r.client.send(editorAnswer(first.ID, "proceed_once"))
		return editorAnswer(m.ID, "proceed_once")
	}
	r.mu.Unlock()
	r.prompt(nil, "reuse: rm -rf build")
	ev := r.lastEvents(1)[0]
	if !slices.Equal(ev.Answers, []string{"", ""}) {
		t.Errorf("the agent got %q, want cancelled for both", ev.Answers)
	}
	var order, calls []string
	var id json.RawMessage
	for _, m := range r.client.received() {
		switch {
		case m.Method == "session/request_permission":
			if id != nil && !bytes.Equal(m.ID, id) {
				t.Errorf("the requests' ids %s and %s", id, m.ID)
			}
			id = m.ID
			order = append(order, "request")
			var p struct {
				ToolCall struct{ ToolCallID string }
			}
			json.Unmarshal(m.Params, &p)
			calls = append(calls, p.ToolCall.ToolCallID)
		case m.Method == "$/cancel_request" && id != nil && bytes.Contains(m.Params, []byte(`"requestId":`+string(id))):
			order = append(order, "withdrawn")
		}
	}
	// The answer that could be either's withdraws the second too.
	if want := []string{"request", "withdrawn", "request", "withdrawn"}; !slices.Equal(order, want) || calls[0] == calls[1] {
		t.Fatalf("the editor got %v (tool calls %v), want %v", order, calls, want)
	}
	for i, call := range calls {
		outcome, option := agentAnswerLogged(ev.Answers[i])
		r.logged(fmt.Sprint("of request ", i+1), ofToolCall(call), outcome, option)
	}
	r.finish()
}

// TestMediationReadAllowanceNotWrite (#19 item 5): the agent is allowed
// to read notes.txt; the read it then makes is forwarded under that
// allowance, but its write of the same file is not: the plugins see it and
// team-rules refuses it. (Before, the allowance covered every request for
// the file.)
func TestMediationReadAllowanceNotWrite(t *testing.T) {
	t.Parallel()
	rules := protectSecrets + `
[[plugin]]
name = "team-rules"
path = "std:team-rules"
layer = "team"
[[plugin.config.rules]]
action = "reject"
paths = ["notes.txt"]
access = "write"
reason = "notes are read-only"`
	r := startLikeWith(t, likeOpts{agent: "gemini", plugins: rules, caps: fsCaps, serve: editorServes})
	asked := r.prompt(pick(t, "proceed_once"), "askread: notes.txt")
	ev := r.lastEvents(1)[0]
	if len(asked) != 1 || ev.Answer != "proceed_once" || len(ev.FS) != 2 || ev.FS[0] != "read notes.txt: content" ||
		!strings.Contains(ev.FS[1], "write notes.txt: error permhost:") || !strings.Contains(ev.FS[1], "team-rules") {
		t.Fatalf("asked %d; the agent: %+v", len(asked), ev)
	}
	if i := r.client.index(func(m *wireMsg) bool { return m.Method == "fs/write_text_file" }); i >= 0 {
		t.Errorf("the editor got the write: %s", r.client.received()[i].Raw)
	}
	outcome, option := agentAnswerLogged(ev.Answer)
	r.logged("of the read's permission request", ofTitle("Read notes.txt"), outcome, option)
	if e := r.logged("of the read", ofRequest("fs/read_text_file"), fsOutcome(ev.FS[0]), ""); !strings.HasPrefix(e["decidedBy"].(string), "allowed:") {
		t.Errorf("the read's entry: %v", e)
	}
	if e := r.logged("of the write", ofRequest("fs/write_text_file"), fsOutcome(ev.FS[1]), "reject"); e["decidedBy"] != "team-rules" {
		t.Errorf("the write's entry: %v", e)
	}
	r.finish()
}

// TestMediationCommandAllowanceByCwd (#19 item 5): codex-acp is allowed
// to run `make clean` in the project; a terminal it then creates for
// `make clean` there is forwarded under that allowance, one in another
// directory is asked as a request of permhost's own (and refused by the
// person). (Before, the allowance covered the command anywhere.)
func TestMediationCommandAllowanceByCwd(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "codex", start: "read-only", plugins: protectSecrets, caps: `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}`, serve: editorServes})
	if err := os.Mkdir(filepath.Join(r.project, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	asked := r.prompt(func(opts []optionShown) string {
		if slices.Contains(ids(opts), "allow_once") {
			return "allow_once" // the agent's request
		}
		return "reject" // permhost's own
	}, "runterm: .: make clean", "runterm: other: make clean")
	if len(asked) != 3 || !slices.Equal(ids(asked[2])[:2], []string{"allow", "reject"}) {
		t.Fatalf("the editor was asked %v, want the two commands and permhost's own prompt for the second terminal", asked)
	}
	ev := r.lastEvents(2)
	if ev[0].Answer != "allow_once" || !ev[0].Ran || len(ev[0].FS) != 1 || ev[0].FS[0] != "terminal: ok" {
		t.Errorf("make clean in the project: %+v", ev[0])
	}
	if ev[1].Answer != "allow_once" || ev[1].Ran || len(ev[1].FS) != 1 || !strings.HasPrefix(ev[1].FS[0], "terminal: error permhost:") {
		t.Errorf("make clean in other/: %+v", ev[1])
	}
	var terms []string
	for _, m := range r.client.received() {
		if m.Method == "terminal/create" {
			terms = append(terms, string(m.Params))
		}
	}
	if len(terms) != 1 || !strings.Contains(terms[0], `"cwd":`+quote(r.project)) {
		t.Errorf("the editor got terminals %v, want only the one in the project", terms)
	}
	terminals := r.entriesN("of the terminals", ofRequest("terminal/create"), 2)
	for i, e := range terminals {
		r.logged(fmt.Sprint("of terminal ", i+1), func(m map[string]any) bool { return m["decisionId"] == e["decisionId"] },
			fsOutcome(ev[i].FS[0]), []string{"", "reject"}[i])
	}
	if by, _ := terminals[0]["decidedBy"].(string); !strings.HasPrefix(by, "allowed:") || terminals[1]["decidedBy"] != "person" {
		t.Errorf("the terminals' entries: %v", terminals)
	}
	r.finish()
}

// TestMediationGrantWholeCommand (#19 item 6): a grant for `git diff
// --quiet && git push --force` decides that script again, and not `git
// diff --quiet || git push --force`, which has the same commands.
func TestMediationGrantWholeCommand(t *testing.T) {
	t.Parallel()
	r := startLike(t, "gemini", "")
	and, or := "git diff --quiet && git push --force", "git diff --quiet || git push --force"
	asked := r.prompt(pick(t, "permhost-grant-project"), "run: "+and)
	if len(asked) != 1 {
		t.Fatalf("the editor saw %d requests", len(asked))
	}
	asked = r.prompt(pick(t, "proceed_once"), "run: "+or, "run: "+and)
	ev := r.lastEvents(2)
	if len(asked) != 1 || !ev[0].Asked || ev[0].Answer != "proceed_once" || ev[1].Answer != "proceed_once" {
		t.Fatalf("the editor saw %d requests, want only the || script's; the agent: %+v", len(asked), ev)
	}
	outcome, option := agentAnswerLogged(ev[0].Answer)
	if e := r.logged("of the || script", ofTitle(or), outcome, option); e["decidedBy"] != "person" {
		t.Errorf("the || script's entry: %v", e)
	}
	entries := r.entriesN("of the && script", ofTitle(and), 2)
	outcome, option = agentAnswerLogged(ev[1].Answer)
	r.logged("of the && script again", func(m map[string]any) bool { return m["decisionId"] == entries[1]["decisionId"] }, outcome, option)
	if by, _ := entries[1]["decidedBy"].(string); !strings.HasPrefix(by, "grant:") {
		t.Errorf("the && script again: %v", entries[1])
	}
	r.finish()
}

// TestMediationElicitationFailedPlugin (#19 item 7): with allow_always =
// "agent", codex-acp's MCP approval offers the editor the agent's persist
// choices; when a fail-closed plugin fails on it, only the one-time
// choice, and the editor's "always" gets the agent cancel.
func TestMediationElicitationFailedPlugin(t *testing.T) {
	t.Parallel()
	trap := fmt.Sprintf(`
[[plugin]]
name = "trap"
path = %q
timeout = "5s"
failure_policy = "closed"
layer = "user"`, wasmFixture("unreachable"))
	for _, tc := range []struct {
		name, plugins string
		offered       []string
		agent         string // what the agent got
	}{
		{"plugins fine", protectSecrets, []string{"once", "session", "always"}, "accept always"},
		{"plugin failed", protectSecrets + trap, []string{"once"}, "cancel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startLikeWith(t, likeOpts{agent: "codex", plugins: tc.plugins, session: `allow_always = "agent"`, caps: fsCaps,
				serve: elicitationAnswer(`{"action":"accept","content":{"persist":"always"}}`)})
			r.prompt(allowOnce(t), "approve: files/list")
			_, m := r.client.waitFor("the approval", func(m *wireMsg) bool { return m.Method == "elicitation/create" })
			var p struct {
				RequestedSchema struct {
					Properties struct {
						Persist struct {
							OneOf []struct{ Const string }
						}
					}
				}
			}
			json.Unmarshal(m.Params, &p)
			var offered []string
			for _, o := range p.RequestedSchema.Properties.Persist.OneOf {
				offered = append(offered, o.Const)
			}
			if !slices.Equal(offered, tc.offered) {
				t.Errorf("the editor was offered %v, want %v", offered, tc.offered)
			}
			ev := r.lastEvents(1)[0]
			if ev.Answer != tc.agent {
				t.Errorf("the agent got %q, want %q", ev.Answer, tc.agent)
			}
			action, persist, _ := strings.Cut(ev.Answer, " ")
			r.logged("of the approval", ofRequest("elicitation/create"), action, persist)
			r.finish()
		})
	}
}

// TestMediationTerminalCommandLine (#19 item 11): a terminal/create whose
// command is `rm -rf /x` with no args is the command line it is: the
// plugins see rm with its args, and team-rules' rule on rm refuses it
// before anyone is asked.
func TestMediationTerminalCommandLine(t *testing.T) {
	t.Parallel()
	rules := protectSecrets + `
[[plugin]]
name = "team-rules"
path = "std:team-rules"
layer = "team"
[[plugin.config.rules]]
action = "reject"
command = ["rm"]
reason = "no deletes"`
	r := startLikeWith(t, likeOpts{agent: "gemini", plugins: rules, caps: `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}`, serve: editorServes})
	asked := r.prompt(pick(t, "allow"), `terminal: {"command":"rm -rf /x"}`)
	ev := r.lastEvents(1)[0]
	if len(asked) != 0 || ev.Ran || len(ev.FS) != 1 || !strings.HasPrefix(ev.FS[0], "terminal: error permhost:") || !strings.Contains(ev.FS[0], "team-rules") {
		t.Fatalf("asked %v; the agent: %+v", asked, ev)
	}
	if i := r.client.index(func(m *wireMsg) bool { return m.Method == "terminal/create" }); i >= 0 {
		t.Errorf("the editor got the terminal: %s", r.client.received()[i].Raw)
	}
	if e := r.logged("of the terminal", ofRequest("terminal/create"), fsOutcome(ev.FS[0]), "reject"); e["decidedBy"] != "team-rules" {
		t.Errorf("the terminal's entry: %v", e)
	}
	r.finish()
}

// TestMediationDamagedStateFiles (#19 item 13): a bundles.json of null
// stops permhost proxy before the agent starts, with an error naming the
// file (it panicked); a grants file of the wrong shape makes permhost
// grants list fail naming it and saying what it should be. Neither
// panics.
func TestMediationDamagedStateFiles(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, state string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(permhostBin, args...)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	damaged := func(t *testing.T, state, name, content string) string {
		t.Helper()
		file := filepath.Join(state, "permhost", name)
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	t.Run("bundles.json", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		wasm, err := os.ReadFile(wasmFixture("good"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(wasm)
		b := filepath.Join(dir, "acme")
		os.Mkdir(b, 0o755)
		os.WriteFile(filepath.Join(b, "good.wasm"), wasm, 0o644)
		os.WriteFile(filepath.Join(b, "bundle.toml"), fmt.Appendf(nil, "name = \"acme\"\nrevision = 1\nlayer = \"admin\"\n[[plugin]]\nname = \"good\"\npath = \"good.wasm\"\nsha256 = %q\n", hex.EncodeToString(sum[:])), 0o644)
		cfg := filepath.Join(dir, "permhost.toml")
		os.WriteFile(cfg, fmt.Appendf(nil, "[[bundle]]\npath = %q\n", b), 0o600)
		state := filepath.Join(dir, "state")
		file := damaged(t, state, "bundles.json", "null")
		marker := filepath.Join(dir, "agent-started")
		code, out := run(t, state, "proxy", "--config", cfg, "--", "/bin/sh", "-c", "touch "+marker)
		if code == 0 || !strings.Contains(out, file) || strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
			t.Errorf("exit %d, want an error naming %s:\n%s", code, file, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the agent started")
		}
	})
	for _, tc := range []struct{ content, got string }{{"null", "null"}, {"[]", "an array"}, {`"grants"`, "a string"}, {"3", "a number"}} {
		t.Run("grants.json "+tc.content, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			file := damaged(t, state, "grants.json", tc.content)
			code, out := run(t, state, "grants", "list")
			// It says what the file should be, not how a decoder failed.
			want := file + `: grants: file not trusted: want a JSON object {"version": 1, "grants": [...]}, got ` + tc.got
			if code == 0 || !strings.Contains(out, want) || strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
				t.Errorf("exit %d, want an error saying\n%s\ngot:\n%s", code, want, out)
			}
		})
	}
}

// TestEditorAnswerReadOnce: through the binary, an editor's answer with a
// key ACP does not define (here at the top level) is no allow: the agent
// gets the builtin fallback's reject and does not run the call, and the
// decision log records what the agent got, not the allow a reader of the
// result member alone would see. (The log said "selected allow by person"
// while the agent got cancelled.)
func TestEditorAnswerReadOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, from, to string }{
		{"extra top-level key", `, "jsonrpc": "2.0"}`, `, "jsonrpc": "2.0", "extra": 1}`},
		{"case-variant optionId", `"optionId": `, `"OptionId": "reject", "optionId": `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startLike(t, "claude101", "")
			allow := r.client.answer
			r.client.answer = func(m *wireMsg) []byte {
				line := allow(m)
				if !bytes.Contains(line, []byte(tc.from)) {
					t.Errorf("the editor's answer %s has no %s", line, tc.from)
				}
				return bytes.Replace(line, []byte(tc.from), []byte(tc.to), 1)
			}
			r.prompt(allowOnce(t), "run: rm -rf build")
			ev := r.lastEvents(1)[0]
			if !ev.Asked || ev.Ran {
				t.Fatalf("the agent: %+v, want asked and not run", ev)
			}
			e := r.entries("of the request", func(m map[string]any) bool { return m["person"] != nil })[0]
			got := r.reportLines(`"outcome"`, `"result"`)
			if len(got) != 1 {
				t.Fatalf("the agent read %v, want one answer", got)
			}
			var a struct {
				Result struct {
					Outcome struct{ Outcome, OptionID string }
				}
			}
			if err := json.Unmarshal([]byte(got[0]), &a); err != nil {
				t.Fatal(err)
			}
			o := a.Result.Outcome
			if e["outcome"] != o.Outcome || (o.OptionID != "" && e["optionId"] != o.OptionID) || strings.HasPrefix(o.OptionID, "allow") {
				t.Errorf("the agent got %+v, the log records %v %v (decidedBy %v)", o, e["outcome"], e["optionId"], e["decidedBy"])
			}
			r.finish()
		})
	}
}
