package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/acptest"
)

// The grant tests run `permhost proxy` in front of testdata/likeagent, a
// scripted agent that behaves as a recorded one does (its requests, option
// ids and names, and what its own "always" does afterwards), with a test
// client as the editor and a state directory of their own.

func likeAgent(t *testing.T) string { return testAgent(t, "likeagent") }

// likeEvent is one step of likeagent: whether it asked, what it was
// answered, whether the call ran.
type likeEvent struct {
	Step      string   `json:"step"`
	Asked     bool     `json:"asked"`
	Answer    string   `json:"answer"`
	Ran       bool     `json:"ran"`
	Unoffered bool     `json:"unoffered"`
	FS        []string `json:"fs"`
	Answers   []string `json:"answers"` // reuse: what each request got
	Mode      string   `json:"mode"`
}

type likeRun struct {
	t                           *testing.T
	proc                        *acptest.Process
	client                      *testClient
	state, project, events, log string
	report                      string   // every line the agent read
	initialized                 *wireMsg // the editor's initialize response
	started                     *wireMsg // the editor's session/new response
	session                     string
	nextID                      int
	mu                          sync.Mutex
	answer                      func(opts []optionShown) string
	// answerMsg, when set, answers the editor's permission requests
	// instead of answer (nil: no answer now).
	answerMsg func(m *wireMsg) []byte
	asked     [][]optionShown // the options of each request the editor saw
}

type optionShown struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// startLike starts permhost proxy with a configuration holding session (TOML
// lines of [session], "" for none) in front of likeagent -agent agent.
func startLike(t *testing.T, agent, session string) *likeRun {
	t.Helper()
	return startLikeWith(t, likeOpts{agent: agent, start: "default", session: session})
}

// likeOpts are the settings of a likeagent run.
type likeOpts struct {
	agent, start string // start "": the agent's own start mode
	// plugins are [[plugin]] tables; session the lines of [session].
	plugins, session string
	// caps are the editor's clientCapabilities ("" none of fs, terminal
	// or elicitation).
	caps string
	// serve answers the agent's requests other than permission requests.
	serve func(r *likeRun, m *wireMsg) []byte
	// agentArgs are more likeagent flags (-load, -fork, -undo...).
	agentArgs []string
	// initialize is the editor's initialize params ("": ACP v1's with
	// caps).
	initialize string
	// top are top-level TOML lines (strategy...), proxyArgs more flags
	// of permhost proxy.
	top       string
	proxyArgs []string
}

