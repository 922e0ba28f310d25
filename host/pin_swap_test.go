package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/digest"
)

// TestPinnedModuleSwapped: with a pinned module's file swapped by rename
// between the pinned module and another while it is loaded over and over,
// a load either fails on the pin or runs the pinned module: the digest is
// computed over the very bytes compiled, never over a second read.
func TestPinnedModuleSwapped(t *testing.T) {
	pinned, err := os.ReadFile(fixture(t, "echo"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(fixture(t, "constant"))
	if err != nil {
		t.Fatal(err)
	}
	pin := digest.Bytes(pinned)
	dir, stage := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "plugin.wasm")
	if err := os.WriteFile(path, pinned, 0o644); err != nil {
		t.Fatal(err)
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	swaps := 0
	wg.Go(func() {
		tmp := filepath.Join(stage, "tmp")
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			if err := os.WriteFile(tmp, [][]byte{other, pinned}[i%2], 0o644); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Error(err)
				return
			}
			swaps++
		}
	})
	var once sync.Once
	stop := func() { once.Do(func() { close(quit); wg.Wait() }) }
	t.Cleanup(stop)

	ctx := context.Background()
	const minEach, maxIterations = 20, 20000
	var loaded, refused, i int
	for i = 0; i < maxIterations && (loaded < minEach || refused < minEach); i++ {
		p, err := Load(ctx, Options{Name: "pinned", Path: path, SHA256: pin, CacheDir: "off", PoolSize: 1})
		if err != nil {
			if !errors.Is(err, ErrPinMismatch) {
				t.Fatalf("load %d: %v, want a pin mismatch", i, err)
			}
			refused++
			continue
		}
		loaded++
		r := p.Call(ctx, request("load-check"))
		closeErr := p.Close(ctx)
		if p.SHA256() != pin || r.Err != nil || r.Decision != (abi.Decision{Outcome: abi.OutcomeAllow, Reason: "load-check"}) {
			t.Fatalf("load %d: sha256 %s (pinned %s) answered %+v, %v: not the pinned module", i, p.SHA256(), pin, r.Decision, r.Err)
		}
		if closeErr != nil {
			t.Fatal(closeErr)
		}
	}
	stop()
	t.Logf("%d loads (%d of the pinned module, %d refused) during %d swaps", i, loaded, refused, swaps)
	if loaded < minEach || refused < minEach {
		t.Fatalf("after %d loads, %d loaded and %d refused: the swaps did not interleave with the loads", i, loaded, refused)
	}
}
