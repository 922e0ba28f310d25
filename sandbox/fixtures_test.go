package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// extismStub instantiates in r the three Extism kernel functions the hostile
// fixtures of ../testdata/wasm import, doing nothing: permhost_decide of the
// runaways never reaches them.
func extismStub(t testing.TB, r wazero.Runtime) {
	t.Helper()
	nop := api.GoFunc(func(context.Context, []uint64) {})
	b := r.NewHostModuleBuilder("extism:host/env")
	b.NewFunctionBuilder().WithGoFunction(nop, []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI64}).Export("alloc")
	b.NewFunctionBuilder().WithGoFunction(nop, []api.ValueType{api.ValueTypeI64, api.ValueTypeI32}, nil).Export("store_u8")
	b.NewFunctionBuilder().WithGoFunction(nop, []api.ValueType{api.ValueTypeI64, api.ValueTypeI64}, nil).Export("output_set")
	if _, err := b.Instantiate(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// hostileFixture compiles ../testdata/wasm/name.wasm, instrumented, in a
// runtime from NewRuntime under l.
func hostileFixture(t testing.TB, name string, l Limits) (wazero.Runtime, wazero.CompiledModule) {
	t.Helper()
	ctx := context.Background()
	orig, err := os.ReadFile(filepath.Join("..", "testdata", "wasm", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRuntime(ctx, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(ctx) })
	extismStub(t, r)
	cm, err := CompileModule(ctx, r, mustInstrument(t, orig))
	if err != nil {
		t.Fatal(err)
	}
	return r, cm
}

// TestHostileFixtureStops runs the two fixtures whose cost lies outside the
// instruction budget, many times, under the default 32 MiB memory cap:
//
//   - deep_recursion must end at the call-depth bound, long before its
//     deadline and without wazero's stack growing towards its 400 MB
//     ceiling;
//   - memory_grow (one page per memory.grow, each costing wazero
//     milliseconds of copying near the cap) must stop at its deadline: the
//     guest polls after every grow.
//
// The percentiles of how far past the deadline each call returned are
// logged; the assertions leave room for a loaded machine.
func TestHostileFixtureStops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two fixtures 30 times each")
	}
	ctx := context.Background()
	const runs = 30
	t.Logf("load average at start: %s", loadAverage())

	t.Run("deep_recursion", func(t *testing.T) {
		// Generous: under -race on a loaded machine the 10,000 frames
		// took over 50 ms once. Without the bound the call would end at
		// this deadline, or in wazero's own stack overflow after ~2 s.
		const timeout = time.Second
		r, cm := hostileFixture(t, "deep_recursion", Limits{Timeout: timeout})
		var took []time.Duration
		for i := 0; i < runs; i++ {
			mod, err := r.InstantiateModule(ctx, cm, ModuleConfig())
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			w := Watch(ctx, mod, timeout)
			_, callErr := mod.ExportedFunction("permhost_decide").Call(ctx)
			d := time.Since(start)
			stopErr := w.Stop()
			mod.Close(ctx)
			if stopErr != nil || !errors.Is(callErr, ErrCallDepth) {
				t.Fatalf("run %d: call error %v, Stop %v; want ErrCallDepth and nil", i, callErr, stopErr)
			}
			took = append(took, d)
		}
		p := summarize(took)
		t.Logf("deep_recursion ends at the call-depth bound after %v", p)
		if p.p50 > 100*time.Millisecond {
			t.Errorf("median run took %v to reach the bound", p.p50)
		}
	})

	t.Run("memory_grow", func(t *testing.T) {
		const timeout = 20 * time.Millisecond
		r, cm := hostileFixture(t, "memory_grow", Limits{Timeout: timeout})
		var lates []time.Duration
		atCap := 0
		for i := 0; i < runs; i++ {
			mod, err := r.InstantiateModule(ctx, cm, ModuleConfig())
			if err != nil {
				t.Fatal(err)
			}
			late, err := stopOnce(t, ctx, mod, runaway{name: "memory_grow", fn: "permhost_decide"}, timeout)
			pages := mod.Memory().Size() / WasmPageSize
			mod.Close(ctx)
			switch {
			case err == nil && pages == DefaultMemoryBytes/WasmPageSize:
				// All 512 grows fitted in the deadline: the fixture
				// trapped at the cap. Nothing to measure.
				atCap++
				continue
			case !errors.Is(err, ErrTimeout):
				t.Fatalf("run %d: Stop = %v with %d pages, want ErrTimeout", i, err, pages)
			}
			lates = append(lates, late)
		}
		if len(lates) < runs/2 {
			t.Skipf("%d of %d runs reached the cap before the deadline: too fast a machine to measure", atCap, runs)
		}
		p := summarize(lates)
		t.Logf("memory_grow under 32 MiB returned past a %v deadline: %v (%d runs reached the cap first)", timeout, p, atCap)
		if p.p50 > 20*time.Millisecond {
			t.Errorf("median run returned %v after its deadline", p.p50)
		}
	})
}