func startLikeWith(t *testing.T, o likeOpts) *likeRun {
	t.Helper()
	agent, session := o.agent, o.session
	dir := t.TempDir()
	r := &likeRun{t: t, state: filepath.Join(dir, "state"), project: filepath.Join(dir, "project"),
		events: filepath.Join(dir, "events.jsonl"), log: filepath.Join(dir, "decisions.jsonl")}
	if err := os.MkdirAll(filepath.Join(r.project, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := o.top + "\n[log]\npath = \"decisions.jsonl\"\n"
	if o.plugins != "" {
		cfg += "\n" + o.plugins + "\n"
	}
	if session != "" {
		cfg += "\n[session]\n" + session + "\n"
	}
	cfgPath := filepath.Join(dir, "permhost.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"XDG_STATE_HOME=" + r.state, permhostBin, "proxy", "--config", cfgPath}, o.proxyArgs...)
	args = append(args, "--", likeAgent(t), "-agent", agent, "-events", r.events, "-report", filepath.Join(dir, "report.jsonl"))
	if o.start != "" {
		args = append(args, "-start", o.start)
	}
	args = append(args, o.agentArgs...)
	r.report = filepath.Join(dir, "report.jsonl")
	r.proc = acptest.Start(t, append([]string{"env"}, args...)...)
	r.client = newTestClient(t, r.proc.Stdout, r.proc.Stdin, func(m *wireMsg) []byte {
		var p struct {
			Options []optionShown `json:"options"`
		}
		json.Unmarshal(m.Params, &p)
		r.mu.Lock()
		r.asked = append(r.asked, p.Options)
		answer, answerMsg := r.answer, r.answerMsg
		r.mu.Unlock()
		if answerMsg != nil {
			return answerMsg(m)
		}
		return editorAnswer(m.ID, answer(p.Options))
	})
	if o.serve != nil {
		r.client.serve = func(m *wireMsg) []byte { return o.serve(r, m) }
	}
	t.Cleanup(func() {
		if t.Failed() {
			ev, _ := os.ReadFile(r.events)
			lg, _ := os.ReadFile(r.log)
			t.Logf("agent events:\n%s\ndecision log:\n%s\nstderr:\n%s", ev, lg, r.proc.Stderr())
		}
	})
	caps := o.caps
	if caps == "" {
		caps = `{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false}`
	}
	init := cmp.Or(o.initialize, `{"protocolVersion":1,"clientCapabilities":`+caps+`,"clientInfo":{"name":"e2e","version":"1"}}`)
	r.initialized = r.call("initialize", init)
	r.started = r.call("session/new", `{"cwd":`+quote(r.project)+`,"mcpServers":[]}`)
	var s struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(r.started.Result, &s)
	r.session = s.SessionID
	return r
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// call sends a request and returns its response.
func (r *likeRun) call(method, params string) *wireMsg {
	r.t.Helper()
	r.nextID++
	id := fmt.Sprintf(`"c%d"`, r.nextID)
	r.client.send([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`))
	_, m := r.client.waitFor("the response to "+method, func(m *wireMsg) bool { return m.isResponse() && string(m.ID) == id })
	return m
}

// prompt runs one turn of steps, each answered by answer, and returns the
// options of each request the editor was shown during it.
func (r *likeRun) prompt(answer func([]optionShown) string, steps ...string) [][]optionShown {
	r.t.Helper()
	r.mu.Lock()
	r.answer, r.asked = answer, nil
	r.mu.Unlock()
	res := r.call("session/prompt", `{"sessionId":`+quote(r.session)+`,"prompt":[{"type":"text","text":`+quote(strings.Join(steps, "\n"))+`}]}`)
	if !strings.Contains(string(res.Result), "end_turn") {
		r.t.Fatalf("the turn ended %s", res.Raw)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked
}

// lastEvents returns the agent's last n step events.
func (r *likeRun) lastEvents(n int) []likeEvent {
	r.t.Helper()
	b, err := os.ReadFile(r.events)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []likeEvent
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var e likeEvent
		if err := json.Unmarshal(l, &e); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, e)
	}
	if len(out) < n {
		r.t.Fatalf("%d events, want %d", len(out), n)
	}
	return out[len(out)-n:]
}

// decisions waits for n decision-log lines and returns them.
func (r *likeRun) decisions(n int) []map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(pipeWait)
	for {
		b, _ := os.ReadFile(r.log)
		lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
		if len(b) > 0 && len(lines) >= n && bytes.HasSuffix(b, []byte("\n")) {
			var out []map[string]any
			for _, l := range lines {
				var m map[string]any
				if err := json.Unmarshal(l, &m); err != nil {
					r.t.Fatal(err)
				}
				out = append(out, m)
			}
			return out
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the decision log did not reach %d lines", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// permhost runs the permhost binary with the run's state directory.
func (r *likeRun) permhost(args ...string) (int, string, string) {
	cmd := exec.Command(permhostBin, args...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+r.state)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

func (r *likeRun) finish() {
	r.t.Helper()
	r.proc.Stdin.Close()
	if code, err := r.proc.Wait(pipeWait); err != nil || code != 0 {
		r.t.Fatalf("permhost proxy exit %d, %v", code, err)
	}
}

func ids(opts []optionShown) []string {
	var out []string
	for _, o := range opts {
		out = append(out, o.OptionID)
	}
	return out
}

// pick answers with the option of that id, failing the test when it was not
// shown.
func pick(t *testing.T, id string) func([]optionShown) string {
	return func(opts []optionShown) string {
		if !slices.Contains(ids(opts), id) {
			t.Errorf("option %s not shown; shown %v", id, ids(opts))
		}
		return id
	}
}

func optionNamed(opts []optionShown, id string) string {
	for _, o := range opts {
		if o.OptionID == id {
			return o.Name
		}
	}
	return ""
}

// TestGrantThroughTheBinary: for Gemini CLI, Qwen Code and codex-acp (each
// as recorded, "always" widening to the command root or a prefix rule),
// the editor is offered permhost's grant instead of the agent's durable
// options; choosing it stores the grant (0600) and the agent receives its
// one-time allow; the next rm -rf build is allowed by the grant (the editor
// never sees it, the agent gets its one-time allow, decidedBy grant:ID);
// rm -rf other is asked; permhost grants lists the grant and revokes it,
// and the running proxy asks again.
func TestGrantThroughTheBinary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		agent, once string
		durable     []string
	}{
		{"gemini", "proceed_once", []string{"proceed_always"}},
		{"qwen", "proceed_once", []string{"proceed_always_project", "proceed_always_user"}},
		{"codex", "allow_once", []string{"accept_execpolicy_amendment"}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			r := startLike(t, tc.agent, "")
			asked := r.prompt(pick(t, "permhost-grant-project"), "run: rm -rf build")
			if len(asked) != 1 {
				t.Fatalf("the editor saw %d requests", len(asked))
			}
			for _, d := range tc.durable {
				if slices.Contains(ids(asked[0]), d) {
					t.Errorf("the agent's durable option %s was shown: %v", d, ids(asked[0]))
				}
			}
			if got := optionNamed(asked[0], "permhost-grant-project"); got != "Allow `rm -rf build` (exact command) in this project" {
				t.Errorf("grant option named %q", got)
			}
			if ev := r.lastEvents(1)[0]; !ev.Asked || ev.Answer != tc.once || !ev.Ran || ev.Unoffered {
				t.Fatalf("the agent: %+v, want its %s", ev, tc.once)
			}
			file := filepath.Join(r.state, "permhost", "grants.json")
			st, err := os.Stat(file)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("grants file: %v %v", st, err)
			}
			if dst, _ := os.Stat(filepath.Dir(file)); dst.Mode().Perm() != 0o700 {
				t.Errorf("state directory mode %v", dst.Mode().Perm())
			}
			var stored struct {
				Grants []struct{ ID, Project string }
			}
			b, _ := os.ReadFile(file)
			if json.Unmarshal(b, &stored) != nil || len(stored.Grants) != 1 || stored.Grants[0].Project != r.project {
				t.Fatalf("stored %s", b)
			}
			id := stored.Grants[0].ID

			// The same command again, then a wider one.
			asked = r.prompt(pick(t, tc.once), "run: rm -rf build", "run: rm -rf other")
			if len(asked) != 1 || optionNamed(asked[0], "permhost-grant-project") != "Allow `rm -rf other` (exact command) in this project" {
				t.Fatalf("the editor saw %d requests (%v), want only rm -rf other", len(asked), asked)
			}
			ev := r.lastEvents(2)
			if !ev[0].Asked || ev[0].Answer != tc.once || !ev[0].Ran || !ev[1].Asked || ev[1].Answer != tc.once {
				t.Fatalf("the agent: %+v", ev)
			}
			log := r.decisions(3)
			if log[1]["decidedBy"] != "grant:"+id || log[1]["optionId"] != tc.once || log[2]["decidedBy"] != "person" {
				t.Errorf("decisions: %v / %v", log[1], log[2])
			}
			if g, _ := log[0]["grant"].(map[string]any); g["id"] != id || g["scope"] != "project" {
				t.Errorf("first decision's grant: %v", log[0]["grant"])
			}
			told := r.client.index(func(m *wireMsg) bool {
				return m.Method == "session/update" && bytes.Contains(m.Params, []byte(`"decidedBy":"grant:`+id+`"`))
			})
			if told < 0 {
				t.Error("the editor was not told the grant decided")
			}

			code, out, errOut := r.permhost("grants", "list", "--project", r.project)
			if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "Allow `rm -rf build` (exact command) in this project") {
				t.Fatalf("grants list: %d %q %q", code, out, errOut)
			}
			if code, out, errOut = r.permhost("grants", "revoke", id); code != 0 || !strings.Contains(out, "revoked "+id) {
				t.Fatalf("grants revoke: %d %q %q", code, out, errOut)
			}
			asked = r.prompt(pick(t, tc.once), "run: rm -rf build")
			if len(asked) != 1 {
				t.Errorf("after revoke the editor saw %d requests, want 1", len(asked))
			}
			if code, out, _ = r.permhost("grants", "list"); code != 0 || strings.Contains(out, id) {
				t.Errorf("grants list after revoke: %q", out)
			}
			r.finish()
		})
	}
}

// TestGrantEditsThroughTheBinary: claude-agent-acp 0.101's Write, whose
// "Yes, allow all edits during this session" would switch the session to
// acceptEdits silently, gets permhost's "edits under src/" instead; later
// writes under src/ are allowed by the grant, src/../.env, a symlink out
// of src/ and src/l/../outside.txt with src/l -> ../other (which the kernel
// opens at the project's top) are asked.
func TestGrantEditsThroughTheBinary(t *testing.T) {
	t.Parallel()
	r := startLike(t, "claude101", "")
	if err := os.Symlink("../.env", filepath.Join(r.project, "src", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(r.project, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other", filepath.Join(r.project, "src", "l")); err != nil {
		t.Fatal(err)
	}
	asked := r.prompt(pick(t, "permhost-grant-session"), "write: src/a.go")
	if len(asked) != 1 || slices.Contains(ids(asked[0]), "allow-with-updates") ||
		optionNamed(asked[0], "permhost-grant-session") != "Allow edits under `src/` for this session" {
		t.Fatalf("shown %v", asked)
	}
	asked = r.prompt(pick(t, "reject"), "write: src/b.go", "write: src/../.env", "write: src/link", "write: src/l/../outside.txt", "run: touch x")
	if len(asked) != 4 {
		t.Fatalf("the editor saw %d requests, want 4 (.env, the link, l/../outside.txt, touch)", len(asked))
	}
	ev := r.lastEvents(5)
	if !ev[0].Ran || ev[0].Answer != "allow-once" || ev[1].Ran || ev[2].Ran || ev[3].Ran || ev[4].Ran {
		t.Errorf("the agent: %+v", ev)
	}
	for i, title := range []string{"Write b.go", "Write .env", "Write link", "Write outside.txt", "touch x"} {
		outcome, option := agentAnswerLogged(ev[i].Answer)
		r.logged("of "+title, ofTitle(title), outcome, option)
	}
	r.finish()
}

// TestAllowAlwaysAgentAndOffThroughTheBinary: with allow_always = "agent"
// the agent's own "Allow for this session" is shown and does what Gemini
// CLI does with it (rm -rf other then runs unasked); with "off" only
// one-time options are shown, and an answer naming the durable one gets the
// agent's reject.
func TestAllowAlwaysAgentAndOffThroughTheBinary(t *testing.T) {
	t.Parallel()
	t.Run("agent", func(t *testing.T) {
		t.Parallel()
		r := startLike(t, "gemini", `allow_always = "agent"`)
		asked := r.prompt(pick(t, "proceed_always"), "run: rm -rf build", "run: rm -rf other")
		if len(asked) != 1 || !slices.Equal(ids(asked[0]), []string{"proceed_always", "proceed_once", "cancel"}) {
			t.Fatalf("shown %v", asked)
		}
		ev := r.lastEvents(2)
		if ev[0].Answer != "proceed_always" || ev[1].Asked || !ev[1].Ran {
			t.Errorf("the agent: %+v (rm -rf other should run unasked under its root rule)", ev)
		}
		r.finish()
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		r := startLike(t, "gemini", `allow_always = "off"`)
		asked := r.prompt(func([]optionShown) string { return "proceed_always" }, "run: rm -rf build")
		if len(asked) != 1 || !slices.Equal(ids(asked[0]), []string{"proceed_once", "cancel"}) {
			t.Fatalf("shown %v", asked)
		}
		if ev := r.lastEvents(1)[0]; ev.Answer != "cancel" || ev.Ran {
			t.Errorf("the agent: %+v, want its reject", ev)
		}
		r.logged("of the answer not offered", ofTitle("rm -rf build"), "selected", "cancel")
		if _, err := os.Stat(filepath.Join(r.state, "permhost", "grants.json")); !os.IsNotExist(err) {
			t.Errorf("off stored grants: %v", err)
		}
		r.finish()
	})
}
