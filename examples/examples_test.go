package examples_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/permhost/permhost/examples"
	"github.com/permhost/permhost/internal/config"
)

// The default policy uses only standard plugins, so it loads with no file
// beside it (what `permhost demo` and `permhost init` rely on).
func TestConfigUsesStandardPlugins(t *testing.T) {
	cfg, err := config.Parse(examples.Config, "examples/permhost.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range cfg.Plugins {
		if p.Std == "" {
			t.Errorf("plugin %s is a file (%s), not a standard plugin", p.Name, p.Path)
		}
		got = append(got, p.Name+"="+p.Path)
	}
	want := "protect-secrets=std:protect-secrets plan-mode=std:plan-mode team-rules=std:team-rules explainer=std:explainer"
	if strings.Join(got, " ") != want {
		t.Errorf("plugins %q, want %q", strings.Join(got, " "), want)
	}
}

// WithPluginsDir points the same policy at plugins built from the sources.
func TestWithPluginsDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), `built "plugins"`)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"protect-secrets", "plan-mode", "team-rules", "explainer"} {
		if err := os.WriteFile(filepath.Join(dir, n+".wasm"), []byte("\x00asm"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := examples.WithPluginsDir(examples.Config, dir)
	if regexp.MustCompile(`(?m)^path = "std:`).Match(data) {
		t.Errorf("a std: path is left:\n%s", data)
	}
	cfg, err := config.Parse(data, "permhost.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.Plugins {
		if want := filepath.Join(dir, p.Name+".wasm"); p.Path != want || p.Std != "" {
			t.Errorf("plugin %s: path %q std %q, want %q", p.Name, p.Path, p.Std, want)
		}
	}
}

func ExampleWithPluginsDir() {
	cfg := []byte("[[plugin]]\npath = \"std:team-rules\"\n# path = \"std:no-force-push\" stays a comment\n")
	fmt.Print(string(examples.WithPluginsDir(cfg, "/src/permhost/build/plugins")))
	// Output:
	// [[plugin]]
	// path = "/src/permhost/build/plugins/team-rules.wasm"
	// # path = "std:no-force-push" stays a comment
}
