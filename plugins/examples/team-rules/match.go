package main

import (
	"net/url"
	"path"
	"strings"

	"github.com/permhost/permhost/abi"
)

// homeGlobs are what "~" stands for when home is not configured (reject and
// ask rules only): every usual home directory, and the literal "~" of a
// redirect target the shell analysis left unexpanded.
var homeGlobs = []string{"/root", "/home/*", "/Users/*", "~"}

// expandGlob turns a configured glob into absolute globs. Relative globs are
// anchored at the session cwd; without a cwd they match nowhere for an
// allow, and at any depth ("**/glob") for a reject or ask.
func expandGlob(g, home, cwd string, allow bool) []string {
	switch {
	case g == "~" || strings.HasPrefix(g, "~/"):
		rest := strings.TrimPrefix(g, "~")
		if home != "" {
			return []string{path.Clean(home + rest)}
		}
		if allow {
			return nil // refused by validation; kept closed here too
		}
		out := make([]string, 0, len(homeGlobs))
		for _, h := range homeGlobs {
			out = append(out, path.Clean(h+rest))
		}
		return out
	case path.IsAbs(g):
		return []string{path.Clean(g)}
	case cwd != "":
		return []string{path.Join(cwd, g)}
	case allow:
		return nil
	default:
		return []string{"**/" + path.Clean(g)}
	}
}

