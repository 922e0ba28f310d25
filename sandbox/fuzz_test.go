package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

// FuzzInstrument: Instrument never panics, fails only with ErrInstrument,
// whatever wazero accepts it turns into something wazero still accepts, and
// when the output can be instantiated, every export that returns normally
// (called with zero arguments, under a short deadline) leaves the call depth
// at 0.
func FuzzInstrument(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.wasm")
	more, _ := filepath.Glob("testdata/imports/*.wasm")
	for _, p := range append(seeds, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(wasmHeader)
	f.Add(throwCatchModule())
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(testFeatures))
	defer r.Close(ctx)
	tr := newTestRuntime(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Instrument(in)
		if err != nil {
			if !errors.Is(err, ErrInstrument) {
				t.Fatalf("error %v does not wrap ErrInstrument", err)
			}
			return
		}
		cm, err := CompileModule(ctx, r, in)
		if err != nil {
			return // invalid input: any output is fine
		}
		cm.Close(ctx)
		cm, err = CompileModule(ctx, r, out)
		if err != nil {
			t.Fatalf("input compiles, instrumented output does not: %v", err)
		}
		cm.Close(ctx)
		checkDepthBalanced(t, tr, out)
	})
}

// checkDepthBalanced instantiates bin in tr, if its imports allow, and calls
// each export with zero arguments under a 20 ms deadline; after every call
// that returns normally the depth must be 0.
func checkDepthBalanced(t *testing.T, tr *testRuntime, bin []byte) {
	ctx := context.Background()
	cm, err := CompileModule(ctx, tr, bin)
	if err != nil {
		return
	}
	defer cm.Close(ctx)
	mod, err := tr.InstantiateModule(ctx, cm, ModuleConfig())
	if err != nil {
		return // unresolved imports, a trapping segment...
	}
	defer mod.Close(ctx)
	for name, def := range cm.ExportedFunctions() {
		args := make([]uint64, len(def.ParamTypes()))
		w := Watch(ctx, mod, 20*time.Millisecond)
		_, callErr := mod.ExportedFunction(name).Call(ctx, args...)
		if w.Stop() != nil || callErr != nil {
			continue
		}
		if d := int32(mod.ExportedGlobal(depthGlobal).Get()); d != 0 {
			t.Fatalf("export %q returned with the call depth at %d", name, d)
		}
	}
}

// TestDecodeInstr covers encodings the .wat fixtures cannot: exception
// handling (both encodings), typed function references and the longer SIMD
// and atomic immediates.
func TestDecodeInstr(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		kind instrKind
	}{
		{"try_table with catches", []byte{0x1f, 0x40, 2, 0x00, 0, 1, 0x02, 0}, kindOpen},
		{"legacy try", []byte{0x06, 0x7f}, kindOpen},
		{"delegate", []byte{0x18, 2}, kindClose},
		{"throw", []byte{0x08, 3}, kindPlain},
		{"block with type index", []byte{0x02, 0x85, 0x01}, kindOpen},
		{"loop returning (ref null 3)", []byte{0x03, 0x63, 3}, kindLoop},
		{"call_ref", []byte{0x14, 5}, kindPlain},
		{"br_on_null", []byte{0xd5, 0}, kindPlain},
		{"return_call", []byte{0x12, 0x80, 0x01}, kindFunc},
		{"v128.const", append([]byte{0xfd, 12}, make([]byte, 16)...), kindPlain},
		{"v128.load8_lane", []byte{0xfd, 84, 0, 0, 3}, kindPlain},
		{"i32x4.dot (2-byte subop)", []byte{0xfd, 0xba, 0x01}, kindPlain},
		{"atomic.fence", []byte{0xfe, 3, 0}, kindPlain},
		{"i64.atomic.rmw.cmpxchg", []byte{0xfe, 0x4e, 3, 8}, kindPlain},
		{"memarg with memory index", []byte{0x28, 0x42, 1, 4}, kindPlain},
		{"table.copy", []byte{0xfc, 14, 0, 1}, kindPlain},
		{"typed select", []byte{0x1c, 1, 0x7b}, kindPlain},
	}
	for _, tc := range tests {
		r := &reader{b: tc.in}
		var kind instrKind
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = errors.New(p.(malformed).msg)
				}
			}()
			kind, _ = decodeInstr(r)
			return nil
		}()
		if err != nil || kind != tc.kind || !r.eof() {
			t.Errorf("%s: kind %d err %v, consumed %d of %d bytes", tc.name, kind, err, r.off, len(tc.in))
		}
	}
}
