package examples_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	extism "github.com/extism/go-sdk"

	"github.com/permhost/permhost/abi"
)

// readReq is a read or search the way claude-agent-acp or codex-acp asks it,
// with the paths permhost resolved.
func readReq(kind string, paths ...abi.Path) abi.Request {
	a := &abi.Action{Family: kind}
	for _, p := range paths {
		a.Paths = append(a.Paths, p.Path)
	}
	return abi.Request{
		ABI:        abi.Current,
		DecisionID: "read",
		Session:    abi.Session{ID: "s", Cwd: "/home/dev/project", Home: home},
		ToolCall:   abi.ToolCall{ID: "toolu_05", Title: "Read", Kind: kind, ToolName: "Read"},
		Action:     a,
		Options:    claudeOptions,
		Paths:      paths,
	}
}

// readPath is a read of p, which the OS opens as itself (no symlink).
func readPath(p string, inside bool) abi.Path {
	return abi.Path{Path: p, Resolved: p, Access: abi.AccessRead, InsideCwd: inside, Source: "location"}
}

// readResolved is a read of p, which the OS opens as real (ABI 1.2).
func readResolved(p, real string) abi.Path {
	r := readPath(p, true)
	r.Resolved = real
	return r
}

// asABI is the ABI version the AssemblyScript plugin is built for: 1.4,
// older than the host's, which it needs nothing of (a plugin for stock
// Extism too, it imports only the Extism kernel).
var asABI = abi.Version{Major: 1, Minor: abi.MinorACPv2}

