package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// call runs fn under a generous deadline and fails the test on any error.
func call(t *testing.T, mod api.Module, fn string, args ...uint64) []uint64 {
	t.Helper()
	ctx := context.Background()
	w := Watch(ctx, mod, 10*time.Second)
	res, err := mod.ExportedFunction(fn).Call(ctx, args...)
	if stopErr := w.Stop(); stopErr != nil {
		t.Fatalf("%s: Stop: %v", fn, stopErr)
	}
	if err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	return res
}

func TestInstrumentKeepsBehaviour(t *testing.T) {
	tr := newTestRuntime(t)
	ctx := context.Background()
	tests := []struct {
		file, fn string
		args     []uint64
	}{
		{"features.wasm", "run", []uint64{5}},
		{"features.wasm", "run", []uint64{1000}},
		{"spin.wasm", "sum", []uint64{100000}},
		{"spin.wasm", "deep", []uint64{12}},
	}
	for _, tc := range tests {
		orig := readTestdata(t, tc.file)
		plain := tr.instantiate(t, tr.compile(t, orig))
		inst := tr.instantiate(t, tr.compile(t, mustInstrument(t, orig)))
		want, err := plain.ExportedFunction(tc.fn).Call(ctx, tc.args...)
		if err != nil {
			t.Fatalf("%s %s uninstrumented: %v", tc.file, tc.fn, err)
		}
		got := call(t, inst, tc.fn, tc.args...)
		if len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
			t.Errorf("%s %s%v = %v instrumented, %v before", tc.file, tc.fn, tc.args, got, want)
		}
	}
	// features.wasm calls the host's tick once per run.
	if n := tr.ticks.Load(); n != 4 {
		t.Errorf("tick called %d times, want 4", n)
	}
}

func TestInstrumentGoModule(t *testing.T) {
	orig := goModule(t)
	bin := mustInstrument(t, orig)
	t.Logf("Go module: %d bytes, instrumented %d bytes (+%.1f%%)", len(orig), len(bin), 100*float64(len(bin)-len(orig))/float64(len(orig)))
	mod, ctx, logs := instantiateGo(t, bin)
	w := Watch(ctx, mod, time.Minute)
	if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
		t.Fatalf("_initialize: %v (logs %q)", err, logs.String())
	}
	res, err := mod.ExportedFunction("work").Call(ctx, 3)
	if err != nil {
		t.Fatalf("work: %v (logs %q)", err, logs.String())
	}
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// The same computation, natively.
	var v map[string]any
	if err := json.Unmarshal(readTestdata(t, "goplugin/request.json"), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint32(3 * crc32.ChecksumIEEE(b)); uint32(res[0]) != want {
		t.Errorf("work(3) = %#x instrumented, want %#x", uint32(res[0]), want)
	}
}

func TestInstrumentNames(t *testing.T) {
	tr := newTestRuntime(t)
	cm := tr.compile(t, mustInstrument(t, readTestdata(t, "spin.wasm")))
	// $recurse is exported as "recurse"; its name must still be its own
	// after defined functions moved up by one.
	for export, want := range map[string]string{"recurse": "recurse", "deep": "deep"} {
		if got := cm.ExportedFunctions()[export].Name(); got != want {
			t.Errorf("export %q is named %q, want %q", export, got, want)
		}
	}
	if got := cm.ExportedFunctions()["loop"].Name(); got != "" {
		t.Errorf("unnamed function has name %q", got)
	}
}

func TestInstrumentDeterministic(t *testing.T) {
	for _, f := range []string{"features.wasm", "spin.wasm", "calltree.wasm"} {
		orig := readTestdata(t, f)
		a := mustInstrument(t, orig)
		b := mustInstrument(t, append([]byte(nil), orig...))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two runs differ", f)
		}
	}
}

func TestInstrumentRejects(t *testing.T) {
	spin := readTestdata(t, "spin.wasm")
	twice := mustInstrument(t, spin)
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "not a WebAssembly"},
		{"text", []byte("(module)"), "not a WebAssembly"},
		{"component", []byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0}, "not a WebAssembly"},
		{"truncated", spin[:len(spin)-3], "past the end"},
		{"section out of order", append(append([]byte(nil), wasmHeader...), 3, 1, 0, 1, 1, 0), "out of order"},
		{"unknown section", append(append([]byte(nil), wasmHeader...), 14, 0), "unknown section"},
		{"instrumented twice", twice, "already"},
		{"bad opcode", append(append([]byte(nil), wasmHeader...),
			1, 4, 1, 0x60, 0, 0, // type () -> ()
			3, 2, 1, 0, // one function
			10, 5, 1, 3, 0, 0xff, 0x0b), "unknown opcode"},
		{"global index past the end", append(append([]byte(nil), wasmHeader...),
			1, 4, 1, 0x60, 0, 0,
			3, 2, 1, 0,
			10, 8, 1, 6, 0, 0x41, 0, 0x24, 0, 0x0b), "global index 0 out of range"},
		{"overlong LEB", append(append([]byte(nil), wasmHeader...), 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), "overflows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Instrument(tc.in)
			if !errors.Is(err, ErrInstrument) {
				t.Fatalf("err = %v, want ErrInstrument", err)
			}
			if out != nil {
				t.Errorf("output %d bytes with an error", len(out))
			}
			if !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Errorf("err = %q, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestInstrumentEmptyModule(t *testing.T) {
	tr := newTestRuntime(t)
	bin := mustInstrument(t, wasmHeader)
	mod := tr.instantiate(t, tr.compile(t, bin))
	w := Watch(context.Background(), mod, time.Second)
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
