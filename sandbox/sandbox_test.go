package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name  string
		l     Limits
		field string // empty: valid
	}{
		{"zero means defaults", Limits{}, ""},
		{"defaults", DefaultLimits(), ""},
		{"one page", Limits{MemoryBytes: WasmPageSize}, ""},
		{"4 GiB", Limits{MemoryBytes: 4 << 30}, ""},
		{"below a page", Limits{MemoryBytes: 1000}, "MemoryBytes"},
		{"above 4 GiB", Limits{MemoryBytes: 4<<30 + 1}, "MemoryBytes"},
		{"negative timeout", Limits{Timeout: -time.Millisecond}, "Timeout"},
		{"huge timeout", Limits{Timeout: time.Hour}, "Timeout"},
		{"negative output", Limits{MaxOutput: -1}, "MaxOutput"},
		{"huge input", Limits{MaxInput: 2 << 30}, "MaxInput"},
		{"negative logs", Limits{MaxLogBytes: -5}, "MaxLogBytes"},
		{"negative call depth", Limits{MaxCallDepth: -1}, "MaxCallDepth"},
		{"huge call depth", Limits{MaxCallDepth: 10_000_000}, "MaxCallDepth"},
		{"call depth 1", Limits{MaxCallDepth: 1}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadLimits) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate = %v, want ErrBadLimits naming %s", err, tc.field)
			}
		})
	}
}

func TestLimitsDefaults(t *testing.T) {
	got := Limits{Timeout: time.Second, MemoryBytes: 3*WasmPageSize + 1}.WithDefaults()
	want := DefaultLimits()
	want.Timeout = time.Second
	want.InitTimeout = 10 * time.Second // 10 × Timeout, over the 5 s floor
	want.MemoryBytes = 3*WasmPageSize + 1
	if got != want {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
	if p := got.MemoryPages(); p != 3 {
		t.Errorf("MemoryPages = %d, want 3 (rounded down)", p)
	}
	if p := (Limits{}).MemoryPages(); p != 512 {
		t.Errorf("default MemoryPages = %d, want 512", p)
	}
}

func ExampleLimits_WithDefaults() {
	l := sandboxLimits(Limits{Timeout: 250 * time.Millisecond})
	fmt.Println(l.Timeout, l.MemoryBytes>>20, "MiB", l.MemoryPages(), "pages", l.MaxOutput>>10, "KiB out")
	// Output: 250ms 32 MiB 512 pages 1024 KiB out
}

func sandboxLimits(l Limits) Limits { return l.WithDefaults() }

func TestNewRuntimeRejectsBadLimits(t *testing.T) {
	_, err := NewRuntime(context.Background(), Limits{Timeout: -1}, nil)
	if !errors.Is(err, ErrBadLimits) {
		t.Fatalf("NewRuntime = %v, want ErrBadLimits", err)
	}
}

func TestCheckImports(t *testing.T) {
	ctx := context.Background()
	r, err := NewRuntime(ctx, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	tests := []struct {
		file string
		want string // empty: allowed
	}{
		{"imports/allowed.wasm", ""},
		{"imports/forbidden_func.wasm", "env.socket_connect"},
		{"imports/forbidden_memory.wasm", "memory env.memory"},
		{"imports/bad_poll.wasm", "wrong signature"},
		{"spin.wasm", "test.tick"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			cm, err := r.CompileModule(ctx, readTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckImports(cm)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckImports = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrForbiddenImport) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckImports = %v, want ErrForbiddenImport naming %s", err, tc.want)
			}
		})
	}
	// Instrumenting adds only the poll import, which passes.
	cm, err := r.CompileModule(ctx, mustInstrument(t, readTestdata(t, "imports/allowed.wasm")))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckImports(cm); err != nil {
		t.Errorf("instrumented: CheckImports = %v", err)
	}
	// A module that imports the poll function itself is refused by Instrument.
	if _, err := Instrument(readTestdata(t, "imports/bad_poll.wasm")); !errors.Is(err, ErrInstrument) {
		t.Errorf("Instrument of a module importing %s = %v, want ErrInstrument", hostModule, err)
	}
}

func TestMemoryLimit(t *testing.T) {
	ctx := context.Background()
	r, err := NewRuntime(ctx, Limits{MemoryBytes: 2 * WasmPageSize}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	// (module (memory (export "m") 1) (func (export "grow") (param i32) (result i32) local.get 0 memory.grow))
	bin := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 6, 1, 0x60, 1, 0x7f, 1, 0x7f,
		3, 2, 1, 0,
		5, 3, 1, 0, 1,
		7, 8, 1, 4, 'g', 'r', 'o', 'w', 0, 0,
		10, 8, 1, 6, 0, 0x20, 0, 0x40, 0, 0x0b}
	mod, err := r.InstantiateWithConfig(ctx, mustInstrument(t, bin), ModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	grow := mod.ExportedFunction("grow")
	for _, tc := range []struct{ delta, want uint64 }{{1, 1}, {1, 0xffffffff}} {
		res, err := grow.Call(ctx, tc.delta)
		if err != nil || res[0] != tc.want {
			t.Errorf("memory.grow %d = %v, %v; want %#x", tc.delta, res, err, tc.want)
		}
	}
}

func TestModuleConfigGrantsNothing(t *testing.T) {
	ctx := context.Background()
	r, err := NewRuntime(ctx, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	// testdata/imports/probe.wat: environ_sizes_get and args_sizes_get write
	// their counts at 0, 4, 8 and 12;
	// fd_prestat_get(3) must fail with EBADF (8): no preopened directory.
	bin := mustInstrument(t, readTestdata(t, "imports/probe.wasm"))
	mod, err := r.InstantiateWithConfig(ctx, bin, ModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := mod.ExportedFunction("probe").Call(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != 8 {
		t.Errorf("fd_prestat_get(3) = %d, want EBADF (8)", res[0])
	}
	mem, _ := mod.Memory().Read(0, 16)
	for i, name := range []string{"environ count", "environ bytes", "args count", "args bytes"} {
		if v := uint32(mem[4*i]) | uint32(mem[4*i+1])<<8; v != 0 {
			t.Errorf("%s = %d, want 0", name, v)
		}
	}
}

func TestLimitedWriter(t *testing.T) {
	w := newLimitedWriter(10)
	for _, s := range []string{"hello", " world", "!!"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := w.String(); got != "hello worl" {
		t.Errorf("kept %q", got)
	}
	if d := w.Dropped(); d != 3 {
		t.Errorf("Dropped = %d, want 3", d)
	}
	w.Reset()
	if w.Len() != 0 || w.Dropped() != 0 {
		t.Errorf("after Reset: %d kept, %d dropped", w.Len(), w.Dropped())
	}

	// Concurrent writers (stdout and stderr sharing one writer) under -race.
	w = newLimitedWriter(100)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				w.Write([]byte("xy"))
			}
		}()
	}
	wg.Wait()
	if w.Len() != 100 || w.Dropped() != 700 {
		t.Errorf("concurrent: %d kept, %d dropped; want 100 and 700", w.Len(), w.Dropped())
	}
}
