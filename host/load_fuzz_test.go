package host

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/permhost/permhost/sandbox"
)

// FuzzLoad feeds mutated modules to the whole load path (verifier,
// instrumentation, compile, instantiation with the start function, the
// handshake) and, when one loads, to a decision: whatever the input, Load
// and Decide fail with an *Error of a known kind or succeed, and never
// panic, not even in a goroutine (a panic the host recovers counts as a
// failure of this test: it is a bug). The seeds are the fixtures, the
// committed corpus (testdata/fuzz/FuzzLoad: the AssemblyScript example and
// variants of the hostile fixtures), and, when fuzzing, the example Go
// plugins if they are built (3-4 MB each: too large to commit, too slow to
// compile on every test run).
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, glob := range []string{"../testdata/wasm/*.wasm", "testdata/*.wasm"} {
		more, _ := filepath.Glob(glob)
		seeds = append(seeds, more...)
	}
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		for _, dir := range []string{os.Getenv("PERMHOST_PLUGINS_DIR"), filepath.Join("..", "build", "plugins")} {
			if dir != "" {
				more, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
				seeds = append(seeds, more...)
			}
		}
	}
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	known := map[Kind]bool{KindLoad: true, KindABI: true, KindForbiddenImport: true, KindTimeout: true, KindTrap: true,
		KindMemory: true, KindOutputTooLarge: true, KindBadOutput: true, KindCancelled: true, KindPluginError: true}
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) || !known[e.Kind] {
			t.Fatalf("%s: %v is not an *Error of a known kind", what, err)
		}
		if errors.Is(err, errPanic) {
			t.Fatalf("%s: the host panicked: %v", what, err)
		}
	}
	limits := sandbox.Limits{Timeout: 20 * time.Millisecond, InitTimeout: 200 * time.Millisecond,
		CompileTimeout: 20 * time.Second, MemoryBytes: 4 << 20}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		ctx := context.Background()
		p, err := Load(ctx, Options{Name: "fuzz", Wasm: wasm, Limits: limits, CacheDir: "off", PoolSize: 1})
		check(t, "Load", err)
		if err != nil {
			return
		}
		defer p.Close(ctx)
		r := p.Call(ctx, request("fuzz"))
		check(t, "Call", r.Err)
		if r.Err == nil {
			if err := r.Decision.Validate(offered); err != nil {
				t.Fatalf("a decision that does not validate: %+v: %v", r.Decision, err)
			}
		}
	})
}
