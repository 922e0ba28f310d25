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
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			File, Today, Actual, Title, DecidedBy string
			Differs                               bool
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.File == "" || r.Today == "" {
			t.Fatalf("--json line %q: %v", line, err)
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
}
