package main

import (
	"fmt"
	"path"
	"strings"
)

// A pattern is a slash-separated glob. Each segment is a path.Match
// pattern, and a "**" segment matches any number of segments, none
// included. Like .gitignore, a pattern without a slash matches a segment
// anywhere in the path ("*.pem", "id_rsa"); a pattern starting with "~/"
// is relative to a home directory; "/..." is absolute; any other pattern
// with a slash is relative to the working directory. A pattern that matches
// a directory protects everything under it.
type pattern struct {
	glob string
	kind patternKind
	segs []string
}

type patternKind int

const (
	anySegment patternKind = iota
	fromHome
	absolute
	fromCwd
)

func compile(glob string) (pattern, error) {
	p := pattern{glob: glob}
	g := glob
	switch {
	case g == "" || g == "~" || g == "/":
		return p, fmt.Errorf("protect-secrets: glob %q would protect everything or nothing", glob)
	case strings.HasPrefix(g, "~/"):
		p.kind, g = fromHome, g[2:]
	case strings.HasPrefix(g, "/"):
		p.kind, g = absolute, g[1:]
	case strings.Contains(strings.TrimSuffix(g, "/"), "/"):
		p.kind = fromCwd
	default:
		p.kind = anySegment
	}
	p.segs = split(g)
	for _, s := range p.segs {
		if _, err := path.Match(s, ""); err != nil {
			return p, fmt.Errorf("protect-secrets: glob %q: %w", glob, err)
		}
	}
	return p, nil
}

// match reports whether the candidate path falls under p. home is the
// session's home directory; when unknown (empty), any /home/USER,
// /Users/USER or /root counts as a home.
func (p pattern) match(c candidate, home string) bool {
	switch p.kind {
	case anySegment:
		for _, s := range split(c.path) {
			if ok, _ := path.Match(p.segs[0], s); ok {
				return true
			}
		}
		return false
	case absolute:
		return strings.HasPrefix(c.path, "/") && matchSegs(p.segs, split(c.path))
	case fromHome:
		rest, ok := underHome(c.path, home)
		return ok && matchSegs(p.segs, split(rest))
	case fromCwd:
		if c.cwd == "" || !strings.HasPrefix(c.path, "/") {
			// A relative path with no known directory: compare as given.
			return !strings.HasPrefix(c.path, "/") && !strings.HasPrefix(c.path, "~") && matchSegs(p.segs, split(c.path))
		}
		rest, ok := strings.CutPrefix(c.path, strings.TrimSuffix(c.cwd, "/")+"/")
		return ok && matchSegs(p.segs, split(rest))
	}
	return false
}

// underHome returns the part of p below a home directory.
func underHome(p, home string) (string, bool) {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return rest, true
	}
	if p == "~" {
		return "", true
	}
	if home != "" {
		return strings.CutPrefix(p, strings.TrimSuffix(home, "/")+"/")
	}
	if rest, ok := strings.CutPrefix(p, "/root/"); ok {
		return rest, true
	}
	for _, base := range []string{"/home/", "/Users/"} {
		if rest, ok := strings.CutPrefix(p, base); ok {
			if i := strings.IndexByte(rest, '/'); i > 0 {
				return rest[i+1:], true
			}
		}
	}
	return "", false
}

// matchSegs matches pattern segments against path segments. Running out of
// pattern first is a match: the path is inside a protected directory.
func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return true
}

func split(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}
