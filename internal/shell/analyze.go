package shell

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/permhost/permhost/abi"
)

// input is the part of a rawInput (or of a v2 permission subject of type
// "command") that names a command.
type input struct {
	Command json.RawMessage `json:"command"`
	Cwd     *string         `json:"cwd"`
}

// Analyze finds the command in a tool call's rawInput and analyses it.
// claude-agent-acp sends {"command": "script"}; codex-acp sends
// {"command": ["/bin/bash", "-lc", "script"], "cwd": "/dir"}; a v2
// subject {"type":"command","command":...,"cwd":...} has the same keys.
// An argv that does not run a shell is analysed as that argv. A rawInput
// cwd, when absolute, is where relative paths resolve; InsideCwd is always
// against the session's cwd. home, when not empty, expands "~".
// Analyze returns nil, nil when there is no command.
func Analyze(rawInput json.RawMessage, cwd, home string) (*abi.Shell, []abi.Path) {
	raw := bytes.TrimSpace(rawInput)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nil
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, nil
	}
	dir := ""
	if in.Cwd != nil {
		dir = *in.Cwd
	}
	return AnalyzeCommand(in.Command, dir, cwd, home)
}

// AnalyzeCommand analyses a command as an agent gives it: a JSON string (a
// script) or an array of strings (an argv, as exec runs it); anything else
// is a command the analysis cannot read (Parsed false). dir, when
// absolute, is the directory the command runs in; InsideCwd is always
// against the session's cwd. It returns nil, nil when cmd is empty or null.
func AnalyzeCommand(cmd json.RawMessage, dir, cwd, home string) (*abi.Shell, []abi.Path) {
	cmd = bytes.TrimSpace(cmd)
	if len(cmd) == 0 || bytes.Equal(cmd, []byte("null")) {
		return nil, nil
	}
	a := newAnalyzer(cwd, home)
	if path.IsAbs(dir) {
		// The command runs there; insideCwd still refers to the session's.
		a.dir, a.dirKnown = path.Clean(dir), true
	}
	var script string
	if err := json.Unmarshal(cmd, &script); err == nil {
		a.script(script, frame{}, syntax.LangBash)
		return a.result(script)
	}
	var argv []string
	if err := json.Unmarshal(cmd, &argv); err == nil {
		return a.argv(argv)
	}
	return &abi.Shell{
		Source:   string(cmd),
		Parsed:   false,
		Reason:   "command is neither a string nor an array of strings",
		Commands: []abi.Command{},
	}, nil
}

// Inside reports whether the absolute, clean path p is cwd or below it.
func Inside(p, cwd string) bool { return inside(p, cwd) }

// AnalyzeScript analyses a bash script run in cwd.
func AnalyzeScript(src, cwd, home string) (*abi.Shell, []abi.Path) {
	a := newAnalyzer(cwd, home)
	a.script(src, frame{}, syntax.LangBash)
	return a.result(src)
}

// AnalyzeArgv analyses a command given as an argv, as exec would run it:
// no shell parses it, but wrappers (bash -c among them) are unwrapped.
func AnalyzeArgv(argv []string, cwd, home string) (*abi.Shell, []abi.Path) {
	return newAnalyzer(cwd, home).argv(argv)
}

func (a *analyzer) argv(argv []string) (*abi.Shell, []abi.Path) {
	src, words := quoteArgv(argv)
	if len(argv) == 0 {
		a.fail("empty argv")
	} else {
		// No statement: the argv as a whole is where its command is, and
		// a script it hands to a shell is where its quoted word is.
		a.command(words, nil, nil, frame{base: -1, span: &abi.Range{Start: 0, End: len(src)}})
	}
	return a.result(src)
}

// quoteArgv returns argv as a shell would have to write it, and its words,
// each placed where the source shows it verbatim (as is, or inside single
// quotes).
func quoteArgv(argv []string) (string, []word) {
	var b strings.Builder
	words := make([]word, len(argv))
	for i, s := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		words[i] = word{text: s}
		q, err := syntax.Quote(s, syntax.LangBash)
		switch {
		case err != nil:
			q = s
			words[i].pos = 1 + b.Len()
		case q == s:
			words[i].pos = 1 + b.Len()
		case q == "'"+s+"'":
			words[i].pos = 1 + b.Len() + 1
		}
		b.WriteString(q)
	}
	return b.String(), words
}
