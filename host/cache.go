package host

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"

	"github.com/permhost/permhost/internal/digest"
	"github.com/permhost/permhost/sandbox"
)

// manifestName is the file in each cache entry listing the sha256 of every
// file wazero wrote there. wazero checks only a CRC of the machine code of
// an entry, not the function offsets beside it, so an entry is trusted only
// when every file matches the manifest written right after the compile that
// produced it.
const manifestName = "permhost.sum"

// instrumentedName is the entry's file holding the module as
// sandbox.Instrument rewrote it: a load that finds it (verified like the
// rest) skips the rewrite. Its name carries the rewrite's version; an entry
// without the current one is from an older permhost and is cleared.
const instrumentedName = "instrumented-v" + sandbox.InstrumentVersion + ".wasm"

// shapeName is the entry's file holding the module's sandbox.Shape (JSON),
// what the load-time verifier counted: a warm load checks it against the
// limits instead of reading the module again. It is a function of the
// module alone; the name's version changes with the Shape's fields.
const shapeName = "shape-v1.json"

// compileCache is the on-disk compile cache entry of one module.
type compileCache struct {
	dir    string // <root>/<module sha256>
	wazero wazero.CompilationCache
	// verified are the files as verified at open; seal rehashes only when
	// the compile changed them.
	verified map[string]fileStamp
	// instrumented is the verified instrumented module, nil when the entry
	// has none yet.
	instrumented []byte
	// shape is the verified shape of the module, nil when the entry has
	// none yet.
	shape *sandbox.Shape
}

type fileStamp struct {
	size    int64
	modTime int64
}

func stamps(dir string, names []string) (map[string]fileStamp, error) {
	m := make(map[string]fileStamp, len(names))
	for _, n := range names {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil {
			return nil, err
		}
		m[n] = fileStamp{size: fi.Size(), modTime: fi.ModTime().UnixNano()}
	}
	return m, nil
}

// defaultCacheRoot returns os.UserCacheDir()/permhost/wasm.
func defaultCacheRoot() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "permhost", "wasm"), nil
}

// openCache opens the entry for the module sha in root ("" for the default
// root, "off" for no cache). An entry that fails verification is deleted, so
// that the module is compiled afresh.
func openCache(root, sha string, logger *slog.Logger) (*compileCache, error) {
	if root == "off" {
		return nil, nil
	}
	if root == "" {
		var err error
		if root, err = defaultCacheRoot(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCacheDir, err)
		}
		// Only the directories permhost owns are made private; the user's
		// cache base is left as it is.
		if err := ensurePrivateDir(filepath.Dir(root)); err != nil {
			return nil, err
		}
	}
	if err := ensurePrivateDir(root); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, sha)
	if err := ensurePrivateDir(dir); err != nil {
		return nil, err
	}
	verified, kept, err := verifyEntry(dir)
	instrumented := kept[instrumentedName]
	if err == nil && instrumented == nil && len(verified) > 0 {
		// Compiled from another rewrite of the module: of no further use.
		verified, err = nil, errStale
	}
	if err != nil {
		if logger != nil && err != errStale {
			logger.Warn("compile cache entry discarded; recompiling", "dir", dir, "reason", err)
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("%w: remove untrusted entry: %v", ErrCacheDir, err)
		}
		if err := ensurePrivateDir(dir); err != nil {
			return nil, err
		}
	}
	wc, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCacheDir, err)
	}
	c := &compileCache{dir: dir, wazero: wc, verified: verified, instrumented: instrumented}
	if b := kept[shapeName]; b != nil {
		var shape sandbox.Shape
		// Written by us and verified against the manifest; an unreadable
		// one is only measured again.
		if json.Unmarshal(b, &shape) == nil {
			c.shape = &shape
		}
	}
	return c, nil
}

var errStale = errors.New("entry of an older instrumentation")

