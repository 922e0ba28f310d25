package shell

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/permhost/permhost/abi"
)

// maxDepth bounds the nesting of re-parsed scripts (bash -c inside eval
// inside bash -c...). Each level is shorter than the one holding it, so
// this only guards the stack; reaching it makes the result unparsed.
const maxDepth = 64

// Contexts of a command.
const (
	ctxPipeline     = "pipeline"
	ctxSubstitution = "substitution"
	ctxProcSubst    = "process-substitution"
	ctxSubshell     = "subshell"
	ctxFunction     = "function"
	ctxBackground   = "background"
	ctxWrapped      = "wrapped"
)

// frame is what the commands of one part of the tree inherit.
type frame struct {
	ctx      string
	wrappers []string
	assigns  []abi.Assignment
	dynamic  bool
	depth    int
	// pipe is the pipeline the commands here belong to, and stage their
	// stage in it; pipe is nil outside every pipeline.
	pipe  *pipeline
	stage int
	// base is the offset of the script being walked within the analysed
	// source, or -1 when its text does not appear there verbatim (a script
	// built from an argv or from several words); span is the source of the
	// statement being walked, nil when unknown.
	base int
	span *abi.Range
}

// pipeline numbers one pipeline and tracks its highest stage so far, so
// that a stage after a nested pipeline comes after all of its stages.
type pipeline struct {
	id, max int
}

// piped returns the frame of the stage of a pipeline the node at f starts
// or continues, and the pipeline.
func (a *analyzer) piped(f frame) frame {
	if f.pipe == nil {
		a.pipes++
		f.pipe, f.stage = &pipeline{id: a.pipes}, 1
	}
	if f.stage > f.pipe.max {
		f.pipe.max = f.stage
	}
	return f
}

// nextStage returns the frame of the stage after everything walked so far
// in f's pipeline.
func (f frame) nextStage() frame {
	f.stage = f.pipe.max + 1
	f.pipe.max = f.stage
	return f
}

func (f frame) in(ctx string) frame {
	f.ctx = ctx
	return f
}

// wrapped returns the frame of a command run by wrapper.
func (f frame) wrapped(wrapper string) frame {
	f.wrappers = append(f.wrappers[:len(f.wrappers):len(f.wrappers)], wrapper)
	if f.ctx == "" {
		f.ctx = ctxWrapped
	}
	return f
}

// assigning returns the frame of a command run with assigns added to its
// environment.
func (f frame) assigning(assigns []abi.Assignment) frame {
	f.assigns = append(f.assigns[:len(f.assigns):len(f.assigns)], assigns...)
	return f
}

// word is one resolved argument.
type word struct {
	text string
	dyn  bool
	// pos is 1 + the offset of text in the analysed source when text is
	// written there verbatim (an unquoted literal without escapes, or the
	// inside of single quotes); 0 when not.
	pos int
}

// offset returns where w's text starts in the analysed source, or -1.
func (w word) offset() int { return w.pos - 1 }

type analyzer struct {
	cwd, home string
	// dir is the working directory at this point of the script; dirLost
	// is set once a cd went somewhere the analysis cannot know.
	dir      string
	dirKnown bool
	dirLost  bool
	// cond counts enclosing conditional or deferred code (if, loops, case,
	// functions, the right of && and ||), where a cd may or may not run.
	cond int
	// vars are the variables set so far in this shell (NAME=value alone,
	// export, declare...): PATH=/evil; git runs /evil/git, so later
	// commands carry them among their assignments.
	vars    []abi.Assignment
	cmds    []abi.Command
	paths   []abi.Path
	seen    map[string]bool // access and path of each of paths
	reasons []string
	cfg     *expand.Config
	printer *syntax.Printer
	pipes   int // pipelines numbered so far
}

