package policy

import (
	"path"
	"slices"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/fspath"
	"github.com/permhost/permhost/internal/profile"
	"github.com/permhost/permhost/internal/shell"
)

// analyze fills the shell analysis and the paths of a request from what the
// agent's profile found: the files the tool names, with the access its
// family implies (a diff always writes), then those the command's
// redirects and arguments touch. The command is the one the profile found,
// wherever the agent put it; nothing else (a title in particular) is ever
// analysed as one. Each path is resolved as the OS opens it now
// (abi.Path.Resolved): what the plugins, grants and allowances match.
func analyze(f profile.Facts, cwd, home string) (*abi.Shell, []abi.Path) {
	if path.IsAbs(cwd) {
		cwd = path.Clean(cwd)
	} else {
		cwd = ""
	}
	access := accessOf(f.Action.Family)
	var paths []abi.Path
	add := func(p abi.Path) {
		if !slices.ContainsFunc(paths, func(q abi.Path) bool { return q.Path == p.Path && q.Asked == p.Asked && q.Access == p.Access }) {
			p.Resolved = resolved(p)
			paths = append(paths, p)
		}
	}
	for _, p := range f.Paths {
		a := access
		if p.Source == "diff" {
			a = abi.AccessWrite
		}
		add(abi.Path{Path: p.Path, Asked: p.Asked, Access: a, InsideCwd: cwd != "" && shell.Inside(p.Path, cwd), Source: p.Source})
	}
	sh, shellPaths := shell.AnalyzeCommand(f.Command, f.Dir, cwd, home)
	for _, p := range shellPaths {
		add(p)
	}
	return sh, paths
}

// accessOf is the access of the files a call of family names: read for a
// read or search, write for everything else, so that an unknown family
// never passes for a reader.
func accessOf(family string) string {
	switch family {
	case abi.FamilyRead, abi.FamilySearch:
		return abi.AccessRead
	}
	return abi.AccessWrite
}

// commandRoots returns the programs a parsed script runs, each once, in
// order: what Gemini CLI's "allow for this session" really allows.
func commandRoots(sh *abi.Shell) string {
	if sh == nil || !sh.Parsed {
		return ""
	}
	var roots []string
	for _, c := range sh.Commands {
		if len(c.Argv) == 0 || c.Dynamic {
			return ""
		}
		r := path.Base(c.Argv[0])
		if !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return strings.Join(roots, ", ")
}

// resolved is the file the OS opens for p, "" when it cannot be resolved.
func resolved(p abi.Path) string {
	asked := p.Asked
	if asked == "" {
		asked = p.Path
	}
	r, err := fspath.Resolve(asked)
	if err != nil {
		return ""
	}
	return r
}
