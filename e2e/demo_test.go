package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs `permhost demo` as the README's first command does and
// checks each decision a user sees.
func TestDemo(t *testing.T) {
	for _, p := range []string{"protect-secrets", "plan-mode", "team-rules", "explainer"} {
		examplePlugin(t, p)
	}
	cmd := exec.Command(permhostBin, "demo", "--plugins", filepath.Dir(examplePlugin(t, "plan-mode")))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("permhost demo: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out := stderr.String()
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
	if !strings.Contains(out, "turn ended: end_turn") || !strings.Contains(out, "6 decisions logged") {
		t.Errorf("demo did not end as expected:\n%s", out)
	}
	if !strings.Contains(stdout.String(), "src/app.ts is patched") {
		t.Errorf("agent text missing from stdout:\n%s", stdout.String())
	}
}
