package grants_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/fspath"
	"github.com/permhost/permhost/internal/grants"
	"github.com/permhost/permhost/internal/shell"
)

// shellRequest is a shell request of session sid in project cwd running
// script in dir ("" for cwd), analysed as the pipeline does.
func shellRequest(sid, cwd, dir, script string) abi.Request {
	if dir == "" {
		dir = cwd
	}
	sh, paths := shell.AnalyzeScript(script, dir, "/home/dev")
	return abi.Request{
		Session: abi.Session{ID: sid, Cwd: cwd, Agent: &abi.Peer{Name: "gemini-cli", Profile: "gemini-cli"}},
		Action:  &abi.Action{Family: abi.FamilyShell, Command: script, Cwd: dir},
		Shell:   sh, Paths: paths,
		Options: []abi.Option{
			{OptionID: "proceed_always", Kind: abi.OptionAllowAlways, Durable: true},
			{OptionID: "proceed_once", Kind: abi.OptionAllowOnce},
			{OptionID: "cancel", Kind: abi.OptionRejectOnce},
		},
	}
}

// editRequest is an edit request writing files, each path as the request
// carries it: cleaned, as asked, and resolved as the OS opens it now.
func editRequest(sid, cwd string, files ...string) abi.Request {
	req := abi.Request{
		Session: abi.Session{ID: sid, Cwd: cwd},
		Action:  &abi.Action{Family: abi.FamilyEdit, Paths: files},
		Options: []abi.Option{{OptionID: "allow-once", Kind: abi.OptionAllowOnce}, {OptionID: "reject", Kind: abi.OptionRejectOnce}},
	}
	for _, f := range files {
		p := abi.Path{Path: f, Access: abi.AccessWrite, Source: "rawInput"}
		if filepath.IsAbs(f) {
			p.Path = filepath.Clean(f)
			if p.Path != f {
				p.Asked = f
			}
			p.Resolved, _ = fspath.Resolve(f)
		}
		req.Paths = append(req.Paths, p)
	}
	return req
}

// offered returns the grant of the offer with scope.
func offered(t *testing.T, req abi.Request, scope string) grants.Grant {
	t.Helper()
	for _, o := range grants.Offers(req) {
		if o.Grant.Scope == scope {
			g := o.Grant
			g.ID = "g-0001"
			if err := g.Validate(); err != nil {
				t.Fatalf("offered grant does not validate: %v", err)
			}
			return g
		}
	}
	t.Fatalf("no %s grant offered for %+v", scope, req.Action)
	return grants.Grant{}
}

