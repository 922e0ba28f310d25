package policy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/grants"
	"github.com/permhost/permhost/internal/stdplugins"
	"github.com/permhost/permhost/policy"
)

// attackTree makes the files and symlinks of the three attacker cases of
// issue #19 under a fresh resolved directory: home/.ssh/config, and a
// project with k -> home/.config, config.txt -> .env and src/l -> ../other.
func attackTree(t *testing.T) (home, proj string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, proj = filepath.Join(dir, "home"), filepath.Join(dir, "proj")
	for _, d := range []string{home + "/.ssh", home + "/.config", proj + "/src", proj + "/other"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{home + "/.ssh/config", proj + "/.env", proj + "/src/main.go"} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{proj + "/k": home + "/.config", proj + "/config.txt": ".env", proj + "/src/l": "../other"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return home, proj
}

// TestRequestPathsResolved: the plugins' request carries each path as
// asked, cleaned (as before ABI 1.2) and as the OS opens it.
func TestRequestPathsResolved(t *testing.T) {
	home, proj := attackTree(t)
	for _, tc := range []struct{ kind, path, clean, resolved string }{
		{"read", "k/../.ssh/config", proj + "/.ssh/config", home + "/.ssh/config"},
		{"read", "config.txt", proj + "/config.txt", proj + "/.env"},
		{"edit", "src/l/../outside.txt", proj + "/src/outside.txt", proj + "/outside.txt"},
		{"edit", "src/new/../main.go", proj + "/src/main.go", proj + "/src/main.go"},
	} {
		pr, err := policy.Shorthand{Kind: tc.kind, Path: tc.path, Cwd: proj}.Request()
		if err != nil {
			t.Fatal(err)
		}
		req, err := policy.BuildRequest(pr, "d1", home)
		if err != nil {
			t.Fatal(err)
		}
		if len(req.Paths) != 1 || req.Paths[0].Path != tc.clean || req.Paths[0].Resolved != tc.resolved {
			t.Errorf("%s: paths %+v, want path %s resolved %s", tc.path, req.Paths, tc.clean, tc.resolved)
		}
	}
}

// TestStandardProtectSecretsSeesResolved: the embedded protect-secrets
// refuses a symlink to .env and a k/../.ssh/config whose k leads to the
// home directory, which read as harmless project files once cleaned.
// The first decision waits for the compile however long it takes: a cold
// compile under -race on a loaded machine can pass the default load_wait.
func TestStandardProtectSecretsSeesResolved(t *testing.T) {
	home, proj := attackTree(t)
	sum, err := stdplugins.SHA256("protect-secrets")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(fmt.Sprintf("load_wait = \"10m\"\n[[plugin]]\npath = \"std:protect-secrets\"\nsha256 = %q\ntimeout = \"10s\"\n", sum)), "permhost.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: t.TempDir(), ReloadEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	for _, tc := range []struct {
		path string
		want abi.Outcome
	}{
		{"config.txt", abi.OutcomeReject},
		{"k/../.ssh/config", abi.OutcomeReject},
		{"src/main.go", abi.OutcomeAbstain},
	} {
		pr, err := policy.Shorthand{Kind: "read", Path: tc.path, Cwd: proj}.Request()
		if err != nil {
			t.Fatal(err)
		}
		req, err := policy.BuildRequest(pr, "d1", home)
		if err != nil {
			t.Fatal(err)
		}
		if v := e.Run(context.Background(), req); v.Outcome != tc.want {
			t.Errorf("read %s: %s by %q (%s), want %s", tc.path, v.Outcome, v.DecidedBy, v.Reason, tc.want)
		}
	}
}

// TestEditGrantJudgesResolved: a stored "edits under src/" decides a
// later edit of src/x.go, and not one of src/l/../outside.txt with
// src/l -> ../other, which the kernel opens at the project's top.
func TestEditGrantJudgesResolved(t *testing.T) {
	home, proj := attackTree(t)
	s := newGrantEngine(t, config.AllowAlwaysPermhost, "")
	request := func(path string) abi.Request {
		pr, err := policy.Shorthand{Kind: "edit", Path: path, Cwd: proj, SessionID: "s1"}.Request()
		if err != nil {
			t.Fatal(err)
		}
		req, err := policy.BuildRequest(pr, "d1", home)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	var granted bool
	for _, o := range grants.Offers(request("src/main.go")) {
		if o.Grant.Scope == grants.ScopeProject && o.Grant.Dir == proj+"/src" {
			if _, err := grants.Open(s.store).Add(o.Grant); err != nil {
				t.Fatal(err)
			}
			granted = true
		}
	}
	if !granted {
		t.Fatal("no project grant for edits under src/ offered")
	}
	for _, tc := range []struct {
		path  string
		asked bool
	}{
		{"src/x.go", false},
		{"src/l/../outside.txt", true},
	} {
		pr, err := policy.Shorthand{Kind: "edit", Path: tc.path, Cwd: proj, SessionID: "s1"}.Request()
		if err != nil {
			t.Fatal(err)
		}
		c := &fakeClient{answer: selects("reject")}
		if _, err := s.engine.Handler().RequestPermission(context.Background(), pr, c); err != nil {
			t.Fatal(err)
		}
		if asked := len(c.asked) > 0; asked != tc.asked {
			t.Errorf("edit %s: the person asked %v, want %v (log %s)", tc.path, asked, tc.asked, strings.TrimSpace(s.log.String()))
		}
	}
}
