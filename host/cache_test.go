package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/digest"
	"github.com/permhost/permhost/sandbox"
)

// cacheEntry returns the plugin's wazero file of the entry: the largest,
// since the entry also holds sandbox's tiny limits module, compiled through
// the same runtime.
func cacheEntry(t *testing.T, dir string) string {
	t.Helper()
	names, err := entryFiles(dir)
	require.NoError(t, err)
	require.NotEmpty(t, names, "no compiled module in %s", dir)
	best, bestSize := "", int64(-1)
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		st, err := os.Stat(p)
		require.NoError(t, err)
		if st.Size() > bestSize {
			best, bestSize = p, st.Size()
		}
	}
	return best
}

func loadCached(t *testing.T, root string) (*Plugin, time.Duration) {
	t.Helper()
	start := time.Now()
	p, err := Load(context.Background(), Options{Path: fixture(t, "echo"), CacheDir: root})
	require.NoError(t, err)
	took := time.Since(start)
	d, err := p.Decide(context.Background(), request("cached"))
	require.NoError(t, err)
	require.Equal(t, "cached", d.Reason)
	require.NoError(t, p.Close(context.Background()))
	return p, took
}

func TestCompileCache(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	p, cold := loadCached(t, root)
	entry := filepath.Join(root, p.SHA256())
	before, err := os.Stat(cacheEntry(t, entry))
	require.NoError(t, err)
	_, warm := loadCached(t, root)
	after, err := os.Stat(cacheEntry(t, entry))
	require.NoError(t, err)
	assert.Equal(t, before.ModTime(), after.ModTime(), "the second load used the entry, not a recompile")
	t.Logf("echo.wasm: cold load %v, cached load %v", cold, warm)

	for _, dir := range []string{root, filepath.Join(root, p.SHA256())} {
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), dir)
	}
	_, _, err = verifyEntry(entry)
	assert.NoError(t, err, "the manifest matches what wazero wrote")
}

func TestCompileCacheRepairs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, entry, file string)
	}{
		{"flipped byte in the function offsets", func(t *testing.T, entry, file string) {
			// Past wazero's header, before the code: not covered by its CRC.
			flip(t, file, 32)
		}},
		{"flipped byte in the instrumented module", func(t *testing.T, entry, file string) {
			flip(t, filepath.Join(entry, instrumentedName), 100)
		}},
		{"instrumented module replaced", func(t *testing.T, entry, file string) {
			other, err := sandbox.Instrument(mustRead(t, fixture(t, "good")))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(entry, instrumentedName), other, 0o600))
		}},
		{"flipped byte in the code", func(t *testing.T, entry, file string) {
			fi, err := os.Stat(file)
			require.NoError(t, err)
			flip(t, file, fi.Size()/2)
		}},
		{"truncated", func(t *testing.T, entry, file string) {
			require.NoError(t, os.Truncate(file, 10))
		}},
		{"manifest deleted", func(t *testing.T, entry, file string) {
			require.NoError(t, os.Remove(filepath.Join(entry, manifestName)))
		}},
		{"manifest garbage", func(t *testing.T, entry, file string) {
			require.NoError(t, os.WriteFile(filepath.Join(entry, manifestName), []byte("junk\n"), 0o600))
		}},
		{"stray file", func(t *testing.T, entry, file string) {
			require.NoError(t, os.WriteFile(filepath.Join(entry, "stray"), []byte("x"), 0o600))
		}},
		{"symlink", func(t *testing.T, entry, file string) {
			require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(entry, "link")))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			p, _ := loadCached(t, root)
			entry := filepath.Join(root, p.SHA256())
			file := cacheEntry(t, entry)
			good, err := os.ReadFile(file)
			require.NoError(t, err)

			tc.corrupt(t, entry, file)
			_, _, err = verifyEntry(entry)
			require.Error(t, err, "corruption is detected")

			loadCached(t, root) // recompiles and decides correctly
			again, err := os.ReadFile(cacheEntry(t, entry))
			require.NoError(t, err)
			assert.Equal(t, good, again, "the entry was rebuilt")
			_, _, err = verifyEntry(entry)
			assert.NoError(t, err)
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// A warm load takes the module as instrumented from the entry instead of
// rewriting it again: an entry whose instrumented module is another one
// (sealed by its manifest, as if it were what Instrument made) runs that
// other module.
func TestCompileCacheKeepsInstrumentedModule(t *testing.T) {
	root := t.TempDir()
	p, _ := loadCached(t, root)
	entry := filepath.Join(root, p.SHA256())
	kept := mustRead(t, filepath.Join(entry, instrumentedName))
	want, err := sandbox.Instrument(mustRead(t, fixture(t, "echo")))
	require.NoError(t, err)
	require.Equal(t, want, kept, "the entry holds the instrumented module")

	other, err := sandbox.Instrument(mustRead(t, fixture(t, "good")))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(entry, instrumentedName), other, 0o600))
	c := &compileCache{dir: entry, writable: true}
	require.NoError(t, c.seal())

	p2, err := Load(context.Background(), Options{Path: fixture(t, "echo"), CacheDir: root})
	require.NoError(t, err)
	defer p2.Close(context.Background())
	d, err := p2.Decide(context.Background(), request("cached"))
	require.NoError(t, err)
	assert.NotEqual(t, "cached", d.Reason, "echo would echo the decision id; the cached module (good) does not")
}

