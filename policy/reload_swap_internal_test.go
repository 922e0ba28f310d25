package policy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/config"
)

// swapFiles replaces each file by its two versions in turn, by atomic
// rename from stage (outside the bundle), until the returned stop is
// called (or the test ends); stop returns how many swaps were made.
func swapFiles(t *testing.T, stage string, files map[string][2][]byte) (stop func() int) {
	t.Helper()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	swaps, n := 0, 0
	for path, versions := range files {
		tmp := filepath.Join(stage, fmt.Sprint("tmp", n))
		n++
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-quit:
					return
				default:
				}
				if err := os.WriteFile(tmp, versions[i%2], 0o644); err != nil {
					t.Error(err)
					return
				}
				if err := os.Rename(tmp, path); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				swaps++
				mu.Unlock()
			}
		})
	}
	var once sync.Once
	stop = func() int {
		once.Do(func() { close(quit); wg.Wait() })
		return swaps
	}
	t.Cleanup(func() { stop() }) // before the directories go, on a failure too
	return stop
}

// TestHotReloadWhileFilesSwap drives a running engine's bundle reload
// while bundle.toml is swapped between the signed one and an unsigned one
// (revision 999999, layer user, no plugins) and the plugin's module between
// the pinned one and another: every reload either keeps the last good
// revision or takes the signed one with the pinned module compiled, and
// the state file never records the forged revision.
func TestHotReloadWhileFilesSwap(t *testing.T) {
	pinned, err := os.ReadFile("../testdata/wasm/good.wasm")
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile("../testdata/wasm/call_tree.wasm")
	if err != nil {
		t.Fatal(err)
	}
	pin := fmt.Sprintf("%x", sha256.Sum256(pinned))
	dir, stage := t.TempDir(), t.TempDir()
	signed := []byte("name = \"acme\"\nrevision = 1\nlayer = \"admin\"\n[[plugin]]\nname = \"good\"\npath = \"good.wasm\"\nsha256 = \"" + pin + "\"\n")
	forged := []byte("name = \"acme\"\nrevision = 999999\nlayer = \"user\"\n")
	if err := os.WriteFile(filepath.Join(dir, "good.wasm"), pinned, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bundle.toml"), signed, 0o644); err != nil {
		t.Fatal(err)
	}
	pub, priv, _ := bundle.GenerateKey()
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(t.TempDir(), "bundles.json")
	cfg := &config.Config{Strategy: "sequential", Bundles: []config.Bundle{{Path: dir, TrustedKeys: []string{pub}, Isolation: config.IsolationInProcess}}}
	e, err := newEngine(Options{Config: cfg, CacheDir: "off", BundleState: statePath, Log: NewDecisionLog(discard{}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e.start(ctx, -1) // no watcher: the test reloads
	defer e.Close(ctx)
	<-e.Ready()

	stop := swapFiles(t, stage, map[string][2][]byte{
		filepath.Join(dir, "bundle.toml"): {forged, signed},
		filepath.Join(dir, "good.wasm"):   {other, pinned},
	})
	const minEach, maxIterations = 50, 5000
	var taken, kept, i int
	for i = 0; i < maxIterations && (taken < minEach || kept < minEach); i++ {
		e.mu.Lock()
		old := e.sources[1]
		e.mu.Unlock()
		e.reload(ctx, 1, old, bundle.Fingerprint(dir))
		e.mu.Lock()
		now := e.sources[1]
		e.mu.Unlock()
		if now == old {
			kept++
		} else {
			taken++
		}
		if got := e.Bundles()["acme"]; got != 1 {
			t.Fatalf("reload %d: revision %d in use; only revision 1 is signed", i, got)
		}
		if len(now.slots) != 1 {
			t.Fatalf("reload %d: %d plugins in use, want 1", i, len(now.slots))
		}
		if got := now.slots[0].SHA256(); got != pin {
			t.Fatalf("reload %d: the module compiled has sha256 %q, want the pinned %s", i, got, pin)
		}
	}
	swaps := stop()
	t.Logf("%d reloads (%d taken, %d refused keeping the last good) during %d swaps", i, taken, kept, swaps)
	if taken < minEach || kept < minEach {
		t.Fatalf("after %d reloads, %d taken and %d refused: the swaps did not interleave with the reloads", i, taken, kept)
	}
	v := e.Run(ctx, abi.Request{Options: []abi.Option{{OptionID: "a", Kind: "allow_once"}}})
	if len(v.Votes) != 1 || v.Votes[0].Plugin != "acme/good" || v.Votes[0].Layer != "admin" || v.Votes[0].Err != nil {
		t.Fatalf("votes after the reloads = %+v", v.Votes)
	}
	data, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	var seen map[string]int64
	if err := json.Unmarshal(data, &seen); err != nil || seen["acme"] != 1 {
		t.Fatalf("state file = %s (%v), want acme at revision 1", data, err)
	}
}
