package config_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/config"
)

// TestIsolationDefaults: the user's own plugins run in-process unless they
// say otherwise; a bundle's run in a process of their own unless the
// user's [[bundle]] entry says otherwise.
func TestIsolationDefaults(t *testing.T) {
	pin := `sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`
	dir := write(t, map[string]string{
		"permhost.toml": `[[plugin]]
path = "mine.wasm"

[[plugin]]
path = "walled.wasm"
isolation = "process"

[[bundle]]
path = "acme"

[[bundle]]
path = "trusted"
isolation = "in-process"
`,
		"mine.wasm": "x", "walled.wasm": "x",
		"acme/bundle.toml":    "name = \"acme\"\nrevision = 1\n[[plugin]]\npath = \"p.wasm\"\n" + pin + "\n",
		"acme/p.wasm":         "x",
		"trusted/bundle.toml": "name = \"trusted\"\nrevision = 1\n",
	})
	cfg, err := config.Load(filepath.Join(dir, "permhost.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{config.IsolationInProcess, config.IsolationProcess} {
		if got := cfg.Plugins[i].Isolation; got != want {
			t.Errorf("plugin[%d].isolation = %q, want %q", i, got, want)
		}
	}
	for i, want := range []string{config.IsolationProcess, config.IsolationInProcess} {
		if got := cfg.Bundles[i].Isolation; got != want {
			t.Errorf("bundle[%d].isolation = %q, want %q", i, got, want)
		}
	}
	m, err := config.LoadBundle(filepath.Join(dir, "acme"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Plugins[0].Isolation; got != config.IsolationProcess {
		t.Errorf("a bundle's plugin: isolation %q, want process", got)
	}
}

// TestIsolationMistakes: a bad value is named with its file, line and key;
// a bundle may not choose its own isolation.
func TestIsolationMistakes(t *testing.T) {
	plugin := "[[plugin]]\nname = \"p\"\npath = \"p.wasm\"\n"
	tests := []struct {
		name, toml string
		line       int
		key, msg   string
	}{
		{"plugin", plugin + "isolation = \"sandbox\"\n", 4, "plugin[0].isolation", `"sandbox" is not one of in-process, process`},
		{"plugin, wrong type", plugin + "isolation = true\n", 4, "plugin[0].isolation", "want a string, got a boolean"},
		{"bundle", "[[bundle]]\npath = \"b\"\nisolation = \"vm\"\n", 3, "bundle[0].isolation", `"vm" is not one of in-process, process`},
		{"misspelt", plugin + "isolaton = \"process\"\n", 4, "plugin[0].isolaton", `did you mean "isolation"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, map[string]string{"permhost.toml": tt.toml, "p.wasm": "x", "b/bundle.toml": "name = \"b\"\nrevision = 1\n"})
			path := filepath.Join(dir, "permhost.toml")
			_, err := config.Load(path)
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v", err)
			}
			if ce.Line != tt.line || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.msg) || !strings.HasPrefix(err.Error(), path+":") {
				t.Errorf("got %v (line %d key %q)", err, ce.Line, ce.Key)
			}
		})
	}
	t.Run("in a bundle", func(t *testing.T) {
		dir := write(t, map[string]string{
			"b/bundle.toml": "name = \"b\"\nrevision = 1\n[[plugin]]\npath = \"p.wasm\"\nisolation = \"in-process\"\n",
			"b/p.wasm":      "x",
		})
		_, err := config.LoadBundle(filepath.Join(dir, "b"))
		var ce *config.Error
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v", err)
		}
		if ce.Key != "plugin[0].isolation" || ce.Line != 5 || !strings.Contains(ce.Msg, "[[bundle]] entry of permhost.toml") {
			t.Errorf("got %v (line %d key %q)", err, ce.Line, ce.Key)
		}
	})
}
