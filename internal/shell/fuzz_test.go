package shell

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/permhost/permhost/abi"
)

// FuzzAnalyzeScript: no panic; every command has a pipeline and a stage of
// at least 1, and a source range inside the script; a parsed result has a
// non-empty argv for every command, and at least one command per simple
// command the parser saw; every path is absolute.
func FuzzAnalyzeScript(f *testing.F) {
	for _, s := range []string{
		`git status && curl x | sh`,
		"echo $(rm -rf /) `id` <(cat) >(tee x) $(( $(date) ))",
		`\rm "r"m r''m /bin/rm $CMD ${x} {rm,-rf,/}`,
		`PATH=/evil:$PATH git status; X=1`,
		`echo x > ~/.bashrc; cd sub && echo > out; tee -a a b >/dev/null`,
		`bash -c 'rm -rf / && echo "$(id)"' ; env -i X=1 timeout 5 nice -n 3 nohup sudo -u root ls`,
		`eval "rm -rf" /tmp; find . -name x -exec rm {} \; -delete`,
		"zsh -lc 'ls'\r",
		"bash <<'EOF'\nrm -rf ~\nEOF",
		`f() { cd /; }; f; echo > x; xargs sh -c 'a' | watch -n 1 'b'`,
		`declare -a x=($(id)); let y=$(z); [[ $(a) ]]; (( $(b) )); case $(c) in *) d;; esac`,
		`bash -c ''; eval; sudo; env; command -v x; trap 'rm x' EXIT; flock l -c 'rm y'`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sh, paths := AnalyzeScript(src, "/home/dev/project", "/home/dev")
		if sh == nil || sh.Commands == nil {
			t.Fatal("nil result")
		}
		for _, p := range paths {
			if !strings.HasPrefix(p.Path, "/") {
				t.Fatalf("relative path %q", p.Path)
			}
		}
		for _, c := range sh.Commands {
			if c.Pipeline < 1 || c.Stage < 1 {
				t.Fatalf("%q: pipeline %d stage %d in %q", c.Argv, c.Pipeline, c.Stage, src)
			}
			if r := c.Source; r != nil && (r.Start < 0 || r.Start > r.End || r.End > len(src)) {
				t.Fatalf("%q: source %+v outside %d bytes of %q", c.Argv, *r, len(src), src)
			}
		}
		if !sh.Parsed {
			if sh.Reason == "" {
				t.Fatal("unparsed without a reason")
			}
			return
		}
		for _, c := range sh.Commands {
			if len(c.Argv) == 0 {
				t.Fatalf("empty argv in %q", src)
			}
		}
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
		if err != nil {
			t.Fatalf("parsed true but the parser fails: %v", err)
		}
		calls := 0
		syntax.Walk(file, func(n syntax.Node) bool {
			if _, ok := n.(*syntax.CallExpr); ok {
				calls++
			}
			return true
		})
		if len(sh.Commands) < calls {
			t.Fatalf("%d commands for %d simple commands in %q: %s", len(sh.Commands), calls, src, dump(sh))
		}
	})
}

// FuzzToolCall: a tool call's rawInput, content and kind never make
// Analyze or ToolPaths panic, and every path is absolute with a known
// access.
func FuzzToolCall(f *testing.F) {
	f.Add("execute", []byte(`{"command":"rm -rf build","description":"x"}`), []byte(`[]`))
	f.Add("execute", []byte(`{"command":["/bin/bash","-lc","echo > out"],"cwd":"/srv"}`), []byte(`null`))
	f.Add("edit", []byte(`{"file_path":"a","changes":{"/b":{"type":"update","move_path":"c"}}}`), []byte(`[{"type":"diff","path":"d","newText":""}]`))
	f.Add("search", []byte(`{"path":"~/x","paths":["y",1]}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, kind string, rawInput, content []byte) {
		tc := abi.ToolCall{Kind: kind, RawInput: rawInput, Content: content}
		sh, paths := FromToolCall(tc, "/home/dev/project", "/home/dev")
		if sh != nil && sh.Commands == nil {
			t.Fatal("nil commands")
		}
		for _, p := range paths {
			if !strings.HasPrefix(p.Path, "/") || (p.Access != abi.AccessRead && p.Access != abi.AccessWrite) {
				t.Fatalf("bad path %+v", p)
			}
		}
	})
}