func newAnalyzer(cwd, home string) *analyzer {
	a := &analyzer{cwd: cwd, home: home, printer: syntax.NewPrinter(), cmds: []abi.Command{}}
	if path.IsAbs(cwd) {
		a.cwd = path.Clean(cwd)
		a.dir, a.dirKnown = a.cwd, true
	} else {
		a.cwd = ""
	}
	env := expand.ListEnviron()
	if path.IsAbs(home) {
		a.home = path.Clean(home)
		env = expand.ListEnviron("HOME=" + a.home)
	} else {
		a.home = ""
	}
	a.cfg = &expand.Config{
		Env: env,
		// Never called for words found static, but expand panics on a
		// process substitution without it.
		ProcSubst: func(*syntax.ProcSubst) (string, error) {
			return "", fmt.Errorf("process substitution")
		},
	}
	return a
}

func (a *analyzer) fail(reason string) {
	for _, r := range a.reasons {
		if r == reason {
			return
		}
	}
	a.reasons = append(a.reasons, reason)
}

func (a *analyzer) result(src string) (*abi.Shell, []abi.Path) {
	sh := &abi.Shell{Source: src, Parsed: len(a.reasons) == 0, Commands: a.cmds}
	if !sh.Parsed {
		sh.Reason = strings.Join(a.reasons, "; ")
	}
	return sh, a.paths
}

// script parses src and walks it.
func (a *analyzer) script(src string, f frame, lang syntax.LangVariant) {
	if f.depth > maxDepth {
		a.fail("scripts nested more than 64 deep")
		return
	}
	if strings.ContainsRune(src, '\r') {
		// bash treats CR as part of a word, other tools as a blank.
		a.fail("carriage return in script: parsers disagree on it")
	}
	if strings.ContainsRune(src, 0) {
		a.fail("NUL byte in script")
	}
	if !utf8.ValidString(src) {
		a.fail("script is not valid UTF-8")
	}
	file, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
	if err != nil {
		a.fail("parse error: " + err.Error())
	}
	if file != nil {
		a.stmts(file.Stmts, f)
	}
}

func (a *analyzer) stmts(list []*syntax.Stmt, f frame) {
	for _, s := range list {
		a.stmt(s, f)
	}
}

// subshell runs walk in a child process: a cd inside does not leak out.
func (a *analyzer) subshell(walk func()) {
	dir, known, lost, cond, vars := a.dir, a.dirKnown, a.dirLost, a.cond, a.vars
	walk()
	a.dir, a.dirKnown, a.dirLost, a.cond, a.vars = dir, known, lost, cond, vars
}

// conditional walks code that may or may not run.
func (a *analyzer) conditional(walk func()) {
	a.cond++
	walk()
	a.cond--
}

func (a *analyzer) stmt(s *syntax.Stmt, f frame) {
	if s.Background || s.Coprocess || s.Disown {
		a.subshell(func() { a.stmtBody(s, f.in(ctxBackground)) })
		return
	}
	a.stmtBody(s, f)
}

func (a *analyzer) stmtBody(s *syntax.Stmt, f frame) {
	if f.base >= 0 {
		f.span = a.stmtSpan(s, f.base)
	}
	start := len(a.cmds)
	redirs, stdin := a.redirects(s.Redirs, f)
	switch cmd := s.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		a.call(cmd, redirs, stdin, f)
		return
	default:
		a.compound(cmd, f)
	}
	for i := start; i < len(a.cmds); i++ {
		a.cmds[i].Redirects = append(a.cmds[i].Redirects, redirs...)
	}
}

// stmtSpan is the source of statement s, redirects included, without the
// ; or & that ends it.
func (a *analyzer) stmtSpan(s *syntax.Stmt, base int) *abi.Range {
	end := s.Pos()
	if s.Cmd != nil {
		end = s.Cmd.End()
	}
	for _, r := range s.Redirs {
		if r.End().After(end) {
			end = r.End()
		}
	}
	return &abi.Range{Start: base + int(s.Pos().Offset()), End: base + int(end.Offset())}
}

