package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/permhost/permhost/internal/wasmgen"
)

// TestMeasureEachLimit: a module one over a limit is refused with a
// *LimitError naming that limit and the value, and the same module with
// the limit one higher passes and compiles (so the generator's modules are
// valid and the verifier is what refused them).
func TestMeasureEachLimit(t *testing.T) {
	const n = 8
	tests := []struct {
		limit string
		set   func(*Limits, int)
		shape wasmgen.Shape // n over the shell's own
		value uint64        // what the verifier counts for shape
	}{
		{"MaxFunctions", func(l *Limits, v int) { l.MaxFunctions = v }, wasmgen.Shape{Functions: n}, n + 2},
		{"MaxTypes", func(l *Limits, v int) { l.MaxTypes = v }, wasmgen.Shape{Types: n}, n + 4},
		{"MaxGlobals", func(l *Limits, v int) { l.MaxGlobals = v }, wasmgen.Shape{Globals: n}, n},
		{"MaxImports", func(l *Limits, v int) { l.MaxImports = v }, wasmgen.Shape{Imports: n}, n + 1},
		{"MaxExports", func(l *Limits, v int) { l.MaxExports = v }, wasmgen.Shape{Exports: n}, n + 3},
		{"MaxTables", func(l *Limits, v int) { l.MaxTables = v }, wasmgen.Shape{Tables: n}, n},
		{"MaxTableEntries", func(l *Limits, v int) { l.MaxTableEntries = v }, wasmgen.Shape{Tables: 2, TableMin: n}, 2 * n},
		{"MaxElementSegments", func(l *Limits, v int) { l.MaxElementSegments = v }, wasmgen.Shape{ElementSegments: n}, n},
		{"MaxElementEntries", func(l *Limits, v int) { l.MaxElementEntries = v }, wasmgen.Shape{ElementEntries: n}, n},
		{"MaxDataSegments", func(l *Limits, v int) { l.MaxDataSegments = v }, wasmgen.Shape{DataSegments: n}, n},
		{"MaxDataBytes", func(l *Limits, v int) { l.MaxDataBytes = v }, wasmgen.Shape{DataBytes: n}, n},
		{"MaxLocals", func(l *Limits, v int) { l.MaxLocals = v }, wasmgen.Shape{Locals: n}, n},
		{"MaxFunctionBytes", func(l *Limits, v int) { l.MaxFunctionBytes = v }, wasmgen.Shape{FunctionBytes: 1000}, 1000},
		{"MaxBrTableTargets", func(l *Limits, v int) { l.MaxBrTableTargets = v }, wasmgen.Shape{BrTableTargets: n}, n},
		{"MaxBlockDepth", func(l *Limits, v int) { l.MaxBlockDepth = v }, wasmgen.Shape{BlockDepth: n}, n},
		{"MaxCustomBytes", func(l *Limits, v int) { l.MaxCustomBytes = v }, wasmgen.Shape{CustomBytes: 1000}, 1000},
		{"MaxModuleBytes", func(l *Limits, v int) { l.MaxModuleBytes = v }, wasmgen.Shape{ModuleBytes: 1000}, 0},
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	for _, tc := range tests {
		t.Run(tc.limit, func(t *testing.T) {
			bin := wasmgen.Module(tc.shape)
			value := tc.value
			if value == 0 {
				value = uint64(len(bin))
			}
			var over Limits
			tc.set(&over, int(value)-1)
			_, err := Measure(bin, over)
			var le *LimitError
			if !errors.As(err, &le) || !errors.Is(err, ErrLimit) {
				t.Fatalf("Measure = %v, want a *LimitError wrapping ErrLimit", err)
			}
			if le.Limit != tc.limit || le.Value != value || le.Max != value-1 {
				t.Errorf("LimitError %+v, want %s: %d over %d", le, tc.limit, value, value-1)
			}
			for _, s := range []string{"Limits." + tc.limit, fmt.Sprint(value), fmt.Sprint(value - 1)} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q does not name %q", err, s)
				}
			}

			var at Limits
			tc.set(&at, int(value))
			s, err := Measure(bin, at)
			if err != nil {
				t.Fatalf("at the limit: Measure = %v", err)
			}
			if err := at.Check(s); err != nil {
				t.Errorf("at the limit: Check = %v", err)
			}
			if err := over.Check(s); !errors.As(err, &le) || le.Limit != tc.limit {
				t.Errorf("one over: Check = %v, want %s", err, tc.limit)
			}
			cm, err := r.CompileModule(ctx, bin)
			if err != nil {
				t.Fatalf("the generated module does not compile: %v", err)
			}
			cm.Close(ctx)
		})
	}
}

