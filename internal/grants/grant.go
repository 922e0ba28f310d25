package grants

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/fspath"
	"github.com/permhost/permhost/internal/shell"
)

// Scopes of a grant.
const (
	// ScopeSession: requests of the one session it was granted in.
	ScopeSession = "session"
	// ScopeProject: requests of every session whose working directory is
	// the project.
	ScopeProject = "project"
)

// Kinds of a grant.
const (
	// KindCommand allows one exact command.
	KindCommand = "command"
	// KindEdit allows edits under a directory or to a set of files.
	KindEdit = "edit"
)

// Grant is one standing decision of the person.
type Grant struct {
	ID    string `json:"id"`
	Scope string `json:"scope"`
	Kind  string `json:"kind"`
	// Project is the working directory of the session it was granted in,
	// absolute and clean; a request matches only in a session with the
	// same working directory.
	Project string `json:"project"`
	// Session is the session's id (ScopeSession only).
	Session string `json:"session,omitempty"`

	// Cwd is where the command runs (KindCommand), absolute.
	Cwd string `json:"cwd,omitempty"`
	// Commands are the analysed commands, exactly (KindCommand).
	Commands []Command `json:"commands,omitempty"`
	// Source is the command as the agent wrote it (the analysis' source):
	// shown to people, and what a request's command must equal once both
	// are parsed (shell.SyntaxKey). A command grant without one matches
	// nothing.
	Source string `json:"source,omitempty"`

	// Dir allows edits of files under it, not of Dir itself (KindEdit);
	// Resolved is Dir with its symlinks resolved when granted.
	Dir      string `json:"dir,omitempty"`
	Resolved string `json:"resolved,omitempty"`
	// Files allow edits of exactly these files (KindEdit, when Dir is
	// empty); ResolvedFiles are them with symlinks resolved when granted.
	Files         []string `json:"files,omitempty"`
	ResolvedFiles []string `json:"resolvedFiles,omitempty"`

	// Name is the option's name as the person saw it.
	Name string `json:"name"`
	// Agent is the profile of the agent that asked (for people; a grant
	// applies to any agent).
	Agent      string    `json:"agent,omitempty"`
	DecisionID string    `json:"decisionId,omitempty"`
	Created    time.Time `json:"created"`
}

// Command is one analysed simple command, as abi.Command without what
// varies between two identical commands (where it is written in the
// source).
type Command struct {
	Argv        []string         `json:"argv"`
	Wrappers    []string         `json:"wrappers,omitempty"`
	Assignments []abi.Assignment `json:"assignments,omitempty"`
	Redirects   []abi.Redirect   `json:"redirects,omitempty"`
	Context     string           `json:"context,omitempty"`
	Pipeline    int              `json:"pipeline,omitempty"`
	Stage       int              `json:"stage,omitempty"`
}

func commandOf(c abi.Command) Command {
	return Command{Argv: c.Argv, Wrappers: c.Wrappers, Assignments: c.Assignments, Redirects: c.Redirects,
		Context: c.Context, Pipeline: c.Pipeline, Stage: c.Stage}
}

func (c Command) equal(d Command) bool {
	return slices.Equal(c.Argv, d.Argv) && slices.Equal(c.Wrappers, d.Wrappers) &&
		slices.Equal(c.Assignments, d.Assignments) && slices.Equal(c.Redirects, d.Redirects) &&
		c.Context == d.Context && c.Pipeline == d.Pipeline && c.Stage == d.Stage
}

// ErrInvalid is wrapped by the errors of a grant that does not validate.
var ErrInvalid = errors.New("grants: invalid grant")

// Validate checks that g is one a store may hold: every field of its scope
// and kind set, absolute clean paths, nothing of the other kind.
func (g Grant) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrInvalid, g.ID, fmt.Sprintf(format, args...))
	}
	if !validID(g.ID) {
		return bad("id is not g-<hex>")
	}
	if !clean(g.Project) {
		return bad("project %q is not an absolute clean path", g.Project)
	}
	switch g.Scope {
	case ScopeSession:
		if g.Session == "" {
			return bad("scope session without a session")
		}
	case ScopeProject:
		if g.Session != "" {
			return bad("scope project names a session")
		}
	default:
		return bad("unknown scope %q", g.Scope)
	}
	switch g.Kind {
	case KindCommand:
		if !clean(g.Cwd) || len(g.Commands) == 0 || g.Dir != "" || len(g.Files) > 0 {
			return bad("a command grant needs cwd and commands, and no dir or files")
		}
		for _, c := range g.Commands {
			if len(c.Argv) == 0 {
				return bad("a command with no argv")
			}
		}
	case KindEdit:
		if len(g.Commands) > 0 || g.Cwd != "" || (g.Dir == "") == (len(g.Files) == 0) {
			return bad("an edit grant needs a dir or files, not both, and no command")
		}
		if g.Dir != "" && (!clean(g.Dir) || !clean(g.Resolved) || g.Dir == "/") {
			return bad("dir %q (resolved %q) is not an absolute clean path below /", g.Dir, g.Resolved)
		}
		if len(g.Files) > 0 && len(g.ResolvedFiles) != len(g.Files) {
			return bad("files and resolved files differ in number")
		}
		for i, f := range g.Files {
			if !clean(f) || !clean(g.ResolvedFiles[i]) {
				return bad("file %q is not an absolute clean path", f)
			}
		}
	default:
		return bad("unknown kind %q", g.Kind)
	}
	return nil
}

