package config_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/config"
)

func TestBundleMistakes(t *testing.T) {
	pin := `sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`
	tests := []struct {
		name, toml, key, message string
		line                     int
	}{
		{"missing name", "revision = 1\n", "name", `missing key "name"`, 0},
		{"missing revision", "name = \"a\"\n", "revision", `missing key "revision"`, 0},
		{"revision not an integer", "name = \"a\"\nrevision = \"7\"\n", "revision", "want an integer", 2},
		{"unpinned plugin", "name = \"a\"\nrevision = 1\n[[plugin]]\npath = \"p.wasm\"\n", "plugin[0]", `missing key "sha256"`, 3},
		{"plugin outside the bundle", "name = \"a\"\nrevision = 1\n[[plugin]]\npath = \"../p.wasm\"\n" + pin + "\n", "plugin[0].path", "outside the bundle", 4},
		{"per-plugin layer", "name = \"a\"\nrevision = 1\n[[plugin]]\npath = \"p.wasm\"\nlayer = \"admin\"\n", "plugin[0].layer", "bundle's layer", 5},
		{"bad name", "name = \"a b\"\nrevision = 1\n", "name", "is not a bundle name", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, map[string]string{"b/bundle.toml": tt.toml, "b/p.wasm": "x", "p.wasm": "x"})
			_, err := config.LoadBundle(filepath.Join(dir, "b"))
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v", err)
			}
			if ce.Key != tt.key || !strings.Contains(ce.Msg, tt.message) || (tt.line != 0 && ce.Line != tt.line) {
				t.Errorf("got %v (line %d key %q)", err, ce.Line, ce.Key)
			}
		})
	}
}

// FuzzParseBundle: a bundle.toml is someone else's file. ParseBundle gives
// a manifest or an error wrapping ErrInvalid, and a manifest's plugins are
// pinned and inside the bundle directory.
func FuzzParseBundle(f *testing.F) {
	pin := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	f.Add([]byte("name = \"acme\"\nrevision = 3\nlayer = \"team\"\n[[plugin]]\nname = \"p\"\npath = \"p.wasm\"\nsha256 = \"" + pin + "\"\n"))
	f.Add([]byte("name = \"acme\"\nrevision = 999999\nlayer = \"user\"\n"))
	f.Add([]byte("name = \"a\"\nrevision = 1\n[[plugin]]\npath = \"../p.wasm\"\nsha256 = \"" + pin + "\"\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := config.ParseBundle(dir, data)
		if err != nil {
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("error not wrapped: %v", err)
			}
			return
		}
		if b == nil || b.Revision < 0 || b.Name == "" {
			t.Fatalf("manifest %+v without an error", b)
		}
		for _, p := range b.Plugins {
			if len(p.SHA256) != 64 {
				t.Fatalf("plugin %s not pinned: %q", p.Name, p.SHA256)
			}
			if p.Std == "" && !strings.HasPrefix(p.Path, dir+string(filepath.Separator)) {
				t.Fatalf("plugin %s outside the bundle: %s", p.Name, p.Path)
			}
		}
	})
}
