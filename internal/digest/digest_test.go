package digest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDigests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	for _, tc := range []struct{ content, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"x", "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"},
	} {
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := File(path)
		if err != nil || got != tc.want {
			t.Errorf("File(%q) = %s, %v; want %s", tc.content, got, err, tc.want)
		}
		if got := Bytes([]byte(tc.content)); got != tc.want {
			t.Errorf("Bytes(%q) = %s, want %s", tc.content, got, tc.want)
		}
	}
	if _, err := File(filepath.Join(t.TempDir(), "missing")); !os.IsNotExist(err) {
		t.Errorf("File(missing) error = %v, want not-exist", err)
	}
}
