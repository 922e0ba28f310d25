package bundle_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/bundle"
)

// TestDamagedStateFile: a state file that is not an object of revisions is
// an error naming it, never a panic nor a reset (that would reopen the door
// to rollbacks), and it is left as it is.
func TestDamagedStateFile(t *testing.T) {
	for _, tt := range []struct{ name, content string }{
		{"null", "null"},
		{"an array", "[]"},
		{"a string", `"x"`},
		{"a string revision", `{"a":"b"}`},
		{"truncated", `{"acme": 3`},
		{"empty", ""},
		{"a fractional revision", `{"acme": 1.5}`},
		{"two objects", `{"acme": 1} {"acme": 0}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bundles.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			makeBundle(t, dir, 1)
			_, err := bundle.Load(dir, nil, bundle.OpenState(path))
			if !errors.Is(err, bundle.ErrState) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Load = %v, want ErrState naming %s", err, path)
			}
			if after, _ := os.ReadFile(path); string(after) != tt.content {
				t.Fatalf("the damaged file was rewritten: %q", after)
			}
		})
	}
}
