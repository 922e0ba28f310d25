package shell

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/permhost/permhost/abi"
)

// options describes a command's options, enough to find where its own
// arguments end and the command it runs begins.
type options struct {
	// flags take no argument; withArg take one, attached or next;
	// optionalArg take one only when attached (xargs -i, -l, -e).
	flags, withArg, optionalArg string
	longFlags, longWithArg      []string
	// numeric accepts -N (nice -10).
	numeric bool
}

// parse skips the options at the start of args. It returns the remaining
// words, the options seen (by letter or long name, with their argument),
// and an error for an option it does not know or an argument it cannot
// read: guessing could make it report the wrong command.
func (o options) parse(args []word) ([]word, map[string]word, error) {
	seen := map[string]word{}
	i := 0
	for i < len(args) {
		w := args[i]
		t := w.text
		if w.dyn {
			if strings.HasPrefix(t, "-") {
				return nil, nil, fmt.Errorf("option %s is not literal", t)
			}
			break
		}
		if t == "--" {
			i++
			break
		}
		if t == "-" || !strings.HasPrefix(t, "-") {
			break
		}
		if strings.HasPrefix(t, "--") {
			name, val, hasVal := strings.Cut(t[2:], "=")
			switch {
			case contains(o.longWithArg, name):
				if !hasVal {
					if i+1 >= len(args) {
						return nil, nil, fmt.Errorf("option --%s needs an argument", name)
					}
					i++
					seen[name] = args[i]
				} else {
					seen[name] = word{text: val}
				}
			case contains(o.longFlags, name):
				seen[name] = word{text: val}
			default:
				return nil, nil, fmt.Errorf("unknown option --%s", name)
			}
			i++
			continue
		}
		if o.numeric && isNumber(t[1:]) {
			i++
			continue
		}
		cluster := t[1:]
		for j := 0; j < len(cluster); j++ {
			c := cluster[j : j+1]
			switch {
			case strings.Contains(o.withArg, c):
				if j+1 < len(cluster) {
					seen[c] = word{text: cluster[j+1:]}
				} else {
					if i+1 >= len(args) {
						return nil, nil, fmt.Errorf("option -%s needs an argument", c)
					}
					i++
					seen[c] = args[i]
				}
				j = len(cluster)
			case strings.Contains(o.optionalArg, c):
				seen[c] = word{text: cluster[j+1:]}
				j = len(cluster)
			case strings.Contains(o.flags, c):
				seen[c] = word{}
			default:
				return nil, nil, fmt.Errorf("unknown option -%s", c)
			}
		}
		i++
	}
	return args[i:], seen, nil
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

var (
	envOptions     = options{flags: "i0v", withArg: "uCS", longFlags: []string{"ignore-environment", "null", "debug"}, longWithArg: []string{"unset", "chdir", "split-string"}}
	timeoutOptions = options{flags: "v", withArg: "sk", longFlags: []string{"foreground", "preserve-status", "verbose"}, longWithArg: []string{"signal", "kill-after"}}
	niceOptions    = options{withArg: "n", longWithArg: []string{"adjustment"}, numeric: true}
	nohupOptions   = options{}
	commandOptions = options{flags: "pvV"}
	execOptions    = options{flags: "cl", withArg: "a"}
	sudoOptions    = options{
		flags:       "AbEeHiKklnPSsVvBN",
		withArg:     "CDghpRrTtUu",
		longFlags:   []string{"askpass", "background", "preserve-env", "edit", "set-home", "login", "remove-timestamp", "reset-timestamp", "non-interactive", "preserve-groups", "stdin", "shell", "list", "validate", "version", "help", "bell", "no-update"},
		longWithArg: []string{"user", "group", "host", "prompt", "chdir", "chroot", "role", "type", "command-timeout", "other-user", "close-from"},
	}
	doasOptions   = options{flags: "ns", withArg: "uC"}
	setsidOptions = options{flags: "cfw", longFlags: []string{"ctty", "fork", "wait"}}
	stdbufOptions = options{withArg: "ioe", longWithArg: []string{"input", "output", "error"}}
	timeOptions   = options{flags: "pvqa", withArg: "fo", longFlags: []string{"portability", "verbose", "quiet", "append"}, longWithArg: []string{"format", "output"}}
	xargsOptions  = options{
		flags:       "0prtx",
		withArg:     "aEdILnPs",
		optionalArg: "ile",
		longFlags:   []string{"null", "no-run-if-empty", "verbose", "interactive", "exit", "open-tty", "show-limits", "replace", "eof"},
		longWithArg: []string{"arg-file", "delimiter", "max-args", "max-lines", "max-procs", "max-chars", "process-slot-var"},
	}
	watchOptions = options{flags: "bcCdegprtwx", withArg: "nq", longFlags: []string{"beep", "color", "no-color", "differences", "errexit", "chgexit", "precise", "no-rerun", "no-title", "no-wrap", "exec"}, longWithArg: []string{"interval", "equexit"}}
	flockOptions = options{flags: "sexnuoFv", withArg: "wE", longFlags: []string{"shared", "exclusive", "unlock", "nonblock", "nb", "close", "no-fork", "verbose"}, longWithArg: []string{"wait", "timeout", "conflict-exit-code"}}
	shellOptions = options{flags: "abefhkmnptuvxBCEHPTlirsDc", withArg: "oO", longFlags: []string{"norc", "noprofile", "login", "posix", "restricted", "verbose", "noediting", "debugger", "dump-strings", "dump-po-strings", "help", "version", "pretty-print"}, longWithArg: []string{"rcfile", "init-file"}}
)

// shells maps a shell's name to the parser dialect used for its -c
// script, and the reason the result is not fully trusted, if any.
var shells = map[string]struct {
	lang   syntax.LangVariant
	reason string
}{
	"bash": {syntax.LangBash, ""},
	"sh":   {syntax.LangBash, ""},
	"dash": {syntax.LangBash, ""},
	"ash":  {syntax.LangBash, ""},
	"zsh":  {syntax.LangBash, "zsh script read with a bash parser: zsh syntax differs"},
	"ksh":  {syntax.LangBash, "ksh script read with a bash parser: ksh syntax differs"},
	"mksh": {syntax.LangBash, "mksh script read with a bash parser: mksh syntax differs"},
}

// otherShells run scripts in a language this package does not parse.
var otherShells = map[string]bool{"fish": true, "csh": true, "tcsh": true, "pwsh": true, "nu": true, "elvish": true, "xonsh": true}

// command peels wrappers off words and records the command they run.
func (a *analyzer) command(words []word, redirs []abi.Redirect, stdin *word, f frame) {
	// emitAs records words as the command, after wrappers are peeled.
	outer := len(f.wrappers)
	emitAs := func(ws []word, f frame) {
		cmd := abi.Command{Argv: make([]string, len(ws)), Redirects: redirs}
		for i, w := range ws {
			cmd.Argv[i] = w.text
			cmd.Dynamic = cmd.Dynamic || w.dyn
		}
		a.emit(cmd, f)
		a.after(ws, f, f.wrappers[outer:])
	}
	// inner records what a wrapper runs, and the wrapper itself when that
	// turns out to be nothing, so no command disappears.
	inner := func(ws []word, wrapper string, run func(frame)) {
		start := len(a.cmds)
		if wrapper == "eval" {
			// eval runs in this shell: its cd moves the rest of the script.
			run(f.wrapped(wrapper))
		} else {
			a.subshell(func() { run(f.wrapped(wrapper)) })
		}
		if len(a.cmds) == start {
			emitAs(ws, f)
			return
		}
		for i := start; i < len(a.cmds); i++ {
			a.cmds[i].Redirects = append(a.cmds[i].Redirects, redirs...)
		}
	}
	// innerScript records what a wrapper's script runs, one level deeper,
	// with the assignments the wrapper adds.
	innerScript := func(wrapper string, script word, lang syntax.LangVariant, assigns []abi.Assignment) {
		inner(words, wrapper, func(g frame) {
			g = g.assigning(assigns)
			g.depth++
			g.base = script.offset()
			a.script(script.text, g, lang)
		})
	}
	for {
		if words[0].dyn {
			emitAs(words, f)
			return
		}
		name := path.Base(words[0].text)
		args := words[1:]
		// parse reads the wrapper's options; when it cannot, it records why
		// and the words stand as the command.
		parse := func(spec options) ([]word, map[string]word, bool) {
			rest, seen, err := spec.parse(args)
			if err != nil {
				a.fail(name + ": " + err.Error())
				emitAs(words, f)
			}
			return rest, seen, err == nil
		}
		var spec options
		switch name {
		case "env":
			rest, seen, ok := parse(envOptions)
			if !ok {
				return
			}
			if _, ok := seen["S"]; ok {
				a.fail("env -S splits a string into a command")
			} else if _, ok := seen["split-string"]; ok {
				a.fail("env --split-string splits a string into a command")
			}
			assigns, rest := leadingAssignments(rest)
			if len(rest) == 0 {
				emitAs(words, f)
				return
			}
			dir, hasDir := seen["C"]
			if d, ok := seen["chdir"]; ok {
				dir, hasDir = d, true
			}
			inner(words, "env", func(g frame) {
				g = g.assigning(assigns)
				if hasDir {
					a.cd(dir)
				}
				a.command(rest, nil, stdin, g)
			})
			return
		case "bash", "sh", "dash", "ash", "zsh", "ksh", "mksh":
			rest, seen, ok := parse(shellOptions)
			if !ok {
				return
			}
			a.shell(name, words, rest, seen, stdin, f, emitAs, innerScript)
			return
		case "eval":
			script, ok := joinLiteral(args)
			if !ok {
				a.fail("eval of a non-literal argument")
				emitAs(words, f)
				return
			}
			innerScript("eval", script, syntax.LangBash, nil)
			return
		case "sudo", "doas":
			spec := sudoOptions
			if name == "doas" {
				spec = doasOptions
			}
			rest, seen, ok := parse(spec)
			if !ok {
				return
			}
			_, edit := seen["e"]
			_, list := seen["l"]
			if edit || list || len(rest) == 0 {
				emitAs(words, f)
				return
			}
			assigns, rest := leadingAssignments(rest)
			if len(rest) == 0 {
				emitAs(words, f)
				return
			}
			_, s := seen["s"]
			_, i := seen["i"]
			if s || i {
				// sudo -s and -i hand the command line to a shell.
				script, ok := joinLiteral(rest)
				if !ok {
					a.fail(name + " -s with a non-literal command")
					emitAs(words, f)
					return
				}
				innerScript(name, script, syntax.LangBash, assigns)
				return
			}
			inner(words, name, func(g frame) {
				a.command(rest, nil, stdin, g.assigning(assigns))
			})
			return
		case "watch":
			rest, seen, ok := parse(watchOptions)
			if !ok {
				return
			}
			if len(rest) == 0 {
				emitAs(words, f)
				return
			}
			_, x := seen["x"]
			_, exec := seen["exec"]
			if x || exec {
				inner(words, "watch", func(g frame) { a.command(rest, nil, nil, g) })
				return
			}
			script, ok := joinLiteral(rest)
			if !ok {
				a.fail("watch with a non-literal command")
				emitAs(words, f)
				return
			}
			innerScript("watch", script, syntax.LangBash, nil)
			return
		case "flock":
			rest, _, ok := parse(flockOptions)
			if !ok {
				return
			}
			if len(rest) < 2 {
				emitAs(words, f)
				return
			}
			rest = rest[1:] // the lock file
			if !rest[0].dyn && (rest[0].text == "-c" || rest[0].text == "--command") {
				if len(rest) < 2 || rest[1].dyn {
					a.fail("flock -c with a non-literal command")
					emitAs(words, f)
					return
				}
				innerScript("flock", rest[1], syntax.LangBash, nil)
				return
			}
			inner(words, "flock", func(g frame) { a.command(rest, nil, stdin, g) })
			return
		case "xargs":
			rest, _, ok := parse(xargsOptions)
			if !ok {
				return
			}
			if len(rest) == 0 {
				rest = []word{{text: "echo"}}
			}
			inner(words, "xargs", func(g frame) {
				g.dynamic = true // xargs appends arguments read at run time
				a.command(rest, nil, nil, g)
			})
			return
		case "command":
			rest, seen, ok := parse(commandOptions)
			if !ok {
				return
			}
			_, v := seen["v"]
			_, bigV := seen["V"]
			if v || bigV || len(rest) == 0 {
				// command -v and -V look a name up; they run nothing.
				emitAs(words, f)
				return
			}
			words = rest
			f = f.wrapped(name)
			continue
		case "timeout":
			rest, _, ok := parse(timeoutOptions)
			if !ok {
				return
			}
			if len(rest) < 2 {
				emitAs(words, f)
				return
			}
			words = rest[1:] // after the duration
			f = f.wrapped(name)
			continue
		case "time":
			rest, seen, ok := parse(timeOptions)
			if !ok {
				return
			}
			for _, k := range []string{"o", "output"} {
				if out, ok := seen[k]; ok {
					a.touch(out, abi.AccessWrite, "argv")
				}
			}
			if len(rest) == 0 {
				emitAs(words, f)
				return
			}
			words = rest
			f = f.wrapped(name)
			continue
		case "nice":
			spec = niceOptions
		case "nohup":
			spec = nohupOptions
		case "exec":
			spec = execOptions
		case "setsid":
			spec = setsidOptions
		case "stdbuf":
			spec = stdbufOptions
		case "builtin", "busybox":
		default:
			if otherShells[name] {
				a.fail(name + " runs a script in a language this analysis does not parse")
			}
			emitAs(words, f)
			return
		}
		rest, _, ok := parse(spec)
		if !ok {
			return
		}
		if len(rest) == 0 {
			emitAs(words, f)
			return
		}
		words = rest
		f = f.wrapped(name)
	}
}

// shell handles bash, sh, zsh... with -c SCRIPT, a script file, or a
// script read from a here-document.
// rest and seen are what follows the shell's options, and the options.
func (a *analyzer) shell(name string, words, rest []word, seen map[string]word, stdin *word, f frame,
	emitAs func([]word, frame), innerScript func(string, word, syntax.LangVariant, []abi.Assignment)) {
	dialect := shells[name]
	var script word
	switch _, c := seen["c"]; {
	case c:
		if len(rest) == 0 {
			emitAs(words, f)
			return
		}
		script = rest[0]
	case len(rest) == 0 && stdin != nil:
		// bash <<'EOF' ... EOF runs the here-document.
		script = *stdin
	default:
		// A script file, or commands read from a pipe: the argv is all
		// there is to see.
		emitAs(words, f)
		return
	}
	if script.dyn {
		a.fail(name + " runs a script that is not literal")
		emitAs(words, f)
		return
	}
	if dialect.reason != "" {
		a.fail(dialect.reason)
	}
	innerScript(name, script, dialect.lang, nil)
}

// after looks at a recorded command for effects beyond its argv: cd,
// files written by tee, find's -exec and output files, alias and trap.
func (a *analyzer) after(ws []word, f frame, peeled []string) {
	if ws[0].dyn {
		return
	}
	args := ws[1:]
	switch path.Base(ws[0].text) {
	case "cd", "pushd", "popd", "chdir":
		for _, w := range peeled {
			if w != "builtin" && w != "command" {
				return // a cd run by env, sudo... changes nothing here
			}
		}
		rest, _, err := options{flags: "LPe@n"}.parse(args)
		switch {
		case err != nil, path.Base(ws[0].text) == "popd", len(rest) > 1:
			a.lose()
		case len(rest) == 0:
			if ws[0].text == "pushd" || a.home == "" {
				a.lose()
			} else {
				a.cd(word{text: a.home})
			}
		default:
			a.cd(rest[0])
		}
	case "tee":
		rest, _, err := options{flags: "aip", longFlags: []string{"append", "ignore-interrupts", "output-error"}}.parse(args)
		if err != nil {
			a.fail("tee: " + err.Error())
			return
		}
		for _, w := range rest {
			if w.text != "/dev/null" || w.dyn {
				a.touch(w, abi.AccessWrite, "argv")
			}
		}
	case "find":
		a.find(args, f)
	case "alias":
		if len(args) > 0 {
			a.fail("alias definition: an alias can rename any command")
		}
	case "trap":
		rest, _, err := options{flags: "lp"}.parse(args)
		if err != nil || len(rest) < 2 {
			return
		}
		if rest[0].dyn {
			a.fail("trap with a non-literal action")
			return
		}
		a.conditional(func() {
			g := f.wrapped("trap")
			g.depth++
			g.base = rest[0].offset()
			a.script(rest[0].text, g, syntax.LangBash)
		})
	}
}

// find records the commands of -exec, -execdir, -ok and -okdir, and the
// files -fprint, -fprint0, -fprintf and -fls write.
func (a *analyzer) find(args []word, f frame) {
	for i := 0; i < len(args); i++ {
		if args[i].dyn {
			continue
		}
		switch args[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && (args[j].dyn || (args[j].text != ";" && args[j].text != "+")) {
				j++
			}
			cmd := make([]word, 0, j-i-1)
			for _, w := range args[i+1 : j] {
				if strings.Contains(w.text, "{}") {
					w.dyn = true // replaced by each file found
				}
				cmd = append(cmd, w)
			}
			if j == len(args) {
				a.fail("find " + args[i].text + " without a terminating ; or +")
			}
			if len(cmd) > 0 {
				a.subshell(func() {
					g := f.wrapped("find")
					g.dynamic = true
					a.command(cmd, nil, nil, g)
				})
			}
			i = j
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(args) {
				a.touch(args[i+1], abi.AccessWrite, "argv")
				i++
			}
		}
	}
}

// cd moves the tracked directory to w.
func (a *analyzer) cd(w word) {
	if a.cond > 0 || w.dyn || w.text == "-" {
		a.lose()
		return
	}
	p, ok := a.resolve(w.text)
	if !ok {
		a.lose()
		return
	}
	// bash's cd is logical: "cd k/.." is back where it started.
	a.dir, a.dirKnown = path.Clean(p), true
}

// lose forgets the directory: relative writes after it are unknown.
func (a *analyzer) lose() {
	a.dirKnown, a.dirLost = false, true
}

// leadingAssignments splits the NAME=value words at the start of ws (env
// and sudo read them as the command's environment) from the rest.
func leadingAssignments(ws []word) ([]abi.Assignment, []word) {
	var assigns []abi.Assignment
	for len(ws) > 0 && !ws[0].dyn && isAssignment(ws[0].text) {
		n, v, _ := strings.Cut(ws[0].text, "=")
		assigns = append(assigns, abi.Assignment{Name: n, Value: v})
		ws = ws[1:]
	}
	return assigns, ws
}

func isAssignment(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	return ok && syntax.ValidName(name)
}

// joinLiteral joins words with spaces, as eval and sh -c see them. The
// result is where its one word is in the source; several words joined are
// nowhere verbatim.
func joinLiteral(ws []word) (word, bool) {
	parts := make([]string, len(ws))
	for i, w := range ws {
		if w.dyn {
			return word{}, false
		}
		parts[i] = w.text
	}
	joined := word{text: strings.Join(parts, " ")}
	if len(ws) == 1 {
		joined.pos = ws[0].pos
	}
	return joined, true
}
