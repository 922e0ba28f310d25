package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// These tests run `permhost run` against testdata/likeagent behaving as a
// recorded agent, with a policy whose [session] governs (the default with
// plugins): permhost run is a governed session as permhost proxy's are.

// teamRules rejects rm -rf, as examples/permhost.toml's team-rules does.
const teamRules = `[[plugin]]
name = "team-rules"
path = "std:team-rules"
layer = "team"

[[plugin.config.rules]]
action = "reject"
command = [["rm", "-rf"], ["rm", "-fr"]]
reason = "destructive or privileged commands are not run by agents"`

// governedRun is one permhost run of likeagent.
type governedRun struct {
	t                                     *testing.T
	dir, cwd, config, log, events, report string
	env                                   []string // more of permhost's environment
}

// newGovernedRun writes a configuration of plugins and [session] lines.
func newGovernedRun(t *testing.T, plugins, session string) *governedRun {
	t.Helper()
	dir := t.TempDir()
	r := &governedRun{t: t, dir: dir, cwd: filepath.Join(dir, "project"), config: filepath.Join(dir, "permhost.toml"),
		log: filepath.Join(dir, "decisions.jsonl"), events: filepath.Join(dir, "events.jsonl"), report: filepath.Join(dir, "report.jsonl")}
	if err := os.Mkdir(r.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[log]\npath = %q\n\n%s\n", r.log, plugins)
	if session != "" {
		cfg += "\n[session]\n" + session + "\n"
	}
	if err := os.WriteFile(r.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs permhost run with flags and the prompt's steps against likeagent
// with its flags, to the end.
func (r *governedRun) run(flags []string, steps []string, agentFlags ...string) (code int, stdout, stderr string) {
	r.t.Helper()
	args := append([]string{"run", "--config", r.config, "--cwd", r.cwd, "--prompt", strings.Join(steps, "\n")}, flags...)
	args = append(append(args, "--", likeAgent(r.t), "-events", r.events, "-report", r.report), agentFlags...)
	c := exec.Command(permhostBin, args...)
	c.Env = append(append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(r.dir, "state"), "XDG_CONFIG_HOME="+r.dir), r.env...)
	code, stdout, stderr = runToEnd(r.t, c)
	r.t.Cleanup(func() {
		if r.t.Failed() {
			ev, _ := os.ReadFile(r.events)
			lg, _ := os.ReadFile(r.log)
			r.t.Logf("agent events:\n%s\ndecision log:\n%s\nstdout:\n%s\nstderr:\n%s", ev, lg, stdout, stderr)
		}
	})
	return code, stdout, stderr
}

// steps returns the agent's step events.
func (r *governedRun) steps() []likeEvent {
	r.t.Helper()
	b, _ := os.ReadFile(r.events)
	var out []likeEvent
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var e likeEvent
		if len(l) > 0 && json.Unmarshal(l, &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// methods returns the method of each request the agent read, in order.
func (r *governedRun) methods() []string {
	r.t.Helper()
	var out []string
	for _, m := range readJSONLines(r.t, r.report) {
		if s, ok := m["method"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// entries returns the decision-log entries match accepts.
func (r *governedRun) entries(match func(map[string]any) bool) []map[string]any {
	r.t.Helper()
	var out []map[string]any
	if _, err := os.Stat(r.log); err != nil {
		return nil
	}
	for _, m := range readJSONLines(r.t, r.log) {
		if match(m) {
			out = append(out, m)
		}
	}
	return out
}

// TestRunGovernedStart: claude-agent-acp 0.101 starts in auto (moved with
// its mode config option) and Gemini CLI started in yolo (moved with
// session/set_mode); permhost run moves the session to the asking mode
// before session/prompt, the decision log and the transcript record it,
// and the permission request that then arrives is decided by team-rules.
func TestRunGovernedStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		agent, start, from, to, by, rejectID, reject string
	}{
		{"claude101", "", "auto", "default", "session/set_config_option", "reject", `rejected: "No" (reject_once) by plugin team-rules`},
		{"gemini", "yolo", "yolo", "default", "session/set_mode", "cancel", `rejected: "Reject" (reject_once) by plugin team-rules`},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			t.Parallel()
			r := newGovernedRun(t, teamRules, "")
			agentFlags := []string{"-agent", tt.agent}
			if tt.start != "" {
				agentFlags = append(agentFlags, "-start", tt.start)
			}
			code, _, stderr := r.run(nil, []string{"run: rm -rf build"}, agentFlags...)
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			got := r.methods()
			sw, prompt := slices.Index(got, tt.by), slices.Index(got, "session/prompt")
			if sw < 0 || prompt < 0 || sw > prompt || slices.Index(got, "session/new") > sw {
				t.Fatalf("the agent read %v: want session/new, %s, then session/prompt", got, tt.by)
			}
			ev := r.steps()
			if len(ev) != 2 || ev[0].Mode != tt.to || ev[1].Step != "run: rm -rf build" || !ev[1].Asked || ev[1].Answer != tt.rejectID || ev[1].Ran || ev[1].Mode != tt.to {
				t.Errorf("the agent's steps: %+v", ev)
			}
			sws := r.entries(modeAction("switch"))
			if len(sws) != 1 {
				t.Fatalf("%d switch entries", len(sws))
			}
			m := sws[0]["mode"].(map[string]any)
			if m["trigger"] != "session/new" || m["from"] != tt.from || m["to"] != tt.to || m["by"] != tt.by ||
				sws[0]["outcome"] != "switched" || sws[0]["decidedBy"] != "modes" || sws[0]["via"] != "run" {
				t.Errorf("the switch entry: %v", sws[0])
			}
			perm := r.entries(func(m map[string]any) bool { return m["decidedBy"] == "team-rules" })
			if len(perm) != 1 {
				t.Errorf("%d entries decided by team-rules", len(perm))
			}
			line := fmt.Sprintf("• mode %s → %s by permhost (%s): mode %s decides by itself", tt.from, tt.to, tt.by, tt.from)
			i, j := strings.Index(stderr, line), strings.Index(stderr, tt.reject)
			if i < 0 || j < 0 || i > j {
				t.Errorf("stderr lacks %q, then %q", line, tt.reject)
			}
		})
	}
}

// TestRunGovernedJSON: with --json the mode action is an event "mode"
// carrying the action, before every event of the turn.
func TestRunGovernedJSON(t *testing.T) {
	t.Parallel()
	r := newGovernedRun(t, teamRules, "")
	code, stdout, _ := r.run([]string{"--json"}, []string{"run: rm -rf build"}, "-agent", "claude101")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var kinds []string
	var mode map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("stdout line %q: %v", l, err)
		}
		kinds = append(kinds, ev["event"].(string))
		if ev["event"] == "mode" && ev["action"] != nil && mode == nil {
			mode = ev
		}
	}
	if len(kinds) == 0 || kinds[0] != "mode" || mode == nil || !slices.Contains(kinds, "permission") {
		t.Fatalf("events %v", kinds)
	}
	a := mode["action"].(map[string]any)
	if mode["mode"] != "default" || a["action"] != "switch" || a["from"] != "auto" || a["to"] != "default" ||
		a["by"] != "session/set_config_option" || mode["decidedBy"] != "modes" || !strings.HasPrefix(mode["decisionId"].(string), "d-") {
		t.Errorf("the mode event: %v", mode)
	}
}

// TestRunGovernedPass: with modes = "pass" the session stays in auto: no
// switch is sent and claude runs rm -rf build (and rm -rf other) without
// asking. fs still governs, so the session is watched: each unasked call
// is logged ("unasked": true), shown (--json: an "unasked" event), and
// stderr warns once.
func TestRunGovernedPass(t *testing.T) {
	t.Parallel()
	r := newGovernedRun(t, teamRules, `modes = "pass"`)
	code, stdout, stderr := r.run([]string{"--json"}, []string{"run: rm -rf build", "run: rm -rf other"}, "-agent", "claude101")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got := r.methods(); slices.Contains(got, "session/set_mode") || slices.Contains(got, "session/set_config_option") {
		t.Errorf("a switch was sent: %v", got)
	}
	ev := r.steps()
	if len(ev) != 2 || ev[0].Asked || !ev[0].Ran || ev[0].Mode != "auto" {
		t.Errorf("the agent's steps: %+v", ev)
	}
	if n := len(r.entries(func(m map[string]any) bool { return m["mode"] != nil })); n != 0 {
		t.Errorf("%d mode actions logged", n)
	}
	un := r.entries(func(m map[string]any) bool { return m["unasked"] == true })
	if len(un) != 2 {
		t.Fatalf("%d unasked entries, want 2", len(un))
	}
	for i, title := range []string{"rm -rf build", "rm -rf other"} {
		tc := un[i]["toolCall"].(map[string]any)
		if tc["title"] != title || tc["kind"] != "execute" || tc["status"] != "completed" || un[i]["decidedBy"] != "agent" || un[i]["outcome"] != "ran" {
			t.Errorf("unasked entry %d: %v", i, un[i])
		}
	}
	var events []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) == nil && e["event"] == "unasked" {
			events = append(events, e)
		}
		if e["event"] == "mode" && e["action"] != nil {
			t.Errorf("a mode action: %s", l)
		}
	}
	if len(events) != 2 || events[0]["toolCall"].(map[string]any)["title"] != "rm -rf build" || events[0]["toolCall"].(map[string]any)["toolCallId"] == "" {
		t.Errorf("unasked events: %v", events)
	}
	if n := strings.Count(stderr, "the agent ran a tool call without asking: the policy never saw it"); n != 1 {
		t.Errorf("stderr warned %d times, want once", n)
	}
}