// keepInstrumented stores the instrumented module in the entry; seal then
// lists it in the manifest.
func (c *compileCache) keepInstrumented(b []byte) error {
	return c.keep(instrumentedName, b)
}

// keepShape stores the module's shape in the entry; seal then lists it in
// the manifest.
func (c *compileCache) keepShape(s sandbox.Shape) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return c.keep(shapeName, b)
}

// keep writes b as the entry's file name, atomically.
func (c *compileCache) keep(name string, b []byte) error {
	tmp, err := os.CreateTemp(c.dir, name+".*.part")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(c.dir, name))
}

// ensurePrivateDir creates dir (mode 0700) if needed and checks that it is a
// real directory owned by this user. A directory of ours that others may
// read or write is made private; one owned by someone else is refused.
func ensurePrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("%w: %v", ErrCacheDir, err)
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCacheDir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory (%s)", ErrCacheDir, dir, fi.Mode().Type())
	}
	if !ownedByMe(fi) {
		return fmt.Errorf("%w: %s is owned by another user", ErrCacheDir, dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("%w: %s has mode %v and cannot be made private: %v", ErrCacheDir, dir, fi.Mode().Perm(), err)
		}
	}
	return nil
}

// entryFiles lists the regular files of an entry besides the manifest, as
// slash-separated paths relative to dir (wazero keeps its files in a
// subdirectory named after its version). Anything else (links, devices,
// wazero's leftover temporary files) is an error, so that the entry is
// rebuilt.
func entryFiles(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == "." || rel == manifestName:
			return nil
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("unexpected %s %q", d.Type(), rel)
		case strings.HasSuffix(rel, ".tmp"):
			return fmt.Errorf("unfinished file %q", rel)
		}
		names = append(names, rel)
		return nil
	})
	sort.Strings(names)
	return names, err
}

func readManifest(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 || name == "" {
			return nil, fmt.Errorf("malformed manifest line %q", sc.Text())
		}
		m[name] = sum
	}
	return m, nil
}

// verifyEntry checks every file of the entry against its manifest and
// returns their stamps, and the bytes, as verified, of the files of ours
// that a load reads (the instrumented module and the shape; absent from the
// map if the entry has none). An empty entry is valid.
func verifyEntry(dir string) (map[string]fileStamp, map[string][]byte, error) {
	names, err := entryFiles(dir)
	if err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		return map[string]fileStamp{}, nil, nil
	}
	want, err := readManifest(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("manifest: %w", err)
	}
	if len(want) != len(names) {
		return nil, nil, fmt.Errorf("manifest lists %d files, entry has %d", len(want), len(names))
	}
	st, err := stamps(dir, names)
	if err != nil {
		return nil, nil, err
	}
	kept := map[string][]byte{}
	for _, n := range names {
		path := filepath.Join(dir, filepath.FromSlash(n))
		var sum string
		if n == instrumentedName || n == shapeName {
			// Hashed as read, so that what is used is what was verified.
			var b []byte
			if b, err = os.ReadFile(path); err == nil {
				sum, kept[n] = digest.Bytes(b), b
			}
		} else {
			sum, err = digest.File(path)
		}
		if err != nil {
			return nil, nil, err
		}
		if want[n] != sum {
			return nil, nil, fmt.Errorf("%s: checksum mismatch", n)
		}
	}
	return st, kept, nil
}

// seal writes the manifest of the entry after a compile, when the compile
// wrote or replaced files.
func (c *compileCache) seal() error {
	names, err := entryFiles(c.dir)
	if err != nil {
		return err
	}
	now, err := stamps(c.dir, names)
	if err != nil {
		return err
	}
	if maps.Equal(now, c.verified) {
		return nil
	}
	var buf bytes.Buffer
	for _, n := range names {
		sum, err := digest.File(filepath.Join(c.dir, filepath.FromSlash(n)))
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s  %s\n", sum, n)
	}
	tmp, err := os.CreateTemp(c.dir, manifestName+".*.part")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(c.dir, manifestName))
}
