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

// TestDemo runs `permhost demo` as the README's first command does (the
// standard plugins inside the binary), and with --plugins the plugins built
// from the sources, and checks each decision a user sees.
func TestDemo(t *testing.T) {
	for _, p := range []string{"protect-secrets", "plan-mode", "team-rules", "explainer"} {
		examplePlugin(t, p)
	}
	for _, variant := range []struct {
		name string
		args []string
	}{
		{"standard plugins", nil},
		{"built plugins", []string{"--plugins", filepath.Dir(examplePlugin(t, "plan-mode"))}},
	} {
		t.Run(variant.name, func(t *testing.T) { checkDemo(t, variant.args...) })
	}
}

func checkDemo(t *testing.T, args ...string) {
	cmd := exec.Command(permhostBin, append([]string{"demo"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("permhost demo: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out := stderr.String()
	checkDemoDecisions(t, out)
	// The decision log the demo names at the end is there to read, and
	// holds the six decisions.
	m := regexp.MustCompile(`(?m)^6 decisions logged to (/\S+\.jsonl) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the demo names no decision log:\n%s", out)
	}
	defer os.Remove(m[1])
	log, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatalf("the decision log the demo named: %v", err)
	}
	if n := bytes.Count(log, []byte("\n")); n != 6 || !bytes.Contains(log, []byte(`"decidedBy":"protect-secrets"`)) {
		t.Errorf("the decision log holds %d lines:\n%s", n, log)
	}
	if !strings.Contains(stdout.String(), "src/app.ts is patched") {
		t.Errorf("agent text missing from stdout:\n%s", stdout.String())
	}
}

// checkDemoDecisions checks the demo's transcript (its stderr): each of the
// six requests decided as the default policy decides it.
func checkDemoDecisions(t *testing.T, out string) {
	t.Helper()
	want := []struct{ call, verdict string }{
		{`npm test [execute]`, `allowed: "Allow" (allow_once) by plugin team-rules`},
		{`rm -rf ~ [execute]`, `rejected: "Reject" (reject_once) by plugin team-rules`},
		{`Write .env [edit]`, `rejected: "Reject" (reject_once) by plugin protect-secrets`},
		{`Edit src/app.ts [edit]`, `allowed: "Allow" (allow_once) by plugin team-rules`},
		{`Read ~/.ssh/id_rsa [read]`, `rejected: "Reject" (reject_once) by plugin protect-secrets`},
		{`Fetch https://example.com/changelog [fetch]`, `rejected: "Reject" (reject_once) by the builtin fallback`},
	}
	for _, w := range want {
		re := regexp.MustCompile(`(?m)^\? permission ` + regexp.QuoteMeta(w.call) + ` → ` + regexp.QuoteMeta(w.verdict))
		if !re.MatchString(out) {
			t.Errorf("no line %q → %q in:\n%s", w.call, w.verdict, out)
		}
	}
	if !strings.Contains(out, "turn ended: end_turn (6 tool calls, 6 permission decisions)") {
		t.Errorf("demo did not end as expected:\n%s", out)
	}
}