// An entry made by another version of the instrumentation (no instrumented
// module of the current version) is cleared, not kept beside the new one.
func TestCompileCacheClearsOlderInstrumentation(t *testing.T) {
	root := t.TempDir()
	p, _ := loadCached(t, root)
	entry := filepath.Join(root, p.SHA256())
	old := filepath.Join(entry, "instrumented-v0.wasm")
	require.NoError(t, os.Rename(filepath.Join(entry, instrumentedName), old))
	stale := filepath.Join(filepath.Dir(cacheEntry(t, entry)), "0000-older-compile")
	require.NoError(t, os.WriteFile(stale, []byte("old machine code"), 0o600))
	require.NoError(t, (&compileCache{dir: entry, writable: true}).seal())
	_, _, err := verifyEntry(entry)
	require.NoError(t, err, "a valid entry of an older version")

	loadCached(t, root)
	assert.NoFileExists(t, old)
	assert.NoFileExists(t, stale)
	assert.FileExists(t, filepath.Join(entry, instrumentedName))
	_, _, err = verifyEntry(entry)
	assert.NoError(t, err)
}

func flip(t *testing.T, file string, at int64) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Less(t, at, int64(len(b)))
	b[at] ^= 0xff
	require.NoError(t, os.WriteFile(file, b, 0o600))
}

func TestCompileCacheDirectory(t *testing.T) {
	t.Run("made private", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "shared")
		require.NoError(t, os.Mkdir(root, 0o777))
		require.NoError(t, os.Chmod(root, 0o777))
		loadCached(t, root)
		fi, err := os.Stat(root)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	})
	t.Run("not a directory", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(root, nil, 0o600))
		_, err := Load(context.Background(), Options{Path: fixture(t, "echo"), CacheDir: root})
		requireKind(t, err, KindLoad)
		assert.ErrorIs(t, err, ErrCacheDir)
	})
	t.Run("entry is a symlink", func(t *testing.T) {
		root := t.TempDir()
		b, err := os.ReadFile(fixture(t, "echo"))
		require.NoError(t, err)
		p, err := Load(context.Background(), Options{Wasm: b, CacheDir: "off"})
		require.NoError(t, err)
		require.NoError(t, p.Close(context.Background()))
		require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(root, p.SHA256())))
		_, err = Load(context.Background(), Options{Wasm: b, CacheDir: root})
		requireKind(t, err, KindLoad)
		assert.ErrorIs(t, err, ErrCacheDir)
	})
	t.Run("owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a directory away")
		}
		root := filepath.Join(t.TempDir(), "foreign")
		require.NoError(t, os.Mkdir(root, 0o700))
		require.NoError(t, os.Chown(root, 65534, 65534))
		_, err := Load(context.Background(), Options{Path: fixture(t, "echo"), CacheDir: root})
		requireKind(t, err, KindLoad)
		assert.ErrorIs(t, err, ErrCacheDir)
		assert.Contains(t, err.Error(), "owned by another user")
	})
	t.Run("default root", func(t *testing.T) {
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		t.Setenv("HOME", t.TempDir())
		root, err := defaultCacheRoot()
		require.NoError(t, err)
		p, err := Load(context.Background(), Options{Path: fixture(t, "echo")})
		require.NoError(t, err)
		require.NoError(t, p.Close(context.Background()))
		cacheEntry(t, filepath.Join(root, p.SHA256()))
	})
}

