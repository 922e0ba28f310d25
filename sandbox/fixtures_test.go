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
// instruction budget, many times, under the default 32 MiB memory cap, and
// checks how each run ends (the timings are logged; `make bench` measures
// them):
//
//   - deep_recursion must end at the call-depth bound (ErrCallDepth), not
//     at its deadline and not in wazero's own stack overflow at 400 MB;
//   - memory_grow (one page per memory.grow, each costing wazero time that
//     no instruction check sees) must stop at the first grow after its
//     deadline: the guest polls right after every grow. With the deadline
//     already passed when the call starts, exactly one page is grown.
func TestHostileFixtureStops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two fixtures 30 times each")
	}
	ctx := context.Background()
	const runs = 30
	t.Logf("load average at start: %s", loadAverage())

	t.Run("deep_recursion", func(t *testing.T) {
		// Without the bound the call would end in wazero's own stack
		// overflow after ~2 s, or at this deadline.
		const timeout = time.Minute
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
		t.Logf("deep_recursion ends at the call-depth bound after %v", summarize(took))
	})

	t.Run("memory_grow", func(t *testing.T) {
		r, cm := hostileFixture(t, "memory_grow", Limits{})
		for i := 0; i < runs; i++ {
			mod, err := r.InstantiateModule(ctx, cm, ModuleConfig())
			if err != nil {
				t.Fatal(err)
			}
			w := Watch(ctx, mod, 0) // expired: the first poll stops it
			_, callErr := mod.ExportedFunction("permhost_decide").Call(ctx)
			stopErr := w.Stop()
			pages := mod.Memory().Size() / WasmPageSize
			mod.Close(ctx)
			if callErr == nil || !errors.Is(stopErr, ErrTimeout) || pages != 2 {
				t.Fatalf("run %d: call %v, Stop %v, %d pages; want a stopped call, ErrTimeout and 2 pages (one grow)", i, callErr, stopErr, pages)
			}
		}

		// Under a live deadline a run ends either at the cap (all 512
		// pages grown in time: the fixture traps) or stopped at the
		// deadline; never both, never neither.
		const timeout = 20 * time.Millisecond
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
				atCap++
			case errors.Is(err, ErrTimeout):
				lates = append(lates, late)
			default:
				t.Fatalf("run %d: Stop = %v with %d pages; want ErrTimeout, or nil at the cap", i, err, pages)
			}
		}
		if len(lates) > 0 {
			t.Logf("memory_grow under 32 MiB: %d runs reached the cap first, %d stopped at a %v deadline, returning %v after it", atCap, len(lates), timeout, summarize(lates))
		}
	})
}
