package bundle_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/permhost/permhost/internal/bundle"
)

// swapper replaces the file at path by each of contents in turn, by atomic
// rename from stage (a directory outside the bundle), until stopped: a
// reader sees one whole version or the other, never a mix.
type swapper struct {
	stop  chan struct{}
	once  sync.Once
	done  sync.WaitGroup
	swaps atomic.Int64
}

func startSwapper(t *testing.T, stage string, files map[string][2][]byte) *swapper {
	t.Helper()
	s := &swapper{stop: make(chan struct{})}
	n := 0
	for path, contents := range files {
		tmp := filepath.Join(stage, "tmp"+string(rune('a'+n)))
		n++
		s.done.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-s.stop:
					return
				default:
				}
				if err := os.WriteFile(tmp, contents[i%2], 0o644); err != nil {
					t.Error(err)
					return
				}
				if err := os.Rename(tmp, path); err != nil {
					t.Error(err)
					return
				}
				s.swaps.Add(1)
			}
		})
	}
	t.Cleanup(func() { s.Stop() }) // before the directories go, on a failure too
	return s
}

func (s *swapper) Stop() int64 {
	s.once.Do(func() { close(s.stop); s.done.Wait() })
	return s.swaps.Load()
}

// TestLoadWhileFilesSwap: with bundle.toml swapped between the signed one
// and an unsigned one (revision 999999, layer user, no plugins), and the
// plugin's module between the pinned one and another, while the bundle is
// loaded over and over, Load admits only the signed bundle.toml and the
// pinned module's bytes, and the state file never records the forged
// revision. Before the bundle was read once, the signature covered a
// second read of bundle.toml while the first one was used.
func TestLoadWhileFilesSwap(t *testing.T) {
	dir, stage := t.TempDir(), t.TempDir()
	makeBundle(t, dir, 1)
	pub, priv, err := bundle.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	signed, err := os.ReadFile(filepath.Join(dir, "bundle.toml"))
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := os.ReadFile(filepath.Join(dir, "good.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile("../../testdata/wasm/call_tree.wasm")
	if err != nil {
		t.Fatal(err)
	}
	forged := []byte("name = \"acme\"\nrevision = 999999\nlayer = \"user\"\n")
	sum := sha256.Sum256(pinned)
	pin := hex.EncodeToString(sum[:])
	statePath := filepath.Join(t.TempDir(), "bundles.json")
	state := bundle.OpenState(statePath)

	sw := startSwapper(t, stage, map[string][2][]byte{
		filepath.Join(dir, "bundle.toml"): {forged, signed},
		filepath.Join(dir, "good.wasm"):   {other, pinned},
	})
	// Until both outcomes are common, so that the admitted ones are ones
	// read while the files changed.
	const minEach, maxIterations = 300, 50000
	var admitted, refused, i int
	for i = 0; i < maxIterations && (admitted < minEach || refused < minEach); i++ {
		b, err := bundle.Load(dir, []string{pub}, state)
		if err != nil {
			if !errors.Is(err, bundle.ErrBadSignature) {
				t.Fatalf("iteration %d: Load = %v, want a signature failure", i, err)
			}
			refused++
			continue
		}
		admitted++
		if b.Revision != 1 || b.Layer != "team" || len(b.Plugins) != 1 {
			t.Fatalf("iteration %d: admitted revision %d, layer %s, %d plugins; only revision 1, team, 1 plugin is signed", i, b.Revision, b.Layer, len(b.Plugins))
		}
		got := sha256.Sum256(b.Plugins[0].Wasm)
		if hex.EncodeToString(got[:]) != pin {
			t.Fatalf("iteration %d: admitted a module of sha256 %x, pinned %s", i, got, pin)
		}
	}
	swaps := sw.Stop()
	t.Logf("%d loads (%d admitted, %d refused) during %d swaps", i, admitted, refused, swaps)
	if admitted < minEach || refused < minEach {
		t.Fatalf("after %d loads, %d admitted and %d refused: the swaps did not interleave with the loads", i, admitted, refused)
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