// TestRunGovernedRefused: an agent that refuses the switch out of its
// deciding mode, and one that offers no mode that asks, are not prompted:
// run exits 7 saying why, and the decision log records the session as
// ungovernable.
func TestRunGovernedRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		agent    []string
		switched bool // a switch was tried
		tells    string
	}{
		{"refuses the switch", []string{"-agent", "claude101", "-refuse-switch"}, true, "the agent refused the switch to default"},
		{"no asking mode", []string{"-agent", "deciding"}, false, "no offered mode asks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newGovernedRun(t, teamRules, "")
			code, stdout, stderr := r.run(nil, []string{"run: rm -rf build"}, tt.agent...)
			if code != 7 {
				t.Fatalf("exit %d, want 7", code)
			}
			got := r.methods()
			if slices.Contains(got, "session/prompt") {
				t.Errorf("the agent was prompted: %v", got)
			}
			if tried := slices.Contains(got, "session/set_config_option") || slices.Contains(got, "session/set_mode"); tried != tt.switched {
				t.Errorf("the agent read %v", got)
			}
			if !strings.Contains(stderr, "permhost run: the session cannot be governed; the prompt was not sent: ") || !strings.Contains(stderr, tt.tells) {
				t.Errorf("stderr lacks why")
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			if u := r.entries(modeAction("ungovernable")); len(u) != 1 || u[0]["outcome"] != "refused" {
				t.Errorf("ungovernable entries: %v", u)
			}
		})
	}
}

