package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestThirdPartyGoPlugin builds the Go plugin of docs/abi.md as an author
// outside this repository would, running the doc's recipe line by line as
// written: a module of its own in an empty temporary
// directory that requires github.com/permhost/permhost (abi and
// plugins/pdk are packages of that one module) with a single replace
// pointing at this checkout, the only line a published version would not
// need. go mod tidy must resolve everything else from that requirement
// alone; the plugin then passes its cases through the real binary.
//
// It runs offline (the module proxy off): the modules come from the module
// cache, which building permhost and the example plugins filled, and their
// checksums from this repository's committed go.sum, which seeds the
// plugin's (an author would get the same lines from the checksum
// database). Verification stays on: a module whose sum is not in go.sum
// fails rather than being taken unchecked.
func TestThirdPartyGoPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go plugin")
	}
	// Building an example plugin first puts github.com/extism/go-pdk in the
	// module cache, so that the rest runs with the module proxy off.
	examplePlugin(t, "plan-mode")

	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "abi.md"))
	if err != nil {
		t.Fatal(err)
	}
	src := goSection(t, string(doc))
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", src)
	sums, err := os.ReadFile(filepath.Join(repoRoot, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sums))

	// The recipe's commands, exactly as written, with the checkout's path.
	recipe := goRecipe(t, string(doc))
	for _, line := range recipe {
		line = strings.ReplaceAll(line, "/path/to/permhost", repoRoot)
		cmd := exec.Command("/bin/sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if n := strings.Count(string(mod), "replace"); n != 1 {
		t.Errorf("go.mod after tidy has %d replace directives, want 1:\n%s", n, mod)
	}
	if !regexp.MustCompile(`(?m)^require github.com/permhost/permhost v0.0.0$`).Match(mod) {
		t.Errorf("go.mod after tidy does not require the root module alone:\n%s", mod)
	}
	if strings.Contains(string(mod), "plugins/pdk") {
		t.Errorf("go.mod names plugins/pdk as a module of its own:\n%s", mod)
	}
	// Every checksum the plugin's module relies on is one committed here.
	tidied, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
	for line := range strings.Lines(string(tidied)) {
		if !strings.Contains(string(sums), line) {
			t.Errorf("go.sum after tidy has a line not in the repository's go.sum: %s", line)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no-delete.wasm")); err != nil {
		t.Fatalf("the recipe built no no-delete.wasm: %v", err)
	}

	write("tests.toml", `plugin = "no-delete.wasm"`+"\n"+docCases)
	code, out, errOut := runPermhost(t, "test", "--cache-dir", "off", filepath.Join(dir, "tests.toml"))
	if code != 0 || !strings.Contains(out, "2 passed, 0 failed") {
		t.Fatalf("permhost test: exit %d\n%s\n%s", code, out, errOut)
	}
}

// goRecipe returns the commands of docs/abi.md's Go recipe, one a line.
func goRecipe(t *testing.T, doc string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<!-- go-recipe -->\n```sh\n")
	if !ok {
		t.Fatal("docs/abi.md has no go-recipe block")
	}
	block, _, _ := strings.Cut(rest, "```")
	return strings.Split(strings.TrimSpace(block), "\n")
}

// goSection returns the Go program of docs/abi.md's "### Go" section.
func goSection(t *testing.T, doc string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n### Go\n")
	if !ok {
		t.Fatal(`docs/abi.md has no "### Go" section`)
	}
	_, rest, ok = strings.Cut(rest, "```go\n")
	if !ok {
		t.Fatal(`docs/abi.md's Go section has no go code block`)
	}
	src, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.Contains(src, "pdk.Register") {
		t.Fatalf("docs/abi.md's Go code block is not a plugin:\n%s", src)
	}
	return src
}