// TestMeasureRefusesEarly: the hostile generated modules, millions of
// items each, are refused under the default limits, and a vector that
// declares billions of items is refused by its count, before the verifier
// reads (or could read) them.
func TestMeasureRefusesEarly(t *testing.T) {
	for _, h := range wasmgen.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			_, err := Measure(wasmgen.Module(h.Shape), Limits{})
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != h.Limit {
				t.Fatalf("Measure = %v, want %s", err, h.Limit)
			}
		})
	}
	// A global section claiming 2^32-1 globals in five bytes.
	bin := append(append([]byte(nil), wasmHeader...), secGlobal, 5, 0xff, 0xff, 0xff, 0xff, 0x0f)
	_, err := Measure(bin, Limits{})
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxGlobals" || le.Value != 1<<32-1 {
		t.Errorf("Measure = %v, want MaxGlobals refused at 4294967295", err)
	}
}

// TestMeasureRealPlugins: the fixtures and the example plugins fit the
// default limits with room to spare. The shapes are logged: they are the
// measurements the defaults are sized from (RATIONALE.md).
func TestMeasureRealPlugins(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "wasm", "*.wasm"))
	for _, dir := range []string{os.Getenv("PERMHOST_PLUGINS_DIR"), filepath.Join("..", "build", "plugins")} {
		if dir != "" {
			more, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
			files = append(files, more...)
		}
	}
	refused := map[string]string{"huge_tables.wasm": "MaxTables", "huge_table.wasm": "MaxTableEntries"}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Measure(b, Limits{})
		if want, ok := refused[filepath.Base(f)]; ok {
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != want {
				t.Errorf("%s: Measure = %v, want %s", f, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if s.ModuleBytes > 1<<20 {
			t.Logf("%s: %+v", filepath.Base(f), s)
		}
	}
	if !testing.Short() {
		s, err := Measure(goModule(t), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("testdata/goplugin: %+v", s)
	}
}

// FuzzMeasure: the verifier never panics on any input, fails only with a
// *LimitError or ErrInstrument, and a shape it returns fits the limits it
// was measured under.
func FuzzMeasure(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.wasm")
	more, _ := filepath.Glob("../testdata/wasm/*.wasm")
	for _, p := range append(seeds, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(wasmgen.Module(wasmgen.Shape{Tables: 2, TableMin: 3, ElementEntries: 4, DataBytes: 5, BrTableTargets: 6, BlockDepth: 7, Locals: 8}))
	small := Limits{MaxFunctions: 50, MaxTableEntries: 100, MaxElementEntries: 100, MaxBrTableTargets: 100, MaxBlockDepth: 20, MaxDataBytes: 1000}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, l := range []Limits{{}, small} {
			s, err := Measure(in, l)
			var le *LimitError
			switch {
			case err == nil:
				if err := l.Check(s); err != nil {
					t.Fatalf("Measure accepted a shape Check refuses: %v", err)
				}
			case errors.As(err, &le), errors.Is(err, ErrInstrument):
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
	})
}

// A module declaring a table of 100 million entries (800 MB of wazero's
// memory at instantiation, from a module of a hundred bytes) is refused
// before it is compiled.
func ExampleMeasure() {
	bin := wasmgen.Module(wasmgen.Shape{Tables: 1, TableMin: 100_000_000})
	_, err := Measure(bin, Limits{})
	var le *LimitError
	fmt.Println(errors.As(err, &le), le.Limit, le.Value)
	fmt.Println(err)
	// Output:
	// true MaxTableEntries 100000000
	// sandbox: module over a limit: table entries (declared minimums): 100000000, more than Limits.MaxTableEntries (250000)
}
