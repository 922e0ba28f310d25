package shell

import (
	"bytes"
	"encoding/json"
	"path"
	"sort"
	"strings"

	"github.com/permhost/permhost/abi"
)

// AccessFor returns the access a tool call of kind has to the files it
// names: read for read and search, write for every other kind, so that an
// unknown kind never passes for a reader.
func AccessFor(kind string) string {
	switch kind {
	case abi.KindRead, abi.KindSearch:
		return abi.AccessRead
	}
	return abi.AccessWrite
}

// rawPaths is the part of a rawInput that names files: Claude's file_path
// (Write, Edit, Read), notebook_path and path (Grep, Glob, LS), a paths
// list, and codex-acp's changes, a map from path to change whose update
// may carry a move_path.
type rawPaths struct {
	FilePath     *string                    `json:"file_path"`
	NotebookPath *string                    `json:"notebook_path"`
	Path         *string                    `json:"path"`
	Paths        []json.RawMessage          `json:"paths"`
	Changes      map[string]json.RawMessage `json:"changes"`
}

type contentItem struct {
	Type string  `json:"type"`
	Path *string `json:"path"`
}

// ToolPaths collects the files a tool call touches from its locations, its
// diff content (always writes), and its rawInput, each resolved against
// cwd ("~" against home when known) and with the access its kind implies.
// A relative path is dropped only when cwd is unknown. Duplicates (same
// path and access) are kept once, the first source winning.
func ToolPaths(tc abi.ToolCall, cwd, home string) []abi.Path {
	c := collector{access: AccessFor(tc.Kind)}
	if path.IsAbs(cwd) {
		c.cwd = path.Clean(cwd)
	}
	if path.IsAbs(home) {
		c.home = path.Clean(home)
	}
	for _, l := range tc.Locations {
		c.add(l.Path, c.access, "location")
	}
	var content []json.RawMessage
	if json.Unmarshal(tc.Content, &content) == nil {
		for _, raw := range content {
			var it contentItem
			if json.Unmarshal(raw, &it) == nil && it.Type == "diff" && it.Path != nil {
				c.add(*it.Path, abi.AccessWrite, "diff")
			}
		}
	}
	raw := bytes.TrimSpace(tc.RawInput)
	var in rawPaths
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &in) == nil {
		for _, p := range []*string{in.FilePath, in.NotebookPath, in.Path} {
			if p != nil {
				c.add(*p, c.access, "rawInput")
			}
		}
		for _, r := range in.Paths {
			var p string
			if json.Unmarshal(r, &p) == nil {
				c.add(p, c.access, "rawInput")
			}
		}
		keys := make([]string, 0, len(in.Changes))
		for k := range in.Changes {
			keys = append(keys, k)
		}
		sort.Strings(keys) // map order is random; output must not be
		for _, k := range keys {
			c.add(k, abi.AccessWrite, "rawInput")
			var ch struct {
				MovePath *string `json:"move_path"`
			}
			if json.Unmarshal(in.Changes[k], &ch) == nil && ch.MovePath != nil {
				c.add(*ch.MovePath, abi.AccessWrite, "rawInput")
			}
		}
	}
	return c.paths
}

type collector struct {
	cwd, home, access string
	paths             []abi.Path
}

func (c *collector) add(p, access, source string) {
	if p == "" {
		return
	}
	if c.home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		p = c.home + p[1:]
	}
	asked, ok := absolute(p, c.cwd)
	if !ok {
		return
	}
	p = path.Clean(asked)
	for _, q := range c.paths {
		if q.Path == p && (q.Asked == asked || q.Asked == "" && q.Path == asked) && q.Access == access {
			return
		}
	}
	c.paths = append(c.paths, newPath(p, asked, access, source, c.cwd))
}

// FromToolCall analyses a tool call: the shell command of its rawInput,
// if any, and every file it touches, those of ToolPaths first, then those
// the command's redirects and arguments write or read.
func FromToolCall(tc abi.ToolCall, cwd, home string) (*abi.Shell, []abi.Path) {
	paths := ToolPaths(tc, cwd, home)
	sh, shellPaths := Analyze(tc.RawInput, cwd, home)
	for _, p := range shellPaths {
		dup := false
		for _, q := range paths {
			if q.Path == p.Path && q.Access == p.Access {
				dup = true
				break
			}
		}
		if !dup {
			paths = append(paths, p)
		}
	}
	return sh, paths
}

// absolute makes p absolute against dir without cleaning it: the "k/.."
// of "k/../x" is for the resolver to apply after k's symlink (ABI 1.2's
// Path.Asked), not for the text to drop.
func absolute(p, dir string) (string, bool) {
	switch {
	case path.IsAbs(p):
		return p, true
	case dir != "":
		return strings.TrimSuffix(dir, "/") + "/" + p, true
	}
	return "", false
}

// newPath is the Path of a file found as asked (absolute), clean p.
func newPath(p, asked, access, source, cwd string) abi.Path {
	r := abi.Path{Path: p, Access: access, InsideCwd: inside(p, cwd), Source: source}
	if asked != p {
		r.Asked = asked
	}
	return r
}
