package host

import (
	"bufio"
	"bytes"
	"context"
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
	"time"

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

// compileCache is the on-disk compile cache entry of one module, locked
// (see openCache) until release.
type compileCache struct {
	dir    string // <root>/<module sha256>
	wazero wazero.CompilationCache
	lock   *entryLock
	// writable is set when the lock is exclusive: the entry is then
	// written (keep, seal); a shared entry is only read.
	writable bool
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
// root, "off" for no cache), holding its lock until release: shared while
// the entry is complete (it is then only read), exclusive while it is being
// written (a load that finds it incomplete or failing verification, which
// it then deletes and compiles afresh). Readers never see an entry being
// written, and no entry is deleted while another load reads or writes it.
// It waits for the lock at most wait (or until ctx ends), polling; past
// that it returns a nil cache, and the module is compiled without one.
func openCache(ctx context.Context, root, sha string, wait time.Duration, logger *slog.Logger) (*compileCache, error) {
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
	lock, err := openEntryLock(dir + lockSuffix)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCacheDir, err)
	}
	c, err := lockEntry(ctx, lock, dir, time.Now().Add(wait), logger)
	if c == nil || err != nil {
		lock.close()
		if err == errLockWait {
			if logger != nil {
				logger.Warn("compile cache entry busy (another load holds it); compiling without the cache", "dir", dir, "waited", wait)
			}
			return nil, nil
		}
		return nil, err
	}
	c.lock = lock
	if c.wazero, err = wazero.NewCompilationCacheWithDir(dir); err != nil {
		c.release()
		return nil, fmt.Errorf("%w: %v", ErrCacheDir, err)
	}
	return c, nil
}

// lockSuffix names an entry's lock file, beside it (<root>/<sha256>.lock).
// Lock files are never removed: a load could then lock a file another load
// just unlinked.
const lockSuffix = ".lock"

// errLockWait: the entry's lock was not had in time.
var errLockWait = errors.New("compile cache entry busy")

// lockEntry takes the entry's lock and verifies the entry under it; see
// openCache. An entry found incomplete under the shared lock is looked at
// again under the exclusive one, since another load may have written it
// meanwhile; one found complete then is read under a shared lock again.
func lockEntry(ctx context.Context, lock *entryLock, dir string, deadline time.Time, logger *slog.Logger) (*compileCache, error) {
	for {
		if err := lockWithin(ctx, lock, false, deadline); err != nil {
			return nil, err
		}
		if c := completeEntry(dir); c != nil {
			return c, nil
		}
		if err := lock.unlock(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCacheDir, err)
		}
		if err := lockWithin(ctx, lock, true, deadline); err != nil {
			return nil, err
		}
		if completeEntry(dir) != nil {
			if err := lock.unlock(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrCacheDir, err)
			}
			continue
		}
		verified, kept, err := verifyEntry(dir)
		if err == nil && kept[instrumentedName] == nil && len(verified) > 0 {
			// Compiled from another rewrite of the module: of no further use.
			verified, err = nil, errStale
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			if logger != nil && err != errStale {
				logger.Warn("compile cache entry discarded; recompiling", "dir", dir, "reason", err)
			}
			if err := os.RemoveAll(dir); err != nil {
				return nil, fmt.Errorf("%w: remove untrusted entry: %v", ErrCacheDir, err)
			}
			verified, kept = nil, nil
		}
		if err := ensurePrivateDir(dir); err != nil {
			return nil, err
		}
		if verified == nil {
			verified = map[string]fileStamp{}
		}
		c := &compileCache{dir: dir, verified: verified, instrumented: kept[instrumentedName], writable: true}
		c.shape = decodeShape(kept[shapeName])
		return c, nil
	}
}

// completeEntry returns the entry at dir if it verifies and holds all a
// load reads (the instrumented module, its shape and compiled code), else
// nil.
func completeEntry(dir string) *compileCache {
	verified, kept, err := verifyEntry(dir)
	if err != nil || kept[instrumentedName] == nil || kept[shapeName] == nil || len(verified) <= len(kept) {
		return nil
	}
	shape := decodeShape(kept[shapeName])
	if shape == nil {
		return nil
	}
	return &compileCache{dir: dir, verified: verified, instrumented: kept[instrumentedName], shape: shape}
}

// decodeShape reads a kept shape; nil for none. Written by us and verified
// against the manifest: an unreadable one is only measured again.
func decodeShape(b []byte) *sandbox.Shape {
	if b == nil {
		return nil
	}
	var shape sandbox.Shape
	if json.Unmarshal(b, &shape) != nil {
		return nil
	}
	return &shape
}

// lockWithin takes lock, polling, until deadline or until ctx ends.
func lockWithin(ctx context.Context, lock *entryLock, exclusive bool, deadline time.Time) error {
	pause := time.Millisecond
	for {
		ok, err := lock.try(exclusive)
		if err != nil {
			return fmt.Errorf("%w: lock: %v", ErrCacheDir, err)
		}
		if ok {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return errLockWait
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// release lets other loads have the entry: call it once the compile that
// reads or writes the entry has ended (and the entry is sealed).
func (c *compileCache) release() {
	if c.lock != nil {
		c.lock.close()
		c.lock = nil
	}
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

// keep writes b as the entry's file name, atomically; nothing when the
// entry is only read.
func (c *compileCache) keep(name string, b []byte) error {
	if !c.writable {
		return nil
	}
	return writeAtomic(filepath.Join(c.dir, name), b)
}

// writeAtomic writes b as the file path: under a temporary name beside it
// ("NAME.*.part", which no entry lists), then renamed, so that a reader
// finds the old file or the whole new one.
func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.part")
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
	return os.Rename(tmp.Name(), path)
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
// wrote or replaced files; nothing when the entry is only read (a compile
// from a complete entry writes none).
func (c *compileCache) seal() error {
	if !c.writable {
		return nil
	}
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
	return writeAtomic(filepath.Join(c.dir, manifestName), buf.Bytes())
}