// Loads of one module that start together into one empty cache all
// succeed: an entry being written never looks corrupt to another loader
// (which then deleted it under the writer), and the entry they leave is
// whole. (Several proxies start together; the process wall starts a child
// per plugin.) The test for loads in several processes is in e2e.
func TestCompileCacheConcurrentColdLoads(t *testing.T) {
	const loaders, rounds = 6, 15
	wasm := mustRead(t, fixture(t, "echo"))
	for round := range rounds {
		root := filepath.Join(t.TempDir(), "cache")
		errs := make(chan error, loaders)
		start := make(chan struct{})
		for range loaders {
			go func() {
				<-start
				p, err := Load(context.Background(), Options{Wasm: wasm, Name: "echo", CacheDir: root})
				if err == nil {
					var d abi.Decision
					if d, err = p.Decide(context.Background(), request("together")); err == nil && d.Reason != "together" {
						err = fmt.Errorf("decided %+v", d)
					}
					err = errors.Join(err, p.Close(context.Background()))
				}
				errs <- err
			}()
		}
		close(start)
		for range loaders {
			require.NoError(t, <-errs, "round %d", round)
		}
		entry := filepath.Join(root, digest.Bytes(wasm))
		_, kept, err := verifyEntry(entry)
		require.NoError(t, err, "round %d: the entry left is whole", round)
		require.NotNil(t, kept[instrumentedName], "round %d", round)
		before, err := os.Stat(cacheEntry(t, entry))
		require.NoError(t, err)
		loadCached(t, root)
		after, err := os.Stat(cacheEntry(t, entry))
		require.NoError(t, err)
		require.Equal(t, before.ModTime(), after.ModTime(), "round %d: a later load used the entry", round)
	}
}

// A load waits for an entry another load holds only within its bound (half
// the compile budget), then compiles without the cache and leaves the entry
// alone; a load whose context ends while it waits is cancelled.
func TestCompileCacheBusyEntry(t *testing.T) {
	root := t.TempDir()
	wasm := mustRead(t, fixture(t, "echo"))
	sha := digest.Bytes(wasm)
	holder, err := openEntryLock(filepath.Join(root, sha+lockSuffix))
	require.NoError(t, err)
	defer holder.close()
	ok, err := holder.try(true)
	require.NoError(t, err)
	require.True(t, ok)

	defer func(w time.Duration) { maxCacheWait = w }(maxCacheWait)
	maxCacheWait = 100 * time.Millisecond // not what this tests

	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	p, err := Load(context.Background(), Options{Wasm: wasm, CacheDir: root, Logger: logger,
		Limits: sandbox.Limits{CompileTimeout: time.Minute}})
	require.NoError(t, err, "a busy entry only means no cache")
	d, err := p.Decide(context.Background(), request("busy"))
	require.NoError(t, err)
	assert.Equal(t, "busy", d.Reason)
	require.NoError(t, p.Close(context.Background()))
	assert.Contains(t, logs.String(), "compiling without the cache")
	names, err := entryFiles(filepath.Join(root, sha))
	require.NoError(t, err)
	assert.Empty(t, names, "the load that did not have the lock wrote nothing")

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // ends the wait at once: the entry is busy
	_, err = Load(ctx, Options{Wasm: wasm, CacheDir: root, Limits: sandbox.Limits{CompileTimeout: time.Minute}})
	require.Error(t, err)
	assert.Equal(t, KindCancelled, KindOf(err), "%v", err)

	require.NoError(t, holder.unlock())
	loadCached(t, root) // the entry is written once the lock is free
	_, _, err = verifyEntry(filepath.Join(root, sha))
	assert.NoError(t, err)
}
