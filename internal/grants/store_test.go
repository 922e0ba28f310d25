package grants_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/permhost/permhost/internal/grants"
)

func storeIn(t *testing.T) (*grants.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "permhost", grants.FileName)
	return grants.Open(path), path
}

func TestStoreAddMatchRevoke(t *testing.T) {
	s, path := storeIn(t)
	const proj = "/home/dev/project"
	req := shellRequest("s1", proj, "", "rm -rf build")
	if _, ok, err := s.Match(req); ok || err != nil {
		t.Fatalf("an empty store matched (%v, %v)", ok, err)
	}
	g, err := s.Add(offered(t, req, grants.ScopeProject))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(g.ID, "g-") || g.Created.IsZero() {
		t.Fatalf("added %+v", g)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", st.Mode().Perm())
	}
	dst, _ := os.Stat(filepath.Dir(path))
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", dst.Mode().Perm())
	}
	// Another process's view of the same file (a second store) matches.
	other := grants.Open(path)
	m, ok, err := other.Match(req)
	if !ok || err != nil || m.ID != g.ID {
		t.Fatalf("second store: %+v %v %v", m, ok, err)
	}
	if _, ok, _ := other.Match(shellRequest("s1", proj, "", "rm -rf other")); ok {
		t.Fatal("rm -rf other matched")
	}
	if _, err := s.Revoke(g.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := other.Match(req); ok || err != nil {
		t.Fatalf("a revoked grant still matched in the other store (%v, %v)", ok, err)
	}
	if _, err := s.Revoke(g.ID); !errors.Is(err, grants.ErrNotFound) {
		t.Fatalf("revoking again: %v, want ErrNotFound", err)
	}
	// Only the file and its lock are left: no temporary files.
	entries, _ := os.ReadDir(filepath.Dir(path))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != fmt.Sprint([]string{grants.FileName, grants.FileName + ".lock"}) {
		t.Errorf("directory holds %v", names)
	}
}

func TestStoreNarrowsItsDirectory(t *testing.T) {
	s, path := storeIn(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(offered(t, shellRequest("s1", "/p", "", "ls"), grants.ScopeSession)); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Dir(path))
	if st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", st.Mode().Perm())
	}
}