func (a *analyzer) compound(cmd syntax.Command, f frame) {
	switch x := cmd.(type) {
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.Pipe, syntax.PipeAll:
			g := a.piped(f.in(ctxPipeline))
			a.subshell(func() { a.stmt(x.X, g) })
			h := g.nextStage()
			a.subshell(func() { a.stmt(x.Y, h) })
		default:
			a.stmt(x.X, f)
			a.conditional(func() { a.stmt(x.Y, f) })
		}
	case *syntax.Subshell:
		a.subshell(func() { a.stmts(x.Stmts, f.in(ctxSubshell)) })
	case *syntax.Block:
		a.stmts(x.Stmts, f)
	case *syntax.IfClause:
		a.conditional(func() {
			for c := x; c != nil; c = c.Else {
				a.stmts(c.Cond, f)
				a.stmts(c.Then, f)
			}
		})
	case *syntax.WhileClause:
		a.conditional(func() {
			a.stmts(x.Cond, f)
			a.stmts(x.Do, f)
		})
	case *syntax.ForClause:
		switch l := x.Loop.(type) {
		case *syntax.WordIter:
			for _, w := range l.Items {
				a.word(w, f)
			}
		default:
			a.substitutions(l, f)
		}
		a.conditional(func() { a.stmts(x.Do, f) })
	case *syntax.CaseClause:
		a.word(x.Word, f)
		a.conditional(func() {
			for _, it := range x.Items {
				for _, p := range it.Patterns {
					a.substitutions(p, f)
				}
				a.stmts(it.Stmts, f)
			}
		})
	case *syntax.FuncDecl:
		a.conditional(func() { a.stmt(x.Body, f.in(ctxFunction)) })
	case *syntax.ArithmCmd:
		a.substitutions(x, f)
	case *syntax.TestClause:
		a.substitutions(x, f)
	case *syntax.LetClause:
		a.substitutions(x, f)
		argv := []string{"let"}
		for _, e := range x.Exprs {
			argv = append(argv, a.print(e))
		}
		a.emit(abi.Command{Argv: argv, Dynamic: true}, f)
	case *syntax.DeclClause:
		a.decl(x, f)
	case *syntax.TimeClause:
		if x.Stmt != nil {
			a.stmt(x.Stmt, f.wrapped("time"))
		}
	case *syntax.CoprocClause:
		a.subshell(func() { a.stmt(x.Stmt, f.in(ctxBackground)) })
	default:
		a.fail(fmt.Sprintf("unsupported construct %T", cmd))
	}
}

// decl records declare, local, export, readonly, typeset and nameref as a
// command: export changes the environment of every later command.
func (a *analyzer) decl(d *syntax.DeclClause, f frame) {
	cmd := abi.Command{Argv: []string{d.Variant.Value}}
	for _, as := range d.Args {
		if as.Naked {
			if as.Name != nil {
				cmd.Argv = append(cmd.Argv, as.Name.Value)
			} else if as.Value != nil {
				w := a.word(as.Value, f)
				cmd.Argv = append(cmd.Argv, w.text)
				cmd.Dynamic = cmd.Dynamic || w.dyn
			}
			continue
		}
		asg, dyn := a.assign(as, f)
		cmd.Assignments = append(cmd.Assignments, asg)
		cmd.Argv = append(cmd.Argv, a.print(as))
		cmd.Dynamic = cmd.Dynamic || dyn
	}
	own := cmd.Assignments
	a.emit(cmd, f)
	a.vars = append(a.vars[:len(a.vars):len(a.vars)], own...)
}

// assign resolves NAME=value; a value that depends on run-time values is
// kept as written.
func (a *analyzer) assign(as *syntax.Assign, f frame) (abi.Assignment, bool) {
	asg := abi.Assignment{}
	if as.Name != nil {
		asg.Name = as.Name.Value
	}
	if as.Index != nil {
		a.substitutions(as.Index, f)
		asg.Name += "[" + a.print(as.Index) + "]"
	}
	switch {
	case as.Array != nil:
		a.substitutions(as.Array, f)
		asg.Value = a.print(as.Array)
		return asg, true
	case as.Value != nil:
		w := a.word(as.Value, f)
		asg.Value = w.text
		return asg, w.dyn
	}
	return asg, false
}

