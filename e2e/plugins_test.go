package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// repoRoot is the repository root (tests run in e2e/).
var repoRoot, _ = filepath.Abs("..")

var buildPlugins sync.Once

// examplePlugin returns the path of a built example plugin, running
// `make plugins` once when the plugins are missing (the Makefile's test
// target has built them already).
func examplePlugin(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("PERMHOST_PLUGINS_DIR")
	if dir == "" {
		dir = filepath.Join(repoRoot, "build", "plugins")
	}
	p := filepath.Join(dir, name+".wasm")
	if _, err := os.Stat(p); err != nil {
		buildPlugins.Do(func() {
			cmd := exec.Command("make", "-C", repoRoot, "plugins")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make plugins: %v\n%s", err, out)
			}
		})
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("example plugin %s not built: %v", name, err)
	}
	return p
}
