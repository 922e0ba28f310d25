package fspath_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/fspath"
)

// tree makes, under a fresh directory (itself resolved, so that a
// symlinked TMPDIR does not show), the files and symlinks of the attacker
// cases and a few more; it returns the directory.
//
//	home/.ssh/config      home/.config/      proj/src/    proj/other/
//	proj/.env             proj/k -> ../home/.config  (absolute)
//	proj/config.txt -> .env                 proj/src/l -> ../other
//	proj/dangling -> missing/new.txt        proj/loop -> loop
//	proj/file.txt         proj/abs -> <dir>/home
func tree(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"home/.ssh", "home/.config", "proj/src", "proj/other"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"home/.ssh/config", "proj/.env", "proj/file.txt", "proj/outside.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"proj/k":          filepath.Join(dir, "home/.config"),
		"proj/config.txt": ".env",
		"proj/src/l":      "../other",
		"proj/dangling":   "missing/new.txt",
		"proj/loop":       "loop",
		"proj/abs":        filepath.Join(dir, "home"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestResolve(t *testing.T) {
	dir := tree(t)
	for _, tc := range []struct {
		path, want string
		err        error
	}{
		// The three attacker cases: what the text says is not what opens.
		{path: "proj/k/../.ssh/config", want: "home/.ssh/config"},
		{path: "proj/config.txt", want: "proj/.env"},
		{path: "proj/src/l/../outside.txt", want: "proj/outside.txt"},
		// Plain paths and lexical noise.
		{path: "proj/file.txt", want: "proj/file.txt"},
		{path: "proj//./src/../file.txt", want: "proj/file.txt"},
		{path: "proj/abs/.ssh/config", want: "home/.ssh/config"},
		// A file a write creates: its longest existing prefix resolved,
		// the rest appended; a ".." after a missing name undoes it.
		{path: "proj/src/l/new/deeper.txt", want: "proj/other/new/deeper.txt"},
		{path: "proj/new/../k/x", want: "home/.config/x"},
		{path: "proj/new/../../proj/.env", want: "proj/.env"},
		// A dangling symlink is its target.
		{path: "proj/dangling", want: "proj/missing/new.txt"},
		// Failures: nothing to judge on.
		{path: "proj/loop", err: fspath.ErrLoop},
		{path: "proj/file.txt/x", err: fspath.ErrNotDir},
		{path: "proj/file.txt/..", err: fspath.ErrNotDir},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := fspath.Resolve(fspath.Join(dir, tc.path))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Resolve = %q, %v; want %v", got, err, tc.err)
				}
				return
			}
			if want := filepath.Join(dir, tc.want); err != nil || got != want {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, want)
			}
		})
	}
	if _, err := fspath.Resolve("proj/file.txt"); !errors.Is(err, fspath.ErrNotAbsolute) {
		t.Errorf("a relative path: %v, want ErrNotAbsolute", err)
	}
	if _, err := fspath.Resolve(dir + strings.Repeat("/a", 2048)); !errors.Is(err, fspath.ErrTooLong) {
		t.Errorf("a path longer than PATH_MAX: %v, want ErrTooLong", err)
	}
}

func TestJoin(t *testing.T) {
	for _, tc := range []struct{ dir, p, want string }{
		{"/p", "k/../x", "/p/k/../x"},
		{"/p/", "x", "/p/x"},
		{"/p", "/abs/../y", "/abs/../y"},
		{"rel", "x", ""},
		{"/p", "", ""},
	} {
		if got := fspath.Join(tc.dir, tc.p); got != tc.want {
			t.Errorf("Join(%q, %q) = %q, want %q", tc.dir, tc.p, got, tc.want)
		}
	}
}

// FuzzResolve checks Resolve against the kernel: whenever the kernel opens
// a path, Resolve names the same file, clean and free of symlinks; the
// path Resolve gives is never somewhere the kernel does not reach.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"proj/k/../.ssh/config", "proj/config.txt", "proj/src/l/../outside.txt",
		"proj/abs/../proj/src/l/../.env", "proj/dangling", "proj/loop/x", "proj/new/../../home", "../../.."} {
		f.Add(s)
	}
	dir := tree(f)
	f.Fuzz(func(t *testing.T, rel string) {
		if strings.ContainsRune(rel, 0) || len(rel) > 512 {
			return
		}
		p := fspath.Join(dir, rel)
		got, err := fspath.Resolve(p)
		kernel, kerr := os.Stat(p)
		if kerr == nil {
			if err != nil {
				t.Fatalf("the kernel opens %q, Resolve fails: %v", p, err)
			}
			r, err := os.Lstat(got)
			if err != nil || !os.SameFile(kernel, r) {
				t.Fatalf("Resolve(%q) = %q, not the file the kernel opens (%v)", p, got, err)
			}
		}
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("Resolve(%q) = %q, not clean and absolute", p, got)
		}
		if real, err := filepath.EvalSymlinks(got); err == nil && real != got {
			t.Fatalf("Resolve(%q) = %q, which still holds a symlink (%q)", p, got, real)
		}
	})
}