// TestCommandGrantNeverWidens: a grant for `rm -rf build` allows exactly
// that command, in that directory, in that project (and session).
func TestCommandGrantNeverWidens(t *testing.T) {
	const proj, sid = "/home/dev/project", "s1"
	project := offered(t, shellRequest(sid, proj, "", "rm -rf build"), grants.ScopeProject)
	session := offered(t, shellRequest(sid, proj, "", "rm -rf build"), grants.ScopeSession)
	tests := []struct {
		name             string
		req              abi.Request
		project, session bool
	}{
		{"the same command", shellRequest(sid, proj, "", "rm -rf build"), true, true},
		{"other blanks and a comment", shellRequest(sid, proj, "", "  rm  -rf\tbuild # clean"), true, true},
		{"the same argv quoted otherwise", shellRequest(sid, proj, "", `rm -rf "build"`), false, false},
		{"the same command in a later session", shellRequest("s2", proj, "", "rm -rf build"), true, false},
		{"another argument", shellRequest(sid, proj, "", "rm -rf other"), false, false},
		{"one more argument", shellRequest(sid, proj, "", "rm -rf build other"), false, false},
		{"a prefix of it", shellRequest(sid, proj, "", "rm -rf"), false, false},
		{"one more command after it", shellRequest(sid, proj, "", "rm -rf build; curl x|sh"), false, false},
		{"piped", shellRequest(sid, proj, "", "rm -rf build | sh"), false, false},
		{"in the background", shellRequest(sid, proj, "", "rm -rf build &"), false, false},
		{"with a redirect", shellRequest(sid, proj, "", "rm -rf build > /etc/passwd"), false, false},
		{"with an assignment", shellRequest(sid, proj, "", "HOME=/ rm -rf build"), false, false},
		{"wrapped", shellRequest(sid, proj, "", "bash -c 'rm -rf build'"), false, false},
		{"dynamic", shellRequest(sid, proj, "", "rm -rf $BUILD"), false, false},
		{"in a subshell", shellRequest(sid, proj, "", "(rm -rf build)"), false, false},
		{"run in another directory", shellRequest(sid, proj, proj+"/sub", "rm -rf build"), false, false},
		{"in another project", shellRequest(sid, "/home/dev/other", "", "rm -rf build"), false, false},
		{"in a project below it", shellRequest(sid, proj+"/sub", proj+"/sub", "rm -rf build"), false, false},
		{"an edit", editRequest(sid, proj, proj+"/build"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := project.Matches(tt.req); got != tt.project {
				t.Errorf("project grant matches = %v, want %v", got, tt.project)
			}
			if got := session.Matches(tt.req); got != tt.session {
				t.Errorf("session grant matches = %v, want %v", got, tt.session)
			}
		})
	}
	t.Run("an unparsed script", func(t *testing.T) {
		req := shellRequest(sid, proj, "", "rm -rf build")
		req.Shell.Parsed = false
		if project.Matches(req) {
			t.Error("matched a script the analysis did not understand")
		}
	})
	t.Run("a request of another family with the same command", func(t *testing.T) {
		req := shellRequest(sid, proj, "", "rm -rf build")
		req.Action.Family = abi.FamilyOther
		if project.Matches(req) {
			t.Error("matched a request that is not a shell one")
		}
	})
}

// TestCommandGrantStructure: a grant of a script with several commands
// allows that script only, joined by the same operators, in the same
// loops, subshells and redirections, with the same here-document bodies:
// the analysed commands alone are alike for all of these.
func TestCommandGrantStructure(t *testing.T) {
	const proj, sid = "/home/dev/project", "s1"
	tests := []struct {
		granted, asked string
		want           bool
	}{
		{"git diff --quiet && git push --force", "git diff --quiet && git push --force", true},
		{"git diff --quiet && git push --force", "git diff --quiet &&\n    git push --force  # ship", true},
		{"git diff --quiet && git push --force", "git diff --quiet || git push --force", false},
		{"git diff --quiet && git push --force", "git diff --quiet; git push --force", false},
		{"git diff --quiet && git push --force", "git diff --quiet & git push --force", false},
		{"git diff --quiet && git push --force", "! git diff --quiet && git push --force", false},
		{"true; rm -rf build", "true\nrm -rf build", true},
		{"true; rm -rf build", "while true; do rm -rf build; done", false},
		{"true; rm -rf build", "until true; do rm -rf build; done", false},
		{"true; rm -rf build", "if true; then rm -rf build; fi", false},
		{"true; rm -rf build", "true && rm -rf build", false},
		{"true; rm -rf build", "(true; rm -rf build)", false},
		{"true; rm -rf build", "{ true; rm -rf build; }", false},
		{"make | tee log", "make |& tee log", false},
		{"(cd sub && make)", "cd sub && make", false},
		{"make 2>&1", "make 2>&1", true},
		{"make 2>&1", "make >&2", false},
		{"cat <<< hello", "cat <<< 'rm -rf ~'", false},
		{"cat <<EOF\nhello\nEOF", "cat <<EOF\nhello\nEOF", true},
		{"cat <<EOF\nhello\nEOF", "cat <<EOF\nrm -rf ~\nEOF", false},
		{"bash <<'EOF'\nls\nEOF", "bash <<'EOF'\nrm -rf ~\nEOF", false},
		{"cat <<'EOF'\nx\nEOF", "cat <<EOF\nx\nEOF", false},
	}
	for _, tt := range tests {
		t.Run(tt.granted+" / "+tt.asked, func(t *testing.T) {
			g := commandGrant(t, shellRequest(sid, proj, "", tt.granted))
			if got := g.Matches(shellRequest(sid, proj, "", tt.asked)); got != tt.want {
				t.Errorf("a grant of %q matches %q = %v, want %v", tt.granted, tt.asked, got, tt.want)
			}
		})
	}
}

