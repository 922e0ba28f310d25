package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/grants"
	"github.com/permhost/permhost/internal/shell"
)

// addTestGrant stores the grant permhost offers for script in project.
func addTestGrant(t *testing.T, scope, project, script string) grants.Grant {
	t.Helper()
	sh, paths := shell.AnalyzeScript(script, project, "/home/dev")
	req := abi.Request{Session: abi.Session{ID: "s1", Cwd: project}, Shell: sh, Paths: paths,
		Action: &abi.Action{Family: abi.FamilyShell, Command: script, Cwd: project}}
	path, err := grants.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range grants.Offers(req) {
		if o.Grant.Scope == scope {
			g, err := grants.Open(path).Add(o.Grant)
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
	}
	t.Fatalf("no %s grant for %q", scope, script)
	return grants.Grant{}
}

func TestGrantsCommand(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	code, out, _ := runMain(t, "grants", "list")
	if code != exitOK || !strings.Contains(out, "no grants") {
		t.Fatalf("empty list: %d %q", code, out)
	}
	a := addTestGrant(t, grants.ScopeProject, "/home/dev/project", "rm -rf build")
	b := addTestGrant(t, grants.ScopeSession, "/home/dev/other", "make test")

	code, out, errOut := runMain(t, "grants", "list")
	if code != exitOK || !strings.Contains(out, a.ID) || !strings.Contains(out, b.ID) ||
		!strings.Contains(out, "Allow `rm -rf build` (exact command) in this project") || !strings.Contains(out, "session s1") {
		t.Fatalf("list: %d %q %q", code, out, errOut)
	}
	code, out, _ = runMain(t, "grants", "list", "--json", "--project", "/home/dev/other")
	var listed []grants.Grant
	if err := json.Unmarshal([]byte(out), &listed); code != exitOK || err != nil || len(listed) != 1 || listed[0].ID != b.ID {
		t.Fatalf("list --project: %d %q %v", code, out, err)
	}

	code, out, _ = runMain(t, "grants", "revoke", a.ID)
	if code != exitOK || !strings.Contains(out, "revoked "+a.ID) {
		t.Fatalf("revoke: %d %q", code, out)
	}
	code, _, errOut = runMain(t, "grants", "revoke", a.ID)
	if code != exitFail || !strings.Contains(errOut, "no grant "+a.ID) {
		t.Fatalf("revoke again: %d %q", code, errOut)
	}
	code, out, _ = runMain(t, "grants", "list")
	if code != exitOK || strings.Contains(out, a.ID) || !strings.Contains(out, b.ID) {
		t.Fatalf("after revoke: %d %q", code, out)
	}

	addTestGrant(t, grants.ScopeProject, "/home/dev/project", "ls")
	code, out, _ = runMain(t, "grants", "clear", "--project", "/home/dev/other")
	if code != exitOK || !strings.Contains(out, "1 grant removed") {
		t.Fatalf("clear --project: %d %q", code, out)
	}
	code, out, _ = runMain(t, "grants", "clear")
	if code != exitOK || !strings.Contains(out, "1 grant removed") {
		t.Fatalf("clear: %d %q", code, out)
	}
	st, err := os.Stat(filepath.Join(state, "permhost", grants.FileName))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("grants file: %v %v", st, err)
	}
}

func TestGrantsCommandMistakes(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, args := range [][]string{
		{"grants"}, {"grants", "remove"}, {"grants", "revoke"}, {"grants", "list", "extra"}, {"grants", "clear", "--bogus"},
	} {
		if code, _, errOut := runMain(t, args...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
	// A file that cannot be trusted is reported, not used.
	path, _ := grants.DefaultPath()
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(`{"version":1,"grants":[],"everything":true}`), 0o600)
	if code, _, errOut := runMain(t, "grants", "list"); code != exitFail || !strings.Contains(errOut, "not trusted") {
		t.Errorf("untrusted file: exit %d, %q", code, errOut)
	}
}
