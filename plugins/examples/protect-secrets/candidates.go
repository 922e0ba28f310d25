package main

import (
	"path"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/plugins/pdk"
)

// A candidate is a path the call may touch: absolute when it could be
// resolved, "~/..." for a home path, or relative when no directory is known.
type candidate struct {
	path  string
	cwd   string
	shown string // as the request wrote it
}

// candidates collects every string in the request that may name a file. It
// over-collects on purpose: a protected name appearing anywhere in a command
// is reason enough to refuse. What a tool names as its files comes from the
// action and the paths permhost found, read from each agent's own shape by
// its profile; the plugin reads no agent's rawInput.
func candidates(req abi.Request) []candidate {
	cwd := req.Session.Cwd
	var named []string
	if a := req.Action; a != nil {
		if strings.HasPrefix(a.Cwd, "/") {
			cwd = a.Cwd // where the command runs (codex-acp's rawInput.cwd, Gemini's content)
		}
		named = a.Paths
	} else {
		// A request without an action (built by hand): its locations.
		for _, l := range req.ToolCall.Locations {
			named = append(named, l.Path)
		}
	}
	var out []candidate
	seen := map[string]bool{}
	add := func(word string) {
		for _, w := range variants(word) {
			c := resolve(w, cwd)
			if c.path == "" || seen[c.path] {
				continue
			}
			seen[c.path] = true
			out = append(out, c)
		}
	}
	for _, p := range req.Paths {
		add(p.Path)
		// The file the OS opens (ABI 1.2): a symlink to a secret, or a
		// "k/../x" whose k is a symlink, is the secret it reaches.
		if r := p.Resolved; strings.HasPrefix(r, "/") && !seen[path.Clean(r)] {
			seen[path.Clean(r)] = true
			out = append(out, candidate{path: path.Clean(r), cwd: cwd, shown: p.Path + " (opens " + r + ")"})
		}
	}
	for _, p := range named {
		add(p)
	}
	if s := req.Shell; s != nil {
		for _, c := range s.Commands {
			for _, w := range c.Argv {
				add(w)
			}
			for _, r := range c.Redirects {
				add(r.Target)
			}
			for _, a := range c.Assignments {
				add(a.Value)
			}
		}
	}
	// The command's words as well, quotes stripped: the analysis may be
	// absent, or incomplete when the script did not parse.
	for _, w := range strings.FieldsFunc(pdk.CommandText(req), isSeparator) {
		add(w)
	}
	return out
}

func isSeparator(r rune) bool {
	return strings.ContainsRune(" \t\r\n;&|<>()`'\"", r)
}

// variants are the ways a word can name a file: itself, and the value of a
// --flag=value or NAME=value word.
func variants(word string) []string {
	word = strings.TrimSpace(word)
	if word == "" {
		return nil
	}
	out := []string{word}
	if i := strings.LastIndexByte(word, '='); i >= 0 && i+1 < len(word) {
		out = append(out, word[i+1:])
	}
	return out
}

func resolve(w, cwd string) candidate {
	c := candidate{shown: w}
	for _, h := range []string{"$HOME", "${HOME}"} {
		if rest, ok := strings.CutPrefix(w, h); ok && (rest == "" || rest[0] == '/') {
			w = "~" + rest
		}
	}
	switch {
	case strings.HasPrefix(w, "file://"):
		c.path = path.Clean(strings.TrimPrefix(w, "file://"))
	case strings.HasPrefix(w, "/"):
		c.path = path.Clean(w)
	case w == "~" || strings.HasPrefix(w, "~/"):
		c.path = "~/" + strings.TrimPrefix(path.Clean(w[1:]), "/")
	case strings.HasPrefix(w, "-") && !strings.Contains(w, "/") && !strings.Contains(w, "."):
		return candidate{} // a plain flag
	case cwd != "":
		c.path = path.Join(cwd, w)
	default:
		c.path = path.Clean(w)
	}
	c.cwd = cwd
	return c
}
