package main

import (
	"fmt"
	"path"
	"strings"

	"github.com/permhost/permhost/abi"
)

// benignWrappers may stand before a command an allow rule matches: they run
// the command as it is. Any other wrapper the shell analysis peeled off
// (sudo, xargs, watch, flock, docker exec, zsh -c...) changes who runs it,
// how often, with what arguments or under which parser, so a command behind
// one is never allowed.
var benignWrappers = map[string]bool{
	"bash": true, "sh": true, "env": true, "timeout": true, "nice": true,
	"nohup": true, "command": true, "time": true,
}

// allowBlocker says why no allow rule may match c, or "" when one may.
func allowBlocker(c abi.Command) string {
	switch {
	case len(c.Argv) == 0:
		return "a command has no words"
	case len(c.Assignments) > 0:
		return fmt.Sprintf("the assignment %s precedes %s", quoted(c.Assignments[0].Name+"="), quoted(c.Argv[0]))
	case c.Dynamic:
		return fmt.Sprintf("%s depends on values known only when it runs", quoted(strings.Join(c.Argv, " ")))
	}
	for _, w := range c.Wrappers {
		fields := strings.Fields(w)
		if len(fields) == 0 || !benignWrappers[path.Base(fields[0])] {
			return fmt.Sprintf("%s runs under the wrapper %s", quoted(strings.Join(c.Argv, " ")), quoted(w))
		}
	}
	return ""
}

// hasPrefix is the allow rules' test: argv starts with exactly these words.
// The program must be spelled as in the rule: "npm" does not allow
// "./npm" or "/tmp/npm".
func hasPrefix(argv, prefix []string) bool {
	if len(argv) < len(prefix) {
		return false
	}
	for i, w := range prefix {
		if argv[i] != w {
			return false
		}
	}
	return true
}

// mentions is the reject and ask rules' test, deliberately wider than a
// prefix: the rule's program appears anywhere in argv (by base name, so
// /bin/rm and \rm count as rm; a program word that is a variable or glob
// counts as any program), and each later word of the rule appears somewhere
// after it, in any order. A short-option cluster such as -rf is compared
// letter by letter, so rm -fr, rm -r -f and rm -f x -r all match it.
func mentions(argv, rule []string) bool {
	for i, w := range argv {
		if !sameProgram(w, rule[0], i == 0) {
			continue
		}
		if containsArgs(argv[i+1:], rule[1:]) {
			return true
		}
	}
	return false
}

func sameProgram(word, want string, programPosition bool) bool {
	if programPosition && strings.ContainsAny(word, "$`*?[") {
		return true
	}
	word = strings.TrimLeft(word, `\`)
	return word == want || path.Base(word) == path.Base(want)
}

func containsArgs(args, want []string) bool {
	var letters string
	for _, a := range args {
		if isShortCluster(a) {
			letters += a[1:]
		}
	}
	for _, w := range want {
		if isShortCluster(w) {
			for _, r := range w[1:] {
				if !strings.ContainsRune(letters, r) {
					return false
				}
			}
			continue
		}
		found := false
		for _, a := range args {
			if a == w || strings.HasPrefix(w, "--") && strings.HasPrefix(a, w+"=") {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func isShortCluster(s string) bool {
	if len(s) < 2 || s[0] != '-' || s[1] == '-' {
		return false
	}
	for _, r := range s[1:] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// roughCommands splits a script the shell analysis could not parse into
// word lists at every operator, quote-blind: good enough for a reject or
// ask rule to still see "rm -rf" in it, never used to allow.
func roughCommands(src string) [][]string {
	var out [][]string
	sep := func(r rune) bool { return strings.ContainsRune(";&|()<>{}`\n\r", r) }
	for _, piece := range strings.FieldsFunc(strings.ReplaceAll(src, "$(", "("), sep) {
		piece = strings.NewReplacer(`"`, "", `'`, "", `\`, "").Replace(piece)
		if words := strings.Fields(piece); len(words) > 0 {
			out = append(out, words)
		}
	}
	return out
}