// globMatch reports whether name matches glob, segment by segment: "*", "?"
// and "[...]" as in path.Match within one segment, and a "**" segment for
// any number of segments, including none. Both must be cleaned; "*" matches
// names starting with a dot too.
func globMatch(glob, name string) bool {
	gs, ns := splitPath(glob), splitPath(name)
	floating := len(gs) > 0 && gs[0] == "**"
	if path.IsAbs(glob) != path.IsAbs(name) && !floating {
		return false
	}
	return segMatch(gs, ns)
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// segMatch matches glob segments against name segments; memo bounds the
// work to len(gs)*len(ns) whatever the number of "**".
func segMatch(gs, ns []string) bool {
	memo := make([]int8, (len(gs)+1)*(len(ns)+1))
	var match func(i, j int) bool
	match = func(i, j int) bool {
		k := i*(len(ns)+1) + j
		if memo[k] != 0 {
			return memo[k] > 0
		}
		var ok bool
		switch {
		case i == len(gs):
			ok = j == len(ns)
		case gs[i] == "**":
			ok = match(i+1, j) || (j < len(ns) && match(i, j+1))
		case j == len(ns):
			ok = false
		default:
			m, err := path.Match(gs[i], ns[j])
			ok = err == nil && m && match(i+1, j+1)
		}
		memo[k] = -1
		if ok {
			memo[k] = 1
		}
		return ok
	}
	return match(0, 0)
}

// touched is a file a call touches.
type touched struct {
	// path is cleaned and absolute when known; otherwise as written.
	path   string
	access string // read, write, or "" when unknown
	// known is false for a path that is not a plain absolute path.
	known bool
	// anywhere is true when the path could not be resolved at all (a
	// variable, a substitution, a glob, a relative path with no cwd): it may
	// be any file, so every reject or ask path glob matches it.
	anywhere bool
}

// touchedPaths gathers the files a call touches: the host's paths, each
// also as the OS opens it (ABI 1.2's resolved: an allow needs both to
// match, a reject or ask either), the files the action names, and the
// shell's redirect targets (a path the host already resolved appears twice,
// which changes nothing). A request without an action (built by hand) has
// its tool call's locations instead.
func touchedPaths(req abi.Request, family, home string) []touched {
	var out []touched
	for _, p := range req.Paths {
		t := resolve(p.Path, home, req.Session.Cwd)
		t.access = p.Access
		out = append(out, t)
		if p.Resolved != "" && p.Resolved != p.Path {
			r := resolve(p.Resolved, home, req.Session.Cwd)
			r.access = p.Access
			out = append(out, r)
		}
	}
	access := ""
	switch family {
	case abi.FamilyRead, abi.FamilySearch:
		access = abi.AccessRead
	case abi.FamilyEdit, abi.FamilyDelete, abi.FamilyMove:
		access = abi.AccessWrite
	}
	named := []string{}
	if req.Action != nil {
		named = req.Action.Paths
	} else {
		for _, l := range req.ToolCall.Locations {
			named = append(named, l.Path)
		}
	}
	for _, p := range named {
		t := resolve(p, home, req.Session.Cwd)
		t.access = access
		out = append(out, t)
	}
	if req.Shell != nil {
		for _, c := range req.Shell.Commands {
			for _, r := range c.Redirects {
				if ignoredRedirect(r) {
					continue
				}
				t := resolve(r.Target, home, req.Session.Cwd)
				t.access = abi.AccessRead
				if r.Write {
					t.access = abi.AccessWrite
				}
				out = append(out, t)
			}
		}
	}
	return out
}

// ignoredRedirect reports redirects that touch no file: /dev/null and the
// standard streams, and file-descriptor duplications such as 2>&1.
func ignoredRedirect(r abi.Redirect) bool {
	switch r.Target {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return true
	}
	if strings.Contains(r.Op, "&") && (r.Target == "-" || isDigits(r.Target)) {
		return true
	}
	return false
}

func isDigits(s string) bool {
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

func resolve(p, home, cwd string) touched {
	switch {
	case p == "" || strings.ContainsAny(p, "$`*?[{"):
		return touched{path: p, anywhere: true}
	case p == "~" || strings.HasPrefix(p, "~/"):
		if home == "" {
			// Keep it as written: "~" globs of reject rules still match.
			return touched{path: path.Clean(p), known: false}
		}
		return touched{path: path.Clean(home + p[1:]), known: true}
	case strings.HasPrefix(p, "~"):
		return touched{path: p, anywhere: true} // ~user
	case path.IsAbs(p):
		return touched{path: path.Clean(p), known: true}
	case cwd != "" && path.IsAbs(cwd):
		return touched{path: path.Join(cwd, p), known: true}
	default:
		return touched{path: p, anywhere: true}
	}
}

// pathMatches reports whether t matches any glob (already expanded), for a
// rule that cares about access (empty: any). An allow needs a known path; a
// reject or ask also matches a path that may be anything.
func pathMatches(t touched, globs []string, access string, allow bool) bool {
	if allow && !t.known {
		return false
	}
	if !allow && t.anywhere && len(globs) > 0 {
		return accessMatches(t.access, access, allow)
	}
	for _, g := range globs {
		if globMatch(g, t.path) {
			return accessMatches(t.access, access, allow)
		}
	}
	return false
}

// accessMatches: an unknown access never satisfies an allow rule's access
// and always satisfies a reject or ask rule's.
func accessMatches(have, want string, allow bool) bool {
	switch {
	case want == "" || have == want:
		return true
	case have == "":
		return !allow
	default:
		return false
	}
}

// foundURL is one URL a call mentions.
type foundURL struct {
	raw  string
	host string // lower case, without port or trailing dot; "" if unparsable
}

// fetchers are programs whose bare host-name arguments are URLs.
var fetchers = map[string]bool{"curl": true, "wget": true, "http": true, "https": true, "xh": true, "aria2c": true}

// urlsOf gathers the URLs a call mentions: those of its action (a fetch's,
// wherever the agent put them) and those in the words of its shell
// commands, where a bare host name given to curl or wget counts too.
func urlsOf(req abi.Request) []foundURL {
	var out []foundURL
	if req.Action != nil {
		for _, u := range req.Action.URLs {
			out = append(out, parseURL(u, u))
		}
	}
	if req.Shell != nil {
		for _, c := range req.Shell.Commands {
			fetcher := len(c.Argv) > 0 && fetchers[path.Base(c.Argv[0])]
			for i, w := range c.Argv {
				if strings.Contains(w, "://") {
					out = append(out, urlsIn(w)...)
				} else if fetcher && i > 0 && !strings.HasPrefix(w, "-") && strings.Contains(w, ".") {
					out = append(out, parseURL(w, "http://"+w))
				}
			}
		}
	}
	return out
}

// urlsIn finds scheme://... runs in free text.
func urlsIn(s string) []foundURL {
	var out []foundURL
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			return out
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'<>`()[]{}|;,", rune(s[end])) {
			end++
		}
		if start < i {
			out = append(out, parseURL(s[start:end], s[start:end]))
		}
		s = s[end:]
	}
}

func isSchemeByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '+' || b == '-' || b == '.'
}

func parseURL(raw, asURL string) foundURL {
	f := foundURL{raw: raw}
	u, err := url.Parse(asURL)
	if err != nil || u.Host == "" {
		return f
	}
	host := strings.TrimRight(strings.ToLower(u.Hostname()), ".")
	// A host with characters no host name has (a backslash trick, an
	// unresolved variable) is left unparsed, so that only rejects match it.
	if host == "" || strings.ContainsAny(host, "\\$`*@%") {
		return f
	}
	f.host = host
	return f
}

// domainMatches reports whether host matches pattern: "*" any host,
// "*.example.com" any subdomain of example.com (not example.com itself),
// otherwise the exact host.
func domainMatches(pattern, host string) bool {
	switch {
	case pattern == "*":
		return host != ""
	case strings.HasPrefix(pattern, "*."):
		return strings.HasSuffix(host, pattern[1:])
	default:
		return host == pattern
	}
}

// mentionsDomain is the fallback for a URL that did not parse: a reject or
// ask matches when the text contains the domain at all.
func mentionsDomain(pattern, raw string) bool {
	if pattern == "*" {
		return true
	}
	return strings.Contains(strings.ToLower(raw), strings.TrimPrefix(pattern, "*."))
}