// TestRunGovernedFS: Qwen Code reads and writes through fs/*; with
// --allow-fs, the read of .env is refused by protect-secrets (the agent
// gets the policy's error, the file is not read), another read is served,
// a write its permission request allowed is served without being asked
// again, and one outside --cwd is still refused.
func TestRunGovernedFS(t *testing.T) {
	t.Parallel()
	r := newGovernedRun(t, protectSecrets+"\n"+slowPlugin(`{"outcome":"allow","reason":"fine"}`, 0), "")
	if err := os.WriteFile(filepath.Join(r.cwd, ".env"), []byte("SECRET=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.cwd, "notes.txt"), []byte("notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := r.run([]string{"--allow-fs"}, []string{"read: .env", "read: notes.txt", "write: hello.txt", "write: ../outside.txt"}, "-agent", "qwen")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	ev := r.steps()
	if len(ev) != 5 {
		t.Fatalf("the agent's steps: %+v", ev)
	}
	env, notes, hello, outside := ev[1], ev[2], ev[3], ev[4]
	if len(env.FS) != 1 || !strings.HasPrefix(env.FS[0], "read .env: error permhost: fs/read_text_file") || !strings.Contains(env.FS[0], "refused by protect-secrets") || env.Ran {
		t.Errorf("the read of .env: %+v", env)
	}
	if len(notes.FS) != 1 || notes.FS[0] != "read notes.txt: content" {
		t.Errorf("the read of notes.txt: %+v", notes)
	}
	if !hello.Asked || !hello.Ran || !slices.Equal(hello.FS, []string{"write hello.txt: ok"}) {
		t.Errorf("the write of hello.txt: %+v", hello)
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt: %q, %v", b, err)
	}
	if outside.Ran || len(outside.FS) != 1 || !strings.Contains(outside.FS[0], "error") {
		t.Errorf("the write outside --cwd: %+v", outside)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "outside.txt")); err == nil {
		t.Errorf("outside.txt was written")
	}
	envPath := filepath.Join(r.cwd, ".env")
	refused := r.entries(func(m map[string]any) bool { return m["request"] == "fs/read_text_file" && m["outcome"] == "refused" })
	if len(refused) != 1 || refused[0]["decidedBy"] != "protect-secrets" {
		t.Errorf("refused reads: %v", refused)
	}
	w := r.entries(func(m map[string]any) bool {
		return m["request"] == "fs/write_text_file" && m["outcome"] == "forwarded"
	})
	if len(w) < 1 || !strings.HasPrefix(w[0]["decidedBy"].(string), "allowed:d-") {
		t.Errorf("forwarded writes: %v", w)
	}
	if !strings.Contains(stderr, "  fs read "+envPath+" refused by plugin protect-secrets") {
		t.Errorf("stderr lacks the refusal")
	}
	if strings.Contains(stderr, "fs read "+envPath+" (") {
		t.Errorf("the client served .env")
	}
	if !strings.Contains(stderr, "  fs write "+filepath.Join(r.cwd, "hello.txt")+" (6 bytes)") {
		t.Errorf("stderr lacks the served write")
	}
}

// TestRunGovernedFSResolved: the attacker cases of issue #19 through the
// binary. With config.txt -> .env and k -> ~/.config, the reads of
// config.txt and of k/../.ssh/config are what the OS opens, .env and
// ~/.ssh/config: protect-secrets refuses both although another plugin
// allows every read, and nothing is served; notes.txt still is.
func TestRunGovernedFSResolved(t *testing.T) {
	t.Parallel()
	r := newGovernedRun(t, protectSecrets+"\n"+slowPlugin(`{"outcome":"allow","reason":"fine"}`, 0), "")
	home := filepath.Join(r.dir, "home")
	r.env = []string{"HOME=" + home}
	for _, d := range []string{home + "/.ssh", home + "/.config"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for f, s := range map[string]string{home + "/.ssh/config": "Host *\n", r.cwd + "/.env": "SECRET=1\n", r.cwd + "/notes.txt": "notes\n"} {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".env", filepath.Join(r.cwd, "config.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home+"/.config", filepath.Join(r.cwd, "k")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := r.run([]string{"--allow-fs"}, []string{"read: config.txt", "read: k/../.ssh/config", "read: notes.txt"}, "-agent", "qwen")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	ev := r.steps()
	if len(ev) != 4 {
		t.Fatalf("the agent's steps: %+v", ev)
	}
	for _, e := range ev[1:3] {
		if len(e.FS) != 1 || !strings.Contains(e.FS[0], ": error permhost: fs/read_text_file") || !strings.Contains(e.FS[0], "refused by protect-secrets") {
			t.Errorf("%s: %+v", e.Step, e.FS)
		}
	}
	if notes := ev[3]; len(notes.FS) != 1 || notes.FS[0] != "read notes.txt: content" {
		t.Errorf("the read of notes.txt: %+v", notes)
	}
	refused := r.entries(func(m map[string]any) bool { return m["request"] == "fs/read_text_file" && m["outcome"] == "refused" })
	if len(refused) != 2 || refused[0]["decidedBy"] != "protect-secrets" || refused[1]["decidedBy"] != "protect-secrets" {
		t.Errorf("refused reads: %v", refused)
	}
	if strings.Contains(stderr, "fs read "+r.cwd+"/config.txt (") || strings.Contains(stderr, "fs read "+r.cwd+"/.env (") {
		t.Errorf("the client served .env:\n%s", stderr)
	}
}
