package grants

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/safetext"
)

// Offer is one option permhost adds to a request: choosing it records
// Grant (ID and Created are set when it is added to a store).
type Offer struct {
	Option abi.Option
	Grant  Grant
}

// IDPrefix starts the ids of permhost's own options; [Offers] makes each
// id unique among the request's options.
const IDPrefix = "permhost-grant-"

// Limits on what is offered: a grant must be readable in an option's name.
const (
	maxSource = 200 // bytes of a command shown in full
	maxFiles  = 3   // files named one by one
)

// Offers returns the grants permhost can offer for req, narrowest scope
// first: for a shell request whose analysis is complete (no dynamic word,
// a command short enough to show in full), the exact command; for an edit
// request naming only files, edits under their deepest common directory
// when it lies inside the project (and resolves inside it), else edits to
// those files. Each scope (this session, this project) is one option, of
// kind allow_always, its name stating the scope exactly ("Allow `rm -rf
// build` (exact command) in this project"). Nothing is offered for other
// requests, or when the session's working directory is unknown.
func Offers(req abi.Request) []Offer {
	a := req.Action
	project := req.Session.Cwd
	if a == nil || !filepath.IsAbs(project) {
		return nil
	}
	project = filepath.Clean(project)
	var base Grant
	var what string
	switch {
	case a.Family == abi.FamilyShell:
		g, w, ok := commandGrant(req, project)
		if !ok {
			return nil
		}
		base, what = g, w
	case a.Family == abi.FamilyEdit:
		g, w, ok := editGrant(req, project)
		if !ok {
			return nil
		}
		base, what = g, w
	default:
		return nil
	}
	base.Project = project
	if req.Session.Agent != nil {
		base.Agent = req.Session.Agent.Profile
	}
	base.DecisionID = req.DecisionID
	taken := func(id string) bool {
		return slices.ContainsFunc(req.Options, func(o abi.Option) bool { return o.OptionID == id })
	}
	var out []Offer
	for _, scope := range []struct{ scope, id, words string }{
		{ScopeSession, "session", "for this session"},
		{ScopeProject, "project", "in this project"},
	} {
		if scope.scope == ScopeSession && req.Session.ID == "" {
			continue
		}
		g := base
		g.Scope = scope.scope
		if scope.scope == ScopeSession {
			g.Session = req.Session.ID
		}
		g.Name = "Allow " + what + " " + scope.words
		id := IDPrefix + scope.id
		for n := 2; taken(id) || slices.ContainsFunc(out, func(o Offer) bool { return o.Option.OptionID == id }); n++ {
			id = IDPrefix + scope.id + "-" + strconv.Itoa(n)
		}
		out = append(out, Offer{
			Option: abi.Option{OptionID: id, Name: g.Name, Kind: abi.OptionAllowAlways, Durable: true,
				Grants: &abi.Grant{Scope: grantScope(scope.scope), Rule: rule(g)}},
			Grant: g,
		})
	}
	return out
}

// grantScope is the abi scope of a permhost grant: a session grant lasts
// the session; a project grant, kept by permhost for the project, is the
// ABI's workspace.
func grantScope(scope string) string {
	if scope == ScopeSession {
		return abi.GrantScopeSession
	}
	return abi.GrantScopeWorkspace
}

// rule says what g allows in the "what: value" notation of abi.Grant.
func rule(g Grant) string {
	switch {
	case g.Kind == KindCommand:
		return "permhost exact command: " + g.Source
	case g.Dir != "":
		return "permhost edits under: " + g.Dir + "/"
	}
	return "permhost edits to: " + strings.Join(g.Files, ", ")
}

func commandGrant(req abi.Request, project string) (Grant, string, bool) {
	sh, a := req.Shell, req.Action
	if sh == nil || !sh.Parsed || len(sh.Commands) == 0 || len(a.URLs) > 0 || !filepath.IsAbs(a.Cwd) {
		return Grant{}, "", false
	}
	src := strings.TrimSpace(sh.Source)
	if src == "" || len(src) > maxSource || !showable(src) {
		return Grant{}, "", false
	}
	if _, ok := syntaxKey(src); !ok {
		return Grant{}, "", false // it would match nothing
	}
	g := Grant{Kind: KindCommand, Cwd: filepath.Clean(a.Cwd), Source: src}
	for _, c := range sh.Commands {
		if c.Dynamic || len(c.Argv) == 0 {
			return Grant{}, "", false
		}
		g.Commands = append(g.Commands, commandOf(c))
	}
	what := "`" + src + "` (exact command)"
	if g.Cwd != project {
		if !showable(shown(g.Cwd, project)) {
			return Grant{}, "", false
		}
		what = "`" + src + "` (exact command, run in `" + shown(g.Cwd, project) + "`)"
	}
	return g, what, true
}

func editGrant(req abi.Request, project string) (Grant, string, bool) {
	a := req.Action
	if req.Shell != nil || a.Command != "" || len(a.URLs) > 0 || len(req.Paths) == 0 {
		return Grant{}, "", false
	}
	// files as written (cleaned) and as the OS opens them (resolved).
	var files, reals []string
	for _, p := range req.Paths {
		if !filepath.IsAbs(p.Path) || !showable(p.Path) || !clean(p.Resolved) {
			return Grant{}, "", false
		}
		f := filepath.Clean(p.Path)
		if i := slices.Index(files, f); i >= 0 {
			if reals[i] != p.Resolved { // one text, two files: say neither
				return Grant{}, "", false
			}
			continue
		}
		files, reals = append(files, f), append(reals, p.Resolved)
	}
	realProject, ok := resolve(project)
	if !ok {
		return Grant{}, "", false
	}
	dir := filepath.Dir(files[0])
	for _, f := range files[1:] {
		for !under(f, dir) && dir != "/" {
			dir = filepath.Dir(dir)
		}
	}
	// The directory is offered only when every file opens under it: a
	// "src/l/../x" with l -> ../other is not an edit under src/.
	if under(dir, project) {
		if real, ok := resolve(dir); ok && (real == realProject || under(real, realProject)) &&
			!slices.ContainsFunc(reals, func(r string) bool { return !under(r, real) }) {
			return Grant{Kind: KindEdit, Dir: dir, Resolved: real}, "edits under `" + shown(dir, project) + "/`", true
		}
	}
	if len(files) > maxFiles {
		return Grant{}, "", false
	}
	g := Grant{Kind: KindEdit, Files: files}
	var names []string
	for _, f := range files {
		names = append(names, "`"+shown(f, project)+"`")
	}
	g.ResolvedFiles = reals
	return g, "edits to " + strings.Join(names, ", "), true
}

// shown is p relative to the project when inside it, else absolute.
func shown(p, project string) string {
	if under(p, project) {
		if r, err := filepath.Rel(project, p); err == nil {
			return r
		}
	}
	return p
}

// showable reports whether s can stand in an option's name between
// backquotes as it is: one line, no backquote, nothing safetext would
// show escaped (a control character, a bidi override that would show the
// command reversed, a zero-width character, invalid UTF-8).
func showable(s string) bool {
	return !strings.ContainsAny(s, "`\uFFFD") && safetext.Terminal(s) == s
}

// String describes the grant in one line, for people.
func (g Grant) String() string {
	where := "project " + g.Project
	if g.Scope == ScopeSession {
		where = fmt.Sprintf("session %s in %s", g.Session, g.Project)
	}
	return fmt.Sprintf("%s: %s (%s)", g.ID, g.Name, where)
}
