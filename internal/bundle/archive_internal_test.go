package bundle

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name string
	typ  byte
	body string
}

func tarOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			hdr.Size, hdr.Linkname = 0, "bundle.toml"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// TestUnpackRefuses: an archive is someone else's bytes; only regular
// files with clean relative names, each once, are a bundle.
func TestUnpackRefuses(t *testing.T) {
	reg := func(name string) entry { return entry{name, tar.TypeReg, "x"} }
	tests := []struct {
		name    string
		entries []entry
		msg     string
	}{
		{"symlink", []entry{{"link", tar.TypeSymlink, ""}}, `"link" is not a regular file`},
		{"hard link", []entry{{"link", tar.TypeLink, ""}}, `"link" is not a regular file`},
		{"directory", []entry{{"d/", tar.TypeDir, ""}}, "is not a regular file"},
		{"parent", []entry{reg("../x")}, `file name "../x"`},
		{"absolute", []entry{reg("/etc/x")}, `file name "/etc/x"`},
		{"dot", []entry{reg("./x")}, `file name "./x"`},
		{"backslash", []entry{reg(`a\b`)}, "file name"},
		{"newline", []entry{reg("a\nb")}, "file name"},
		{"twice", []entry{reg("a"), reg("a")}, `"a" twice`},
		{"signature twice", []entry{reg(SignatureFile), reg(SignatureFile)}, "twice"},
		{"file and directory", []entry{reg("a"), reg("a/b")}, `"a" is a file and a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := unpack(t.TempDir(), tarOf(t, tt.entries...))
			if !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want ErrArchive: %s", err, tt.msg)
			}
		})
	}
	t.Run("truncated", func(t *testing.T) {
		a := tarOf(t, entry{"a", tar.TypeReg, strings.Repeat("x", 2000)})
		if _, err := unpack(t.TempDir(), a[:1024]); !errors.Is(err, ErrArchive) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestPackUnpack: Pack is deterministic, and unpacking gives back every
// file, the signature apart, as Load reads them from the directory; the
// in-memory files answer bundle.toml's paths (memFS).
func TestPackUnpack(t *testing.T) {
	dir := t.TempDir()
	wasm := "\x00asm\x01\x00\x00\x00"
	files := map[string]string{"bundle.toml": "name = \"a\"\nrevision = 1\ntests = [\"t/x.toml\"]\n", "p.wasm": wasm, "t/x.toml": "# x\n", SignatureFile: "sig\n"}
	for name, body := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	a, err := Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Pack(dir); !bytes.Equal(a, b) {
		t.Fatal("Pack is not deterministic")
	}
	f, err := unpack("/nowhere/a", a)
	if err != nil {
		t.Fatal(err)
	}
	if string(f.sig) != "sig\n" || len(f.data) != 3 || string(f.data["t/x.toml"]) != "# x\n" {
		t.Fatalf("unpacked %v sig %q", f.data, f.sig)
	}
	m, err := f.parse()
	if err != nil {
		t.Fatal(err)
	}
	if m.Dir != "/nowhere/a" || len(m.Tests) != 1 || m.Tests[0] != "/nowhere/a/t/x.toml" {
		t.Fatalf("parsed %+v", m)
	}
	// A test file named but not in the archive is a mistake, as on disk.
	delete(f.data, "t/x.toml")
	if _, err := f.parse(); err == nil || !strings.Contains(err.Error(), "t/x.toml") {
		t.Fatalf("missing test file: %v", err)
	}
	if _, err := fs.Stat(memFS(f.data), "t"); err == nil {
		t.Fatal("memFS: a directory with no file in it exists")
	}
	if info, err := fs.Stat(memFS(map[string][]byte{"t/x": nil}), "t"); err != nil || !info.IsDir() {
		t.Fatalf("memFS: implied directory: %v", err)
	}
}

// FuzzUnpack: unpack never panics, and what it accepts has only clean,
// relative names.
func FuzzUnpack(f *testing.F) {
	f.Add(tarOf(f, entry{"bundle.toml", tar.TypeReg, "name = \"a\"\nrevision = 1\n"}))
	f.Add(tarOf(f, entry{"a", tar.TypeReg, "x"}, entry{"a/b", tar.TypeReg, "y"}))
	f.Add(tarOf(f, entry{"l", tar.TypeSymlink, ""}))
	f.Fuzz(func(t *testing.T, a []byte) {
		got, err := unpack("/b", a)
		if err != nil {
			return
		}
		for name := range got.data {
			if !fs.ValidPath(name) || name == "." || name == SignatureFile {
				t.Fatalf("accepted %q", name)
			}
		}
		got.parse() // must not panic
	})
}
