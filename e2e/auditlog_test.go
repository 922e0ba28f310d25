package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSignedDecisionLog: a session through permhost proxy with [log] key
// set. The decision log still says what the agent got (the pipeline
// helpers read it as they read a plain one, skipping seals), `permhost log
// verify` finds it intact, and after one byte of one entry is changed it
// exits 1 naming that entry.
func TestSignedDecisionLog(t *testing.T) {
	t.Parallel()
	tr := loadTranscript(t, "claude-reject")
	cfg, log := writeConfig(t, "sequential", pluginSpec{name: "plan-mode", path: "std:plan-mode", timeout: "5s", policy: "closed"})
	keyFile := filepath.Join(filepath.Dir(cfg), "log.key")
	out, err := exec.Command(permhostBin, "log", "keygen", "--out", keyFile).Output()
	if err != nil {
		t.Fatalf("permhost log keygen: %v", err)
	}
	pub := strings.TrimSpace(string(out))
	b, _ := os.ReadFile(cfg)
	b = bytes.Replace(b, []byte("path = \"decisions.jsonl\"\n"), []byte("path = \"decisions.jsonl\"\nkey = \"log.key\"\n"), 1)
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}

	perms := permRequests(t, tr)
	r := startPipeline(t, cfg, log, tr, answerRecorded(perms))
	checkPromptEnd(t, tr, r.client.playRequests(tr))
	entries := r.decisions(len(perms))
	rejected := 0
	for _, p := range perms {
		if blockedByPlanMode[p.kind] {
			rejected++
			r.checkRejected(p, "plan-mode")
			if e := entries[p.toolCallID]; e.DecidedBy != "plan-mode" || e.OptionID != p.optionOfKind("reject_once") {
				t.Errorf("log for %s: %+v, want plan-mode's reject", p.toolCallID, e)
			}
		}
	}
	if rejected == 0 {
		t.Fatal("the transcript has no request plan-mode rejects")
	}
	r.finish()

	verify := func() (int, string) {
		cmd := exec.Command(permhostBin, "log", "verify", "--key", pub, log)
		out, err := cmd.Output()
		if err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatal(err)
			}
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := verify(); code != 0 || !regexp.MustCompile(`^ok: \d+ entr(y|ies), \d+ seals? in 1 file; seals signed by a trusted key\n$`).MatchString(out) {
		t.Fatalf("verify of the session's log: exit %d, %q", code, out)
	}

	// One byte of the first rejected entry: "selected" becomes "selecteD".
	b, _ = os.ReadFile(log)
	lines := bytes.SplitAfter(b, []byte("\n"))
	var id string
	for i, l := range lines {
		if m := regexp.MustCompile(`"decisionId":"([^"]+)"`).FindSubmatch(l); m != nil && bytes.Contains(l, []byte(`"decidedBy":"plan-mode"`)) {
			id = string(m[1])
			lines[i] = bytes.Replace(l, []byte(`"outcome":"selected"`), []byte(`"outcome":"selecteD"`), 1)
			break
		}
	}
	if id == "" {
		t.Fatalf("no plan-mode entry in the log:\n%s", b)
	}
	if err := os.WriteFile(log, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	code, got := verify()
	if code != 1 || !strings.Contains(got, log+":") || !strings.Contains(got, "modified: entry seq ") || !strings.Contains(got, "(decisionId "+id+") was modified") {
		t.Fatalf("verify of the edited log: exit %d, %q; want 1 naming decision %s", code, got, id)
	}
}
