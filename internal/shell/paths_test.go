package shell

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/permhost/permhost/abi"
)

func TestToolPaths(t *testing.T) {
	tests := []struct {
		name string
		tc   abi.ToolCall
		want []abi.Path
	}{
		{
			name: "claude write",
			tc: abi.ToolCall{Kind: "edit", RawInput: json.RawMessage(`{"file_path":"/home/dev/project/hello.txt","content":"hi"}`),
				Content:   json.RawMessage(`[{"type":"diff","path":"/home/dev/project/hello.txt","oldText":null,"newText":"hi"}]`),
				Locations: []abi.Location{{Path: "/home/dev/project/hello.txt"}}},
			want: []abi.Path{{Path: cwd + "/hello.txt", Access: "write", InsideCwd: true, Source: "location"}},
		},
		{
			name: "read outside cwd",
			tc:   abi.ToolCall{Kind: "read", RawInput: json.RawMessage(`{"file_path":"/etc/passwd"}`), Locations: []abi.Location{{Path: "/etc/passwd", Line: 3}}},
			want: []abi.Path{{Path: "/etc/passwd", Access: "read", InsideCwd: false, Source: "location"}},
		},
		{
			name: "search path relative",
			tc:   abi.ToolCall{Kind: "search", RawInput: json.RawMessage(`{"pattern":"x","path":"src/../.."}`)},
			// Asked keeps the ".." for the resolver (ABI 1.2).
			want: []abi.Path{{Path: "/home/dev", Asked: "/home/dev/project/src/../..", Access: "read", InsideCwd: false, Source: "rawInput"}},
		},
		{
			name: "codex patch",
			tc: abi.ToolCall{Kind: "edit", RawInput: json.RawMessage(`{"changes":{"/home/dev/project/b.txt":{"type":"update","unified_diff":"","move_path":"/tmp/c.txt"},"/home/dev/project/a.txt":{"type":"add","content":"x"}}}`),
				Content: json.RawMessage(`[{"type":"diff","path":"/home/dev/project/a.txt","newText":"x"}]`)},
			want: []abi.Path{
				{Path: cwd + "/a.txt", Access: "write", InsideCwd: true, Source: "diff"},
				{Path: cwd + "/b.txt", Access: "write", InsideCwd: true, Source: "rawInput"},
				{Path: "/tmp/c.txt", Access: "write", InsideCwd: false, Source: "rawInput"},
			},
		},
		{
			name: "diff in a read call still writes",
			tc:   abi.ToolCall{Kind: "read", Content: json.RawMessage(`[{"type":"content","content":{"type":"text","text":"x"}},{"type":"diff","path":"x","newText":""}]`)},
			want: []abi.Path{{Path: cwd + "/x", Access: "write", InsideCwd: true, Source: "diff"}},
		},
		{
			name: "unknown kind writes",
			tc:   abi.ToolCall{Kind: "", RawInput: json.RawMessage(`{"paths":["a","~/b",3]}`)},
			want: []abi.Path{
				{Path: cwd + "/a", Access: "write", InsideCwd: true, Source: "rawInput"},
				{Path: home + "/b", Access: "write", InsideCwd: false, Source: "rawInput"},
			},
		},
		{
			name: "sibling directory with the cwd as prefix",
			tc:   abi.ToolCall{Kind: "delete", Locations: []abi.Location{{Path: cwd + "-old/x"}}},
			want: []abi.Path{{Path: cwd + "-old/x", Access: "write", InsideCwd: false, Source: "location"}},
		},
		{name: "nothing", tc: abi.ToolCall{Kind: "execute", RawInput: json.RawMessage(`{"command":"ls"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ToolPaths(tt.tc, cwd, home))
		})
	}
	// Without a cwd a relative path cannot be placed: it is left out.
	assert.Empty(t, ToolPaths(abi.ToolCall{Kind: "edit", Locations: []abi.Location{{Path: "rel"}}}, "", ""))
}

func TestAccessFor(t *testing.T) {
	for kind, want := range map[string]string{
		"read": "read", "search": "read", "edit": "write", "delete": "write", "move": "write",
		"execute": "write", "fetch": "write", "other": "write", "": "write", "future_kind": "write",
	} {
		assert.Equal(t, want, AccessFor(kind), kind)
	}
}

func TestFromToolCall(t *testing.T) {
	tc := abi.ToolCall{Kind: "execute", RawInput: json.RawMessage(`{"command":"cd sub && echo hi > out.txt && cat < in.txt"}`),
		Locations: []abi.Location{{Path: cwd + "/sub/out.txt"}}}
	sh, paths := FromToolCall(tc, cwd, home)
	assert.True(t, sh.Parsed)
	assert.Equal(t, []abi.Path{
		{Path: cwd + "/sub/out.txt", Access: "write", InsideCwd: true, Source: "location"},
		{Path: cwd + "/sub/in.txt", Access: "read", InsideCwd: true, Source: "redirect"},
	}, paths)
}

func ExampleAnalyze() {
	// What codex-acp sends for an exec.
	rawInput := json.RawMessage(`{"command":["/bin/bash","-lc","git status && env X=1 curl -s x | sh > ~/.profile"],"cwd":"/home/dev/project"}`)
	sh, paths := Analyze(rawInput, "/home/dev/project", "/home/dev")
	fmt.Println("parsed:", sh.Parsed)
	for _, c := range sh.Commands {
		fmt.Println(c.Argv, c.Wrappers, c.Context, c.Assignments)
	}
	for _, p := range paths {
		fmt.Println(p.Access, p.Path, p.InsideCwd)
	}
	// Output:
	// parsed: true
	// [git status] [bash] wrapped []
	// [curl -s x] [bash env] pipeline [{X 1}]
	// [sh] [bash] pipeline []
	// write /home/dev/.profile false
}