func (a *analyzer) call(ce *syntax.CallExpr, redirs []abi.Redirect, stdin *word, f frame) {
	var assigns []abi.Assignment
	dyn := false
	for _, as := range ce.Assigns {
		asg, d := a.assign(as, f)
		assigns = append(assigns, asg)
		dyn = dyn || d
	}
	if len(ce.Args) == 0 {
		// NAME=value alone sets a shell variable for the rest of the
		// script; it is reported with the assignments as its argv.
		cmd := abi.Command{Assignments: assigns, Redirects: redirs, Dynamic: dyn}
		for _, as := range ce.Assigns {
			cmd.Argv = append(cmd.Argv, a.print(as))
		}
		a.emit(cmd, f)
		a.vars = append(a.vars[:len(a.vars):len(a.vars)], assigns...)
		return
	}
	words := make([]word, 0, len(ce.Args))
	for _, w := range ce.Args {
		words = append(words, a.word(w, f))
	}
	a.command(words, redirs, stdin, f.assigning(assigns))
}

// emit records one command with what its frame gives it.
func (a *analyzer) emit(cmd abi.Command, f frame) {
	if len(f.wrappers) > 0 {
		cmd.Wrappers = append([]string(nil), f.wrappers...)
	}
	if len(a.vars)+len(f.assigns) > 0 {
		inherited := append(append([]abi.Assignment(nil), a.vars...), f.assigns...)
		cmd.Assignments = append(inherited, cmd.Assignments...)
	}
	cmd.Context = f.ctx
	cmd.Dynamic = cmd.Dynamic || f.dynamic
	if f.pipe != nil {
		cmd.Pipeline, cmd.Stage = f.pipe.id, f.stage
	} else {
		a.pipes++
		cmd.Pipeline, cmd.Stage = a.pipes, 1
	}
	if f.span != nil {
		r := *f.span
		cmd.Source = &r
	}
	a.cmds = append(a.cmds, cmd)
}

// redirects resolves a statement's redirections, records the files they
// touch, and returns the here-document or here-string feeding stdin.
func (a *analyzer) redirects(list []*syntax.Redirect, f frame) ([]abi.Redirect, *word) {
	var out []abi.Redirect
	var stdin *word
	for _, r := range list {
		op := r.Op.String()
		if r.N != nil {
			op = r.N.Value + op
		}
		rd := abi.Redirect{Op: op}
		var target word
		if r.Word != nil {
			target = a.word(r.Word, f)
			rd.Target = target.text
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc != nil {
				a.substitutions(r.Hdoc, f)
				w := a.heredoc(r.Hdoc)
				stdin = &w
			}
		case syntax.WordHdoc:
			stdin = &target
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
			syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
			rd.Write = true
		case syntax.DplOut:
			// >&2 duplicates a descriptor; >&file is &>file.
			rd.Write = !isFD(target)
		case syntax.RdrIn:
			a.touch(target, abi.AccessRead, "redirect")
		}
		if rd.Write {
			if target.text == "/dev/null" && !target.dyn {
				rd.Write = false
			} else {
				a.touch(target, abi.AccessWrite, "redirect")
			}
		}
		out = append(out, rd)
	}
	return out, stdin
}

func isFD(w word) bool {
	if w.dyn || w.text == "" {
		return false
	}
	t := strings.TrimSuffix(w.text, "-")
	if t == "" {
		return true
	}
	for _, c := range t {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// heredoc returns a here-document body; one holding expansions is dynamic.
func (a *analyzer) heredoc(w *syntax.Word) word {
	var b strings.Builder
	for _, p := range w.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok {
			return word{text: a.print(w), dyn: true}
		}
		b.WriteString(lit.Value)
	}
	return word{text: b.String()}
}

// substitutions walks every command hidden in node: command and process
// substitutions, including those inside parameter expansions, arithmetic
// and test expressions.
func (a *analyzer) substitutions(node syntax.Node, f frame) {
	syntax.Walk(node, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			a.subshell(func() { a.stmts(x.Stmts, f.in(ctxSubstitution)) })
			return false
		case *syntax.ProcSubst:
			a.subshell(func() { a.stmts(x.Stmts, f.in(ctxProcSubst)) })
			return false
		}
		return true
	})
}