// commandGrant is the project grant offered for req, or, for a script
// permhost does not offer one for (several lines), the grant a file could
// hold for it.
func commandGrant(t *testing.T, req abi.Request) grants.Grant {
	t.Helper()
	if !strings.Contains(req.Shell.Source, "\n") {
		return offered(t, req, grants.ScopeProject)
	}
	g := grants.Grant{ID: "g-0002", Scope: grants.ScopeProject, Kind: grants.KindCommand, Project: req.Session.Cwd,
		Cwd: req.Action.Cwd, Source: req.Shell.Source, Name: "a grant of a script on several lines"}
	for _, c := range req.Shell.Commands {
		g.Commands = append(g.Commands, grants.Command{Argv: c.Argv, Wrappers: c.Wrappers, Assignments: c.Assignments,
			Redirects: c.Redirects, Context: c.Context, Pipeline: c.Pipeline, Stage: c.Stage})
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCommandGrantOfAnOldFile: a command grant stored before grants
// compared the whole script (the same fields) now matches only its own
// script; one with no source matches nothing.
func TestCommandGrantOfAnOldFile(t *testing.T) {
	const proj = "/home/dev/project"
	old := []byte(`{"version":1,"grants":[{"id":"g-00aa","scope":"project","kind":"command","project":"/home/dev/project",` +
		`"cwd":"/home/dev/project","commands":[{"argv":["true"],"pipeline":1,"stage":1},{"argv":["rm","-rf","build"],"pipeline":2,"stage":1}],` +
		`"source":"true; rm -rf build","name":"Allow ` + "`true; rm -rf build`" + ` (exact command) in this project","created":"2026-01-02T03:04:05Z"}]}`)
	gs, err := grants.Decode(old)
	if err != nil || len(gs) != 1 {
		t.Fatalf("an old file: %v %v", gs, err)
	}
	g := gs[0]
	if !g.Matches(shellRequest("s1", proj, "", "true; rm -rf build")) {
		t.Error("the old grant does not match its own command")
	}
	if g.Matches(shellRequest("s1", proj, "", "while true; do rm -rf build; done")) {
		t.Error("the old grant matches a loop")
	}
	g.Source = ""
	if g.Matches(shellRequest("s1", proj, "", "true; rm -rf build")) {
		t.Error("a grant with no source matches")
	}
}

// TestEditGrantNeverWidens: a grant for edits under src/ allows edits of
// files below src/ only, as written and as the file system resolves them.
func TestEditGrantNeverWidens(t *testing.T) {
	proj := t.TempDir()
	proj, _ = filepath.EvalSymlinks(proj)
	for _, d := range []string{"src/pkg", "secrets", "other"} {
		if err := os.MkdirAll(filepath.Join(proj, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proj, ".env"), []byte("KEY=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.env", filepath.Join(proj, "src", "env-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secrets", filepath.Join(proj, "src", "secrets-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../nowhere/new", filepath.Join(proj, "src", "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other", filepath.Join(proj, "src", "l")); err != nil {
		t.Fatal(err)
	}
	g := offered(t, editRequest("s1", proj, proj+"/src/main.go", proj+"/src/pkg/a.go"), grants.ScopeSession)
	if g.Dir != proj+"/src" || !strings.Contains(g.Name, "edits under `src/`") {
		t.Fatalf("grant = dir %q name %q, want edits under src/", g.Dir, g.Name)
	}
	tests := []struct {
		name  string
		files []string
		want  bool
	}{
		{"a file under it", []string{proj + "/src/main.go"}, true},
		{"a new file deeper under it", []string{proj + "/src/pkg/new/b.go"}, true},
		{"several under it", []string{proj + "/src/a.go", proj + "/src/pkg/b.go"}, true},
		{"one of several outside", []string{proj + "/src/a.go", proj + "/README.md"}, false},
		{"dot-dot out of it", []string{proj + "/src/../.env"}, false},
		// Cleaned, src/l/../outside.txt reads src/outside.txt; the kernel
		// opens other/../outside.txt, at the project's top.
		{"dot-dot after a symlink", []string{proj + "/src/l/../outside.txt"}, false},
		{"dot-dot after a symlink, back under it", []string{proj + "/src/l/../src/x.go"}, true},
		{"a symlink to a file outside", []string{proj + "/src/env-link"}, false},
		{"through a symlinked directory", []string{proj + "/src/secrets-link/key.pem"}, false},
		{"a dangling symlink", []string{proj + "/src/dangling"}, false},
		{"the directory itself", []string{proj + "/src"}, false},
		{"a sibling with the same prefix", []string{proj + "/src2/x.go"}, false},
		{"a relative path", []string{"src/main.go"}, false},
		{"no path", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := g.Matches(editRequest("s1", proj, tt.files...)); got != tt.want {
				t.Errorf("Matches(%v) = %v, want %v", tt.files, got, tt.want)
			}
		})
	}
	t.Run("no directory offered for a file that opens outside it", func(t *testing.T) {
		g := offered(t, editRequest("s1", proj, proj+"/src/main.go", proj+"/src/l/../outside.txt"), grants.ScopeSession)
		if g.Dir != "" || !slices.Equal(g.ResolvedFiles, []string{proj + "/src/main.go", proj + "/outside.txt"}) {
			t.Errorf("offered %q (dir %q, files %q)", g.Name, g.Dir, g.ResolvedFiles)
		}
	})
	t.Run("another session", func(t *testing.T) {
		if g.Matches(editRequest("s2", proj, proj+"/src/main.go")) {
			t.Error("a session grant matched another session")
		}
	})
	t.Run("an edit that also runs a command", func(t *testing.T) {
		req := editRequest("s1", proj, proj+"/src/main.go")
		req.Action.Command = "sed -i s/a/b/ src/main.go"
		if g.Matches(req) {
			t.Error("matched an edit with a command")
		}
	})
	t.Run("the directory replaced by a symlink", func(t *testing.T) {
		moved := filepath.Join(proj, "src.old")
		if err := os.Rename(filepath.Join(proj, "src"), moved); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(moved, filepath.Join(proj, "src"))
		if err := os.Symlink("secrets", filepath.Join(proj, "src")); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(filepath.Join(proj, "src"))
		if g.Matches(editRequest("s1", proj, proj+"/src/main.go")) {
			t.Error("matched once src/ pointed elsewhere")
		}
	})
}

// TestFileGrant: edits of a file at the project's top are offered as
// edits to that file, and a symlink put in its place later does not match.
func TestFileGrant(t *testing.T) {
	proj := t.TempDir()
	proj, _ = filepath.EvalSymlinks(proj)
	g := offered(t, editRequest("s1", proj, proj+"/hello.txt"), grants.ScopeProject)
	if g.Dir != "" || len(g.Files) != 1 || !strings.Contains(g.Name, "edits to `hello.txt` in this project") {
		t.Fatalf("grant = %+v", g)
	}
	if !g.Matches(editRequest("s9", proj, proj+"/hello.txt")) {
		t.Error("the same file in another session of the project did not match")
	}
	if g.Matches(editRequest("s1", proj, proj+"/hello2.txt")) || g.Matches(editRequest("s1", proj, proj+"/hello.txt", proj+"/b.txt")) {
		t.Error("another file matched")
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(proj, "hello.txt")); err != nil {
		t.Fatal(err)
	}
	if g.Matches(editRequest("s1", proj, proj+"/hello.txt")) {
		t.Error("matched once hello.txt became a symlink elsewhere")
	}
}

func TestOffers(t *testing.T) {
	const proj = "/home/dev/project"
	tests := []struct {
		name  string
		req   abi.Request
		names []string
	}{
		{"a command", shellRequest("s1", proj, "", "rm -rf build"), []string{
			"Allow `rm -rf build` (exact command) for this session", "Allow `rm -rf build` (exact command) in this project"}},
		{"a command run elsewhere", shellRequest("s1", proj, proj+"/sub", "make"), []string{
			"Allow `make` (exact command, run in `sub`) for this session", "Allow `make` (exact command, run in `sub`) in this project"}},
		{"no session id: project only", shellRequest("", proj, "", "ls"), []string{"Allow `ls` (exact command) in this project"}},
		{"a dynamic command: none", shellRequest("s1", proj, "", "rm -rf $X"), nil},
		{"a command with a backquote: none", shellRequest("s1", proj, "", "echo `date`"), nil},
		{"a two-line script: none", shellRequest("s1", proj, "", "ls\nrm x"), nil},
		{"a bidi override in the command: none", shellRequest("s1", proj, "", "echo \u202etxt.exe"), nil},
		{"a zero-width space in the command: none", shellRequest("s1", proj, "", "rm a\u200bb"), nil},
		{"a bidi override in the directory: none", shellRequest("s1", proj, proj+"/s\u202eub", "make"), nil},
		{"a bidi override in a file: none", editRequest("s1", proj, "/tmp/a\u202etxt.exe"), nil},
		{"a long command: none", shellRequest("s1", proj, "", "echo "+strings.Repeat("a", 300)), nil},
		{"files outside the project", editRequest("s1", proj, "/tmp/a.txt"), []string{
			"Allow edits to `/tmp/a.txt` for this session", "Allow edits to `/tmp/a.txt` in this project"}},
		{"too many files at the top", editRequest("s1", proj, proj+"/a", proj+"/b", proj+"/c", proj+"/d"), nil},
		{"an unknown family", abi.Request{Session: abi.Session{ID: "s1", Cwd: proj}, Action: &abi.Action{Family: abi.FamilyFetch, URLs: []string{"https://x"}}}, nil},
		{"no cwd", shellRequest("s1", "", "/x", "ls"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			for _, o := range grants.Offers(tt.req) {
				names = append(names, o.Option.Name)
				if o.Option.Kind != abi.OptionAllowAlways || !o.Option.Durable || o.Option.Grants == nil ||
					!strings.HasPrefix(o.Option.OptionID, grants.IDPrefix) || o.Grant.Name != o.Option.Name {
					t.Errorf("offer %+v", o)
				}
			}
			if strings.Join(names, "|") != strings.Join(tt.names, "|") {
				t.Errorf("offered %q, want %q", names, tt.names)
			}
		})
	}
}

// TestOfferIDsNeverCollide: an agent that offers permhost's own ids gets
// them back unchanged; permhost's are renamed.
func TestOfferIDsNeverCollide(t *testing.T) {
	req := shellRequest("s1", "/p", "", "ls")
	req.Options = append(req.Options,
		abi.Option{OptionID: grants.IDPrefix + "session", Kind: abi.OptionAllowOnce},
		abi.Option{OptionID: grants.IDPrefix + "project", Kind: abi.OptionAllowOnce},
		abi.Option{OptionID: grants.IDPrefix + "project-2", Kind: abi.OptionAllowOnce})
	seen := map[string]bool{}
	for _, o := range req.Options {
		seen[o.OptionID] = true
	}
	offers := grants.Offers(req)
	if len(offers) != 2 {
		t.Fatalf("offers = %+v", offers)
	}
	for _, o := range offers {
		if seen[o.Option.OptionID] {
			t.Errorf("offer id %q collides", o.Option.OptionID)
		}
		seen[o.Option.OptionID] = true
	}
}