// TestReadonlyAS runs the AssemblyScript plugin through the real host: it
// allows once a read or search of paths inside the cwd, and abstains on
// everything else.
func TestReadonlyAS(t *testing.T) {
	plugin := loadExample(t, "readonly-as")
	if info := plugin.Info(); info.Name != "readonly-as" || plugin.ABI() != asABI {
		t.Errorf("describe = %+v, abi %v", info, plugin.ABI())
	}

	claude := transcriptRequests(t, "claude-allow.jsonl")
	for i := range claude {
		claude[i] = withLocationPaths(claude[i])
	}
	sdkEdit := withLocationPaths(transcriptRequests(t, "sdk-example-allow.jsonl")[0])
	codex := codexExec("cat README.md", parsedShell("cat README.md", argv("cat", "README.md")))
	codex.ToolCall.Kind = abi.KindRead // a shell command dressed as a read
	codex.Action.Family = abi.FamilyRead
	codex.Paths = []abi.Path{readPath("/home/dev/project/README.md", true)}
	// Only the shell command marks it: no analysis, just the action's command.
	commandOnly := codex
	commandOnly.Shell = nil
	noAction := readReq(abi.KindRead, readPath("/home/dev/project/a", true))
	noAction.Action = nil
	noAllowOnce := readReq(abi.KindRead, readPath("/home/dev/project/a", true))
	noAllowOnce.Options = noAllowOnce.Options[:1]
	noCwd := readReq(abi.KindRead, readPath("/home/dev/project/a", true))
	noCwd.Session.Cwd = ""
	homeCwd := readReq(abi.KindRead, readPath("/home/dev/.ssh/id_rsa", true))
	homeCwd.Session.Cwd = "/home/dev"
	rootCwd := readReq(abi.KindRead, readPath("/etc/hosts", true))
	rootCwd.Session.Cwd = "/"
	nonASCII := readReq(abi.KindRead, readPath("/home/dev/project/données/é.md", true))

	cases := []pluginCase{
		{name: "read inside cwd", req: readReq(abi.KindRead, readPath("/home/dev/project/src/main.go", true)), want: abi.OutcomeAllow, optionID: "allow", reason: "readonly-as: read of 1 path inside /home/dev/project"},
		{name: "search of two paths", req: readReq(abi.KindSearch, readPath("/home/dev/project", true), readPath("/home/dev/project/docs/a.md", true)), want: abi.OutcomeAllow, optionID: "allow", reason: "search of 2 paths"},
		{name: "non-ASCII path and reason", req: nonASCII, want: abi.OutcomeAllow, optionID: "allow", reason: "inside /home/dev/project"},
		{name: "terminal escape in a path", req: readReq(abi.KindRead, readPath("/home/dev/project/\x1b]0;pwned\x07/"+strings.Repeat("a", 300), false)), want: abi.OutcomeAbstain, reason: "/home/dev/project/?]0;pwned?/aaa"},
		{name: "read outside cwd", req: readReq(abi.KindRead, readPath("/etc/passwd", false)), want: abi.OutcomeAbstain, reason: "/etc/passwd is outside"},
		{name: "sibling with the cwd as prefix", req: readReq(abi.KindRead, readPath("/home/dev/project-secrets/k", true)), want: abi.OutcomeAbstain, reason: "outside"},
		{name: "dot-dot segment", req: readReq(abi.KindRead, readPath("/home/dev/project/../.ssh/id_rsa", true)), want: abi.OutcomeAbstain, reason: "outside"},
		{name: "one path outside", req: readReq(abi.KindRead, readPath("/home/dev/project/a", true), readPath("/home/dev/.aws/credentials", false)), want: abi.OutcomeAbstain, reason: "credentials is outside"},
		{name: "no paths", req: readReq(abi.KindRead), want: abi.OutcomeAbstain, reason: "names no path"},
		{name: "dotenv", req: readReq(abi.KindRead, readPath("/home/dev/project/.env", true)), want: abi.OutcomeAbstain, reason: ".env is a hidden file"},
		// ABI 1.2: config.txt -> .env; k/../passwd with k -> /etc; a path
		// permhost could not resolve.
		{name: "a symlink to dotenv", req: readReq(abi.KindRead, readResolved("/home/dev/project/config.txt", "/home/dev/project/.env")), want: abi.OutcomeAbstain, reason: "opens /home/dev/project/.env, a hidden file"},
		{name: "dot-dot after a symlink leading out", req: readReq(abi.KindRead, readResolved("/home/dev/project/passwd", "/etc/passwd")), want: abi.OutcomeAbstain, reason: "opens /etc/passwd, outside"},
		{name: "not resolved", req: readReq(abi.KindRead, readResolved("/home/dev/project/a", "")), want: abi.OutcomeAbstain, reason: "cannot resolve"},
		{name: "inside .git", req: readReq(abi.KindSearch, readPath("/home/dev/project/.git/config", true)), want: abi.OutcomeAbstain, reason: "hidden"},
		{name: "cwd is home, .ssh", req: homeCwd, want: abi.OutcomeAbstain, reason: "hidden"},
		{name: "cwd is root", req: rootCwd, want: abi.OutcomeAbstain, reason: "root directory"},
		{name: "dot inside a name is fine", req: readReq(abi.KindRead, readPath("/home/dev/project/a.b/c.d", true)), want: abi.OutcomeAllow, optionID: "allow", reason: "read of 1 path"},
		{name: "write access", req: readReq(abi.KindRead, abi.Path{Path: "/home/dev/project/a", Access: abi.AccessWrite, InsideCwd: true}), want: abi.OutcomeAbstain, reason: "not only read"},
		{name: "no allow_once offered", req: noAllowOnce, want: abi.OutcomeAbstain, reason: "no allow_once option"},
		{name: "cwd unknown", req: noCwd, want: abi.OutcomeAbstain, reason: "cwd is unknown"},
		{name: "shell command", req: codex, want: abi.OutcomeAbstain, reason: "shell command"},
		{name: "shell command without analysis", req: commandOnly, want: abi.OutcomeAbstain, reason: "shell command"},
		{name: "a request without an action (a 1.0 host)", req: noAction, want: abi.OutcomeAbstain, reason: "no action"},
		{name: "claude Bash", req: claude[0], want: abi.OutcomeAbstain, reason: "not a read or search"},
		{name: "claude Write inside cwd", req: claude[1], want: abi.OutcomeAbstain, reason: "not a read or search"},
		{name: "sdk example edit", req: sdkEdit, want: abi.OutcomeAbstain, reason: "not a read or search"},
	}
	runCases(t, plugin, cases)

	ctx := context.Background()
	// The same instance keeps answering after many calls: AssemblyScript's
	// garbage collector frees each call's garbage.
	t.Run("many calls", func(t *testing.T) {
		req := readReq(abi.KindRead, readPath("/home/dev/project/"+strings.Repeat("x", 4000), true))
		for i := 0; i < 2000; i++ {
			d, err := plugin.Decide(ctx, req)
			if err != nil || d.Outcome != abi.OutcomeAllow {
				t.Fatalf("call %d: %+v %v", i, d, err)
			}
		}
	})
}

