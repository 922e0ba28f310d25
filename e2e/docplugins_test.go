package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docSection returns the text of docs/abi.md from the heading "### name"
// to the next heading of that level or above.
func docSection(t *testing.T, name string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "abi.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n### "+name+"\n")
	if !ok {
		t.Fatalf("docs/abi.md has no section %q", name)
	}
	if i := regexp.MustCompile(`(?m)^#{1,3} `).FindStringIndex(rest); i != nil {
		rest = rest[:i[0]]
	}
	return rest
}

// codeBlocks returns the fenced blocks of lang in text, in order.
func codeBlocks(text, lang string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// docCases are the test cases every doc plugin (a crude no-delete) passes.
const docCases = `
[[case]]
name = "a delete is rejected"
kind = "delete"
path = "build/out.o"
expect = "reject"
expect_option = "reject"

[[case]]
name = "a read is left to others"
kind = "read"
path = "README.md"
expect = "abstain"
`

// buildAndTest runs the shell command cmd in dir, which must write
// no-delete.wasm, and then the doc cases against that module.
func buildAndTest(t *testing.T, dir, cmd string) {
	t.Helper()
	build := exec.Command("sh", "-c", cmd)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	tests := filepath.Join(dir, "tests.toml")
	if err := os.WriteFile(tests, []byte(`plugin = "no-delete.wasm"`+"\n"+docCases), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runPermhost(t, "test", "--cache-dir", "off", tests)
	if code != 0 || !strings.Contains(out, "2 passed, 0 failed") {
		t.Fatalf("permhost test: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestCPluginFromTheDoc writes the C plugin of docs/abi.md from the doc
// alone — its header and its source — and builds it with the doc's
// commands: without a C library (clang and lld, as make plugins needs
// anyway) and, where wasi-libc is installed, as a WASI reactor.
func TestCPluginFromTheDoc(t *testing.T) {
	section := docSection(t, "C")
	blocks := codeBlocks(section, "c")
	if len(blocks) != 2 || !strings.Contains(section, "<!-- c-example: permhost.h -->\n```c\n"+blocks[0]) {
		t.Fatalf("the C section has %d c blocks, want permhost.h and no-delete.c", len(blocks))
	}
	header, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "examples", "no-force-push", "permhost.h"))
	if err != nil {
		t.Fatal(err)
	}
	if blocks[0] != string(header) {
		t.Errorf("docs/abi.md's permhost.h differs from plugins/examples/no-force-push/permhost.h")
	}
	commands := codeBlocks(section, "sh")
	if len(commands) != 2 || !strings.Contains(commands[0], "--target=wasm32 ") || !strings.Contains(commands[1], "--target=wasm32-wasi ") {
		t.Fatalf("the C section's commands: %q", commands)
	}
	for i, target := range []string{"no C library", "wasi-libc"} {
		t.Run(target, func(t *testing.T) {
			if _, err := exec.LookPath("clang"); err != nil {
				t.Fatal("clang is not installed (Debian: apt-get install clang lld; .ci/run installs it)")
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "permhost.h"), []byte(blocks[0]), 0o644)
			os.WriteFile(filepath.Join(dir, "no-delete.c"), []byte(blocks[1]), 0o644)
			if i == 1 && !haveWASILibc(t, dir) {
				t.Skip("wasi-libc and libclang-rt-14-dev-wasm32 are not installed")
			}
			buildAndTest(t, dir, strings.TrimSpace(commands[i]))
		})
	}
}

// haveWASILibc reports whether clang can link a WASI reactor here.
func haveWASILibc(t *testing.T, dir string) bool {
	probe := filepath.Join(dir, "probe.c")
	os.WriteFile(probe, []byte("#include <stdlib.h>\nvoid *f(void) { return malloc(1); }\n"), 0o644)
	return exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-o", filepath.Join(dir, "probe.wasm"), probe).Run() == nil
}

// TestRustPluginFromTheDoc builds the std-only Rust plugin of docs/abi.md
// with the doc's command, where a rustc with the wasm32-wasi standard
// library is installed (Debian: rustc and libstd-rust-dev-wasm32).
func TestRustPluginFromTheDoc(t *testing.T) {
	section := docSection(t, "Rust")
	src := codeBlocks(section, "rust")
	commands := codeBlocks(section, "sh")
	if len(src) != 1 || len(commands) != 1 || !strings.Contains(commands[0], "rustc ") || !strings.Contains(src[0], "permhost_decide") {
		t.Fatalf("the Rust section has %d rust and %d sh blocks", len(src), len(commands))
	}
	rustc := ""
	for _, c := range []string{"rustc", "/usr/bin/rustc"} {
		if p, err := exec.LookPath(c); err == nil && rustcHasTarget(p, "wasm32-wasi") {
			rustc = p
			break
		}
	}
	if rustc == "" {
		t.Skip("no rustc with the wasm32-wasi standard library (Debian: apt-get install rustc libstd-rust-dev-wasm32)")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "lib.rs"), []byte(src[0]), 0o644)
	cmd := strings.TrimSpace(commands[0])
	buildAndTest(t, dir, rustc+strings.TrimPrefix(cmd, "rustc"))
}

func rustcHasTarget(rustc, target string) bool {
	out, err := exec.Command(rustc, "--print", "sysroot").Output()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(strings.TrimSpace(string(out)), "lib", "rustlib", target))
	return err == nil
}

// TestTestingDocExample runs the full example of docs/testing.md, as
// written, against the team-rules example plugin: every case passes.
func TestTestingDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- testing-example -->\n```toml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/testing.md has no testing-example block")
	}
	const pluginLine = `plugin = "../build/plugins/team-rules.wasm"`
	if !strings.Contains(string(m[1]), pluginLine) {
		t.Fatalf("the example does not name team-rules as %s", pluginLine)
	}
	dir := t.TempDir()
	example := strings.Replace(string(m[1]), pluginLine, fmt.Sprintf("plugin = %q", examplePlugin(t, "team-rules")), 1)
	os.WriteFile(filepath.Join(dir, "team-rules-tests.toml"), []byte(example), 0o644)
	os.MkdirAll(filepath.Join(dir, "requests"), 0o755)
	os.WriteFile(filepath.Join(dir, "requests", "claude-read.json"), []byte(`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"toolu_1","title":"Read README.md","kind":"read","rawInput":{"file_path":"/home/dev/project/README.md"},"locations":[{"path":"/home/dev/project/README.md"}]},"options":[{"optionId":"allow_always","name":"Always Allow","kind":"allow_always"},{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`), 0o644)
	n := strings.Count(example, "[[case]]")
	code, out, errOut := runPermhost(t, "test", "-v", filepath.Join(dir, "team-rules-tests.toml"))
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d passed, 0 failed", n)) {
		t.Fatalf("permhost test: exit %d\n%s\n%s", code, out, errOut)
	}
}
