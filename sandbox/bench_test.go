package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// BenchmarkCall compares a warm call before and after instrumentation, with
// Watch and Stop around the instrumented one as a host would.
func BenchmarkCall(b *testing.B) {
	cases := []struct {
		name, fn string
		args     []uint64
		module   func(testing.TB) []byte
	}{
		{"small/sum1000", "sum", []uint64{1000}, func(t testing.TB) []byte { return readTestdata(t, "spin.wasm") }},
		{"small/calltree12", "deep", []uint64{12}, func(t testing.TB) []byte { return readTestdata(t, "spin.wasm") }},
		{"go/json1KB", "work", []uint64{1}, goModule},
	}
	ctx := context.Background()
	for _, c := range cases {
		orig := c.module(b)
		for _, instrumented := range []bool{false, true} {
			name := c.name + "/plain"
			bin := orig
			if instrumented {
				name = c.name + "/instrumented"
				bin = mustInstrument(b, orig)
			}
			b.Run(name, func(b *testing.B) {
				r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig())
				defer r.Close(ctx)
				if err := instantiateHostModules(ctx, r, Limits{}); err != nil {
					b.Fatal(err)
				}
				r.NewHostModuleBuilder("test").NewFunctionBuilder().
					WithGoFunction(api.GoFunc(func(context.Context, []uint64) {}), nil, nil).
					Export("tick").Instantiate(ctx)
				mod, err := r.InstantiateWithConfig(ctx, bin, ModuleConfig())
				if err != nil {
					b.Fatal(err)
				}
				if init := mod.ExportedFunction("_initialize"); init != nil {
					w := Watch(ctx, mod, 10*time.Second)
					if _, err := init.Call(ctx); err != nil {
						b.Fatal(err)
					}
					w.Stop()
				}
				fn := mod.ExportedFunction(c.fn)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var w Watcher
					if instrumented {
						w = Watch(ctx, mod, 10*time.Second)
					}
					if _, err := fn.Call(ctx, c.args...); err != nil {
						b.Fatal(err)
					}
					if instrumented {
						if err := w.Stop(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkInstrument measures the load-time rewrite of the Go module.
func BenchmarkInstrument(b *testing.B) {
	bin := goModule(b)
	b.SetBytes(int64(len(bin)))
	for i := 0; i < b.N; i++ {
		if _, err := Instrument(bin); err != nil {
			b.Fatal(err)
		}
	}
}