// word walks the substitutions of w and resolves it.
func (a *analyzer) word(w *syntax.Word, f frame) word {
	a.substitutions(w, f)
	if a.dynamicWord(w) {
		return word{text: a.print(w), dyn: true}
	}
	// Fields, unlike Literal, removes backslash quoting (\rm is rm); a
	// static word always gives exactly one field.
	fields, err := expand.Fields(a.cfg, w)
	if err != nil || len(fields) != 1 {
		return word{text: a.print(w), dyn: true}
	}
	return word{text: fields[0], pos: a.verbatim(w, fields[0], f)}
}

// verbatim returns 1 + the offset in the analysed source where w's value
// text is written as it is, or 0.
func (a *analyzer) verbatim(w *syntax.Word, text string, f frame) int {
	if f.base < 0 || len(w.Parts) != 1 {
		return 0
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		if p.Value == text {
			return 1 + f.base + int(p.Pos().Offset())
		}
	case *syntax.SglQuoted:
		if !p.Dollar && p.Value == text {
			return 1 + f.base + int(p.Pos().Offset()) + 1
		}
	}
	return 0
}

// dynamicWord reports whether w's value is only known at run time.
func (a *analyzer) dynamicWord(w *syntax.Word) bool {
	for i, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			v := x.Value
			if strings.ContainsAny(v, "*?[") {
				return true // a glob
			}
			if open := strings.IndexByte(v, '{'); open >= 0 {
				if rest := v[open:]; strings.Contains(rest, "}") && (strings.Contains(rest, ",") || strings.Contains(rest, "..")) {
					return true // brace expansion
				}
			}
			if i == 0 && strings.HasPrefix(v, "~") {
				if a.home == "" {
					return true
				}
				user, _, _ := strings.Cut(v[1:], "/")
				if user != "" || (len(w.Parts) > 1 && !strings.Contains(v, "/")) {
					return true // ~user, ~+, or ~"quoted"
				}
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return true
				}
			}
		default:
			return true
		}
	}
	return false
}

func (a *analyzer) print(n syntax.Node) string {
	var b bytes.Buffer
	if err := a.printer.Print(&b, n); err != nil {
		return fmt.Sprintf("<%T>", n)
	}
	return b.String()
}

// resolve makes p absolute against the current directory, not cleaned
// (absolute).
func (a *analyzer) resolve(p string) (string, bool) {
	if path.IsAbs(p) {
		return p, true
	}
	if !a.dirKnown {
		return "", false
	}
	return absolute(p, a.dir)
}

// touch records a file the script reads or writes.
func (a *analyzer) touch(w word, access, source string) {
	if w.dyn || w.text == "" {
		return
	}
	p, ok := a.resolve(w.text)
	if !ok {
		if a.dirLost && access == abi.AccessWrite {
			a.fail(fmt.Sprintf("writes %q relative to a directory a cd made unknown", w.text))
		}
		return
	}
	a.addPath(p, access, source)
}

// addPath records the file asked (absolute, not cleaned).
func (a *analyzer) addPath(asked, access, source string) {
	p := path.Clean(asked)
	key := access + "\x00" + asked
	if a.seen[key] {
		return
	}
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	a.seen[key] = true
	a.paths = append(a.paths, newPath(p, asked, access, source, a.cwd))
}

func inside(p, cwd string) bool {
	if cwd == "" {
		return false
	}
	return p == cwd || strings.HasPrefix(p, strings.TrimSuffix(cwd, "/")+"/")
}
