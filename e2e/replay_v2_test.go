package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/acptest"
)

// TestReplayV2Golden runs `permhost replay` over every recorded ACP v2
// transcript (testdata/transcripts/v2) with the example configuration,
// compares the table with testdata/replay-v2.golden, and checks that each
// v2 request gets the decision its v1 counterpart gets (the v1 recordings
// of the same agent versions, same tool call kind and title): the same
// action is decided the same whichever version carries it.
func TestReplayV2Golden(t *testing.T) {
	for _, p := range []string{"protect-secrets", "plan-mode", "team-rules", "explainer"} {
		examplePlugin(t, p)
	}
	v1Dir := acptest.TranscriptDir(t)
	v2Dir := filepath.Join(v1Dir, "v2")
	v2Files, _ := filepath.Glob(filepath.Join(v2Dir, "*.jsonl"))
	if len(v2Files) != 25 {
		t.Fatalf("%d v2 transcripts, want the 25 recorded", len(v2Files))
	}
	var names []string
	for _, f := range v2Files {
		names = append(names, filepath.Base(f))
	}
	config := filepath.Join(repoRoot, "examples", "permhost.toml")
	code, out, errOut := runPermhostIn(t, v2Dir, nil, append([]string{"replay", "--config", config}, names...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	golden := filepath.Join("testdata", "replay-v2.golden")
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
	// v2 sessions are governed by their configOptions: each agent's
	// default mode, which decides, would be switched.
	for _, w := range []string{
		"session/new: mode auto decides by itself; permhost would switch to default (session/set_config_option)",
		"session/new: mode agent decides by itself; permhost would switch to read-only (session/set_config_option)",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("no note %q", w)
		}
	}

	type row struct {
		File, Kind, Title, Today, DecidedBy string
		Note                                *struct{}
	}
	rowsOf := func(dir string, files ...string) []row {
		t.Helper()
		code, out, errOut := runPermhostIn(t, dir, nil, append([]string{"replay", "--config", config, "--json"}, files...)...)
		if code != 0 {
			t.Fatalf("replay --json: exit %d\n%s", code, errOut)
		}
		var rows []row
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var r row
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("--json line %q: %v", line, err)
			}
			if r.Note == nil {
				rows = append(rows, r)
			}
		}
		return rows
	}
	// The v1 recordings of claude-agent-acp 0.101 and codex-acp 2.6:
	// those beside the v2 ones (offer-v1) and the older ones.
	var v1Names []string
	for _, pat := range []string{"claude101-*.jsonl", "codexts-*.jsonl"} {
		m, _ := filepath.Glob(filepath.Join(v1Dir, pat))
		for _, f := range m {
			v1Names = append(v1Names, filepath.Base(f))
		}
	}
	agentOf := func(file string) string { a, _, _ := strings.Cut(file, "-"); return a }
	key := func(r row) string { return agentOf(r.File) + "|" + r.Kind + "|" + r.Title }
	v1 := map[string]row{}
	for _, r := range append(rowsOf(v1Dir, v1Names...), rowsOf(v2Dir, "claude101-v2-offer-v1.jsonl", "codexts-v2-offer-v1.jsonl")...) {
		if old, ok := v1[key(r)]; ok && (old.Today != r.Today || old.DecidedBy != r.DecidedBy) {
			t.Fatalf("v1 decides %s two ways: %+v and %+v", key(r), old, r)
		}
		v1[key(r)] = r
	}
	matched := map[string]int{}
	for _, r := range rowsOf(v2Dir, names...) {
		if strings.Contains(r.File, "offer-v1") {
			continue
		}
		c, ok := v1[key(r)]
		if !ok {
			// Recorded over v2 only (claude's echo hi > t.txt, codex's
			// plan review): nothing to compare with.
			t.Logf("%s: %s %q (%s) has no v1 counterpart", r.File, r.Kind, r.Title, r.Today)
			continue
		}
		if r.Today != c.Today || r.DecidedBy != c.DecidedBy {
			t.Errorf("%s: %s %q decided %s by %q over v2, %s by %q over v1 (%s)", r.File, r.Kind, r.Title, r.Today, r.DecidedBy, c.Today, c.DecidedBy, c.File)
		}
		matched[agentOf(r.File)+" "+r.Kind]++
	}
	for _, k := range []string{"claude101 execute", "claude101 edit", "codexts execute", "codexts edit"} {
		if matched[k] == 0 {
			t.Errorf("no v2 %s request compared with v1", k)
		}
	}
	t.Logf("v2 requests decided as their v1 counterparts: %v", matched)
}
