package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/docs"
	"github.com/permhost/permhost/internal/stdplugins"
)

// TestPluginDocsAreTheREADMEs: each standard plugin has its documentation
// in the binary, byte for byte its README in plugins/examples, and the
// copies hold nothing else.
func TestPluginDocsAreTheREADMEs(t *testing.T) {
	for _, name := range stdplugins.Names() {
		src, err := os.ReadFile(filepath.Join("..", "plugins", "examples", name, "README.md"))
		if err != nil {
			t.Errorf("standard plugin %s: %v", name, err)
			continue
		}
		got, ok := docs.Plugin(name)
		if !ok {
			t.Errorf("standard plugin %s has no copy of its README in docs/%s (run make plugin-docs)", name, docs.PluginsDir)
			continue
		}
		if got != string(src) {
			t.Errorf("docs/%s/%s.md differs from plugins/examples/%s/README.md: edit the README, then run make plugin-docs", docs.PluginsDir, name, name)
		}
	}
	entries, err := os.ReadDir(docs.PluginsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".md")
		if _, err := stdplugins.SHA256(name); err != nil || !strings.HasSuffix(e.Name(), ".md") {
			t.Errorf("docs/%s/%s is no standard plugin's README (run make plugin-docs)", docs.PluginsDir, e.Name())
		}
	}
	if _, ok := docs.Plugin("no-such-plugin"); ok {
		t.Error("a plugin that does not exist has documentation")
	}
}
