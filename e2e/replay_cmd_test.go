package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/acptest"
)

// TestReplayCommandGolden runs `permhost replay` over every recorded
// transcript with the example configuration and compares the table.
func TestReplayCommandGolden(t *testing.T) {
	for _, p := range []string{"protect-secrets", "plan-mode", "team-rules", "explainer"} {
		examplePlugin(t, p)
	}
	dir := filepath.Join(acptest.TranscriptDir(t))
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	var names []string
	requests := 0
	for _, f := range files {
		names = append(names, filepath.Base(f))
		tr, err := acptest.LoadTranscript(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tr.Entries {
			var m struct{ Method string }
			if e.Dir == acptest.AgentToClient && json.Unmarshal(e.Msg, &m) == nil && m.Method == "session/request_permission" {
				requests++
			}
		}
	}
	config := filepath.Join(repoRoot, "examples", "permhost.toml")
	replay := func(extra ...string) (int, string, string) {
		args := append([]string{"replay", "--config", config}, extra...)
		return runPermhostIn(t, dir, nil, append(args, names...)...)
	}
	code, out, errOut := replay()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	golden := filepath.Join("testdata", "replay.golden")
	if *update {
		os.WriteFile(golden, []byte(out), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("replay table differs from %s (-update to rewrite):\n%s", golden, out)
	}
	if !strings.Contains(out, "rm -rf build     reject  team-rules  allow     ≠") {
		t.Errorf("the allowed rm -rf is not marked as a difference")
	}

	code, out, _ = replay("--json", "--fail-on-diff")
	if code != 1 {
		t.Errorf("--fail-on-diff exit %d, want 1", code)
	}
	rows, rmRejected := 0, map[string]bool{}
	notes := map[string][]string{} // file -> "type what" of each note
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			File, Today, Actual, Title, DecidedBy string
			Differs                               bool
			Note                                  *struct{ Type, What, Title string }
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.File == "" || (r.Today == "") == (r.Note == nil) {
			t.Fatalf("--json line %q: %v", line, err)
		}
		if r.Note != nil {
			notes[r.File] = append(notes[r.File], r.Note.Type+" "+r.Note.Title+": "+r.Note.What)
			continue
		}
		rows++
		// The same rm -rf build is rejected whichever agent asks: Gemini
		// CLI's command is only its title, Qwen Code's title is not its
		// command, codex-acp's is a string beside a cwd.
		if strings.HasPrefix(r.Title, "rm -rf build") {
			agent, _, _ := strings.Cut(r.File, "-")
			if r.DecidedBy != "team-rules" {
				t.Errorf("%s: rm -rf build decided %q by %q, want a reject by team-rules", r.File, r.Today, r.DecidedBy)
			}
			rmRejected[agent] = true
		}
	}
	for _, agent := range []string{"claude", "claude101", "codexts", "gemini", "qwen"} {
		if !rmRejected[agent] {
			t.Errorf("no rm -rf build of %s replayed", agent)
		}
	}
	if rows != requests {
		t.Errorf("%d JSON rows, want %d (every permission request of the recorded transcripts)", rows, requests)
	}
	// What each agent decided by itself, and the mode actions permhost
	// would take, as recorded.
	for file, want := range map[string][]string{
		// claude 0.23: ExitPlanMode's acceptEdits would switch to a mode
		// that edits unasked.
		"claude-plan-mode.jsonl": {"mode Ready to code?: option acceptEdits (switches to acceptEdits"},
		// claude 0.101: allow-with-updates switched to acceptEdits
		// silently; the next edits and touches ran unasked.
		"claude101-allow-always.jsonl": {"mode Write hello.txt: option allow-with-updates", "unasked Edit hello.txt:", "unasked touch a.txt:", "unasked touch b.txt:"},
		"claude101-plan-mode.jsonl":    {"mode Approve Plan: option exit-plan-auto (switches to auto, which decides by itself) removed"},
		// codex: its prefix rule let the second rm -rf build run unasked.
		"codexts-allow-always.jsonl": {"unasked rm -rf build: ran with no permission request"},
		// gemini: the command-root rule let rm -rf other run unasked.
		"gemini-allow-always.jsonl": {"unasked rm -rf other:", "file fs/read_text_file hello.txt: forwarded"},
		"gemini-allow.jsonl":        {"file fs/write_text_file hello.txt: forwarded: the permission request of its tool call allowed it"},
		// qwen: "Allow All Edits" switched to auto-edit, which permhost
		// reverses; the later edits ran unasked.
		"qwen-allow-always.jsonl": {"mode : current_mode_update to auto-edit", "permhost would switch back to default", "unasked Edit: hello.txt:", "unasked Shell: rm -rf other:"},
	} {
		got := strings.Join(notes[file], "\n")
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: no note %q in:\n%s", file, w, got)
			}
		}
	}
	for _, file := range []string{"claude101-allow.jsonl", "codexts-allow.jsonl", "gemini-allow.jsonl", "qwen-allow.jsonl", "sdk-example-allow.jsonl"} {
		if got := strings.Join(notes[file], "\n"); strings.Contains(got, "unasked") {
			t.Errorf("%s: the agent asked about everything, yet:\n%s", file, got)
		}
	}
}