// The plugin is an ordinary Extism module: the stock Extism Go SDK runs it
// too, and through it the plugin's JSON reader gets input the permhost host
// would never send. Input it cannot read is a failure (non-zero return and
// an error message), never a decision.
func TestReadonlyASOnStockExtism(t *testing.T) {
	ctx := context.Background()
	manifest := extism.Manifest{Wasm: []extism.Wasm{extism.WasmFile{Path: exampleWasm(t, "readonly-as")}}}
	p, err := extism.NewPlugin(ctx, manifest, extism.PluginConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)

	rc, out, err := p.Call(abi.ExportABI, nil)
	var v abi.Version
	if err != nil || rc != 0 || json.Unmarshal(out, &v) != nil || v != asABI {
		t.Fatalf("permhost_abi = %d %s %v", rc, out, err)
	}

	good, _ := json.Marshal(readReq(abi.KindRead, readPath("/home/dev/project/a", true)))
	tests := []struct {
		name, input, want string
	}{
		{"valid", string(good), `"outcome":"allow"`},
		{"escapes", `{"action":{"family":"re\u0061d"},"session":{"cwd":"\/home\/dev"},"paths":[{"path":"/home/dev/\u00e9\ud83d\ude00","resolved":"\/home\/dev\/\u00e9\ud83d\ude00","access":"read","insideCwd":true}],"options":[{"kind":"allow_once"}]}`,
			`"outcome":"allow"`},
		{"duplicate key, last wins", `{"action":{"family":"read","family":"edit"}}`, `not a read or search`},
		{"leading zero", `{"x":01}`, "bad request JSON"},
		{"trailing comma", `{"a":1,}`, "bad request JSON"},
		{"truncated", `{"toolCall":{"kind":"read"`, "bad request JSON"},
		{"bad escape", `{"a":"\x"}`, "bad request JSON"},
		{"short unicode escape", `{"a":"\u12"}`, "bad request JSON"},
		{"raw control character", "{\"a\":\"\n\"}", "bad request JSON"},
		{"trailing data", `{} {}`, "bad request JSON"},
		{"not an object", `[1,2]`, "not a JSON object"},
		{"empty", ``, "bad request JSON"},
		{"deep nesting", strings.Repeat("[", 100000), "nesting too deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, out, err := p.Call(abi.ExportDecide, []byte(tt.input))
			got := string(out)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("rc %d, output %q, error %v; want %q", rc, out, err, tt.want)
			}
			if strings.Contains(tt.want, "JSON") && (rc == 0 || err == nil) {
				t.Errorf("rc %d, err %v: want a failure", rc, err)
			}
		})
	}
}

// The module imports only the Extism host module: AssemblyScript's env.abort
// is replaced, and nothing else sneaks in.
func TestReadonlyASImports(t *testing.T) {
	path := exampleWasm(t, "readonly-as")
	if _, err := exec.LookPath("wasm-objdump"); err != nil {
		// host.Load has already refused any other import; this only adds
		// the exact list.
		t.Skip("wasm-objdump (wabt) not installed")
	}
	out, err := exec.Command("wasm-objdump", "-x", "-j", "Import", path).CombinedOutput()
	if err != nil {
		t.Fatalf("wasm-objdump: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		i := strings.Index(line, "<- ")
		if i < 0 {
			continue
		}
		n++
		if !strings.HasPrefix(line[i+3:], "extism:host/env.") {
			t.Errorf("unexpected import %s", line[i+3:])
		}
	}
	if n == 0 {
		t.Errorf("no imports found in:\n%s", out)
	}
	if fi, err := os.Stat(path); err == nil {
		t.Logf("%s: %d bytes, %d imports", path, fi.Size(), n)
	}
}

// BenchmarkReadonlyAS is one warm decision of the AssemblyScript plugin.
func BenchmarkReadonlyAS(b *testing.B) {
	plugin := loadExample(b, "readonly-as")
	req := withLocationPaths(transcriptRequests(b, "claude-allow.jsonl")[1])
	req.ToolCall.Kind, req.Action.Family = abi.KindRead, abi.FamilyRead
	req.Paths[0].Access = abi.AccessRead
	ctx := context.Background()
	for b.Loop() {
		if d, err := plugin.Decide(ctx, req); err != nil || d.Outcome != abi.OutcomeAllow {
			b.Fatal(d, err)
		}
	}
}