func TestStoreClear(t *testing.T) {
	s, _ := storeIn(t)
	for _, p := range []string{"/a", "/b", "/a"} {
		if _, err := s.Add(offered(t, shellRequest("s1", p, "", "ls"), grants.ScopeProject)); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := s.Clear("/a/")
	if err != nil || len(gone) != 2 {
		t.Fatalf("Clear(/a) removed %d (%v), want 2", len(gone), err)
	}
	left, _ := s.List()
	if len(left) != 1 || left[0].Project != "/b" {
		t.Fatalf("left %+v", left)
	}
	if gone, _ := s.Clear(""); len(gone) != 1 {
		t.Fatalf("Clear() removed %d, want 1", len(gone))
	}
	if left, _ := s.List(); len(left) != 0 {
		t.Fatalf("left %+v", left)
	}
}

// TestStoreConcurrentAdds: stores of one file adding at once lose nothing
// (the lock), and every grant stays valid.
func TestStoreConcurrentAdds(t *testing.T) {
	_, path := storeIn(t)
	var wg sync.WaitGroup
	const n = 16
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := grants.Open(path) // one store each, as separate processes
			if _, err := s.Add(offered(t, shellRequest("s1", "/p", "", fmt.Sprintf("echo %d", i)), grants.ScopeProject)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	list, err := grants.Open(path).List()
	if err != nil || len(list) != n {
		t.Fatalf("%d grants (%v), want %d", len(list), err, n)
	}
}

// TestUntrustedFile: a file permhost did not write as it writes grants
// nothing and cannot be added to.
func TestUntrustedFile(t *testing.T) {
	good := func(t *testing.T) (string, string) {
		s, path := storeIn(t)
		if _, err := s.Add(offered(t, shellRequest("s1", "/p", "", "ls"), grants.ScopeProject)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return path, string(b)
	}
	tests := []struct {
		name   string
		change func(path, text string) string
		mode   os.FileMode
	}{
		{"world-writable", func(_, s string) string { return s }, 0o666},
		{"group-writable", func(_, s string) string { return s }, 0o620},
		{"not JSON", func(_, s string) string { return s[:len(s)/2] }, 0o600},
		{"an unknown field", func(_, s string) string { return strings.Replace(s, `"scope"`, `"everything": true, "scope"`, 1) }, 0o600},
		{"a key spelt in another case", func(_, s string) string { return strings.Replace(s, `"project":`, `"Project":`, 1) }, 0o600},
		{"a key twice", func(_, s string) string { return strings.Replace(s, `"scope"`, `"kind": "command", "scope"`, 1) }, 0o600},
		{"an invalid grant", func(_, s string) string { return strings.Replace(s, `"scope": "project"`, `"scope": "everywhere"`, 1) }, 0o600},
		{"another version", func(_, s string) string { return strings.Replace(s, `"version": 1`, `"version": 2`, 1) }, 0o600},
		{"a second object", func(_, s string) string { return s + "{}" }, 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, text := good(t)
			if err := os.WriteFile(path, []byte(tt.change(path, text)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			s := grants.Open(path)
			if _, ok, err := s.Match(shellRequest("s1", "/p", "", "ls")); ok || !errors.Is(err, grants.ErrUntrusted) {
				t.Fatalf("Match = %v, %v; want no match and ErrUntrusted", ok, err)
			}
			if _, err := s.Add(offered(t, shellRequest("s1", "/p", "", "ls"), grants.ScopeProject)); !errors.Is(err, grants.ErrUntrusted) {
				t.Fatalf("Add = %v, want ErrUntrusted", err)
			}
			after, _ := os.ReadFile(path)
			if string(after) != tt.change(path, text) {
				t.Error("an untrusted file was rewritten")
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"grants":[]}`))
	f.Add([]byte(`{"version":1,"grants":[{"id":"g-00aa","scope":"project","kind":"command","project":"/p","cwd":"/p","commands":[{"argv":["ls"]}],"source":"ls","name":"Allow","created":"2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"version":1,"grants":[{"id":"g-00aa","scope":"session","session":"s","kind":"edit","project":"/p","dir":"/p/src","resolved":"/p/src","name":"x","created":"2026-01-01T00:00:00Z"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := grants.Decode(data)
		if err != nil {
			if !errors.Is(err, grants.ErrUntrusted) {
				t.Fatalf("error not ErrUntrusted: %v", err)
			}
			return
		}
		for _, g := range list {
			if err := g.Validate(); err != nil {
				t.Fatalf("decoded an invalid grant: %v", err)
			}
			// No grant without a project, nor one whose paths are not clean.
			if !filepath.IsAbs(g.Project) {
				t.Fatalf("grant without an absolute project: %+v", g)
			}
		}
	})
}

// TestCorruptFileShapes: a grants file of the wrong shape is an error
// naming the file, from every method, never a panic, and it is left as it
// is.
func TestCorruptFileShapes(t *testing.T) {
	for _, tt := range []struct{ name, content, want string }{
		{"null", "null", "got null"},
		{"an array", "[]", "got an array"},
		{"a string", `"x"`, "got a string"},
		{"a number", "7", "got a number"},
		{"another object", `{"a":"b"}`, `unknown field "a"`},
		{"truncated", `{"version": 1, "grants": [`, "invalid JSON"},
		{"empty", "", "invalid JSON"},
		{"grants an object", `{"version": 1, "grants": {}}`, "cannot unmarshal object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, path := storeIn(t)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			s := grants.Open(path)
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, grants.ErrUntrusted) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s = %v, want ErrUntrusted naming %s and saying %q", what, err, path, tt.want)
				}
			}
			_, err := s.List()
			check("List", err)
			_, _, err = s.Match(shellRequest("s1", "/p", "", "ls"))
			check("Match", err)
			_, err = s.Add(offered(t, shellRequest("s1", "/p", "", "ls"), grants.ScopeProject))
			check("Add", err)
			_, err = s.Clear("")
			check("Clear", err)
			if after, _ := os.ReadFile(path); string(after) != tt.content {
				t.Errorf("the file was rewritten: %q", after)
			}
		})
	}
}