func validID(id string) bool {
	hex, ok := strings.CutPrefix(id, "g-")
	if !ok || len(hex) < 4 || len(hex) > 32 {
		return false
	}
	for _, r := range hex {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

func clean(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// Matches reports whether req falls inside g: the same project (and
// session, for ScopeSession), and
//   - for a command grant, a shell request whose analysis is complete and
//     gives exactly g's commands, none dynamic, run in g's directory, and
//     whose whole script parses to the same syntax tree as g's Source:
//     the same operators, loops, subshells, redirections, here-document
//     bodies and quoting, blanks and comments aside;
//   - for an edit grant, an edit request with no command, no URL and at
//     least one path, each path under g's directory (or one of g's files)
//     both as written (cleaned) and as the OS opens it (abi.Path.Resolved:
//     symlinks and ".." applied as the kernel does; a path without one
//     matches nothing), g's directory itself still resolving where it did
//     when granted.
func (g Grant) Matches(req abi.Request) bool { return g.matches(newQuery(req)) }

// query is a request read once for matching against many grants.
type query struct {
	req      abi.Request
	project  string // the session's cwd, clean; "" when unknown
	cwd      string // the action's cwd, clean
	commands []Command
	shellOK  bool // a complete analysis, nothing dynamic
	// key is the script's shell.SyntaxKey, computed for the first grant
	// whose commands match; keyOK is false when it has none.
	key          string
	keyed, keyOK bool
}

func newQuery(req abi.Request) *query {
	q := &query{req: req}
	if req.Action == nil || req.Session.Cwd == "" {
		return q
	}
	q.project = filepath.Clean(req.Session.Cwd)
	if req.Action.Cwd != "" {
		q.cwd = filepath.Clean(req.Action.Cwd)
	}
	if sh := req.Shell; sh != nil && sh.Parsed && req.Action.Family == abi.FamilyShell && len(req.Action.URLs) == 0 {
		q.shellOK = true
		for _, c := range sh.Commands {
			if c.Dynamic {
				q.shellOK = false
				break
			}
			q.commands = append(q.commands, commandOf(c))
		}
	}
	return q
}

func (g Grant) matches(q *query) bool {
	if q.project == "" || q.project != g.Project {
		return false
	}
	if g.Scope == ScopeSession && q.req.Session.ID != g.Session {
		return false
	}
	if g.Scope != ScopeSession && g.Scope != ScopeProject {
		return false
	}
	switch g.Kind {
	case KindCommand:
		return g.matchesCommand(q)
	case KindEdit:
		return g.matchesEdit(q.req)
	}
	return false
}

func (g Grant) matchesCommand(q *query) bool {
	if !q.shellOK || q.cwd == "" || q.cwd != g.Cwd || len(q.commands) != len(g.Commands) || strings.TrimSpace(g.Source) == "" {
		return false
	}
	for i, c := range q.commands {
		if !c.equal(g.Commands[i]) {
			return false
		}
	}
	// The commands say nothing of how they are joined: `a && b` and
	// `a || b`, `true; x` and `while true; do x; done` give the same ones.
	if !q.keyed {
		q.key, q.keyOK = syntaxKey(q.req.Shell.Source)
		q.keyed = true
	}
	key, ok := syntaxKey(g.Source)
	return q.keyOK && ok && key == q.key
}

func syntaxKey(src string) (string, bool) {
	key, err := shell.SyntaxKey(src)
	return key, err == nil
}

func (g Grant) matchesEdit(req abi.Request) bool {
	a := req.Action
	if a.Family != abi.FamilyEdit || req.Shell != nil || a.Command != "" || len(a.URLs) > 0 || len(req.Paths) == 0 {
		return false
	}
	var dir string
	if g.Dir != "" {
		var ok bool
		if dir, ok = resolve(g.Dir); !ok || dir != g.Resolved {
			return false
		}
	}
	for _, p := range req.Paths {
		if !filepath.IsAbs(p.Path) || !clean(p.Resolved) {
			return false
		}
		lexical, real := filepath.Clean(p.Path), p.Resolved
		if g.Dir != "" {
			if !under(lexical, g.Dir) || !under(real, dir) {
				return false
			}
			continue
		}
		i := slices.Index(g.Files, lexical)
		if i < 0 || g.ResolvedFiles[i] != real {
			return false
		}
	}
	return true
}

// under reports whether p lies strictly below dir (both clean and
// absolute).
func under(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// resolve returns the file the OS opens for p (fspath.Resolve). It fails
// when a component exists but cannot be resolved (permission, a loop):
// such a path matches nothing.
func resolve(p string) (string, bool) {
	r, err := fspath.Resolve(p)
	return r, err == nil
}
