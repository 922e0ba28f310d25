package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// depthOf reads depthGlobal of an instrumented instance.
func depthOf(t *testing.T, mod api.Module) int32 {
	t.Helper()
	g := mod.ExportedGlobal(depthGlobal)
	if g == nil {
		t.Fatalf("no %s export", depthGlobal)
	}
	return int32(g.Get())
}

// TestCallDepthBalanced calls functions that leave in every way there is
// (end of body, return, br/br_if/br_table to the function's label, two
// results through such a branch, return_call, return_call_indirect) and
// checks that each returns what it returned before instrumentation and that
// the depth is back to 0 afterwards, without Watch resetting it in between.
func TestCallDepthBalanced(t *testing.T) {
	tr := newTestRuntime(t)
	ctx := context.Background()
	orig := readTestdata(t, "depth.wasm")
	plain := tr.instantiate(t, tr.compile(t, orig))
	inst := tr.instantiate(t, tr.compile(t, mustInstrument(t, orig)))
	tests := []struct {
		fn   string
		args []uint64
	}{
		{"ret", []uint64{0}}, {"ret", []uint64{1}},
		{"br_out", []uint64{0}}, {"br_out", []uint64{1}}, {"br_out", []uint64{2}}, {"br_out", []uint64{3}}, {"br_out", []uint64{5}},
		{"pair_sum", []uint64{0}}, {"pair_sum", []uint64{3}},
		// a million tail calls, alternating direct and indirect: far
		// past the bound if tail calls did not leave their frame
		{"tail_down", []uint64{1_000_000, 0}},
		{"down", []uint64{5000}},
		{"down_add", []uint64{5000}},
		{"heavy", []uint64{1000}},
		{"bulk", []uint64{100}},
	}
	for _, tc := range tests {
		want, err := plain.ExportedFunction(tc.fn).Call(ctx, tc.args...)
		if err != nil {
			t.Fatalf("%s%v uninstrumented: %v", tc.fn, tc.args, err)
		}
		got, err := inst.ExportedFunction(tc.fn).Call(ctx, tc.args...)
		if err != nil {
			t.Fatalf("%s%v: %v", tc.fn, tc.args, err)
		}
		if len(got) != len(want) || got[0] != want[0] {
			t.Errorf("%s%v = %v instrumented, %v before", tc.fn, tc.args, got, want)
		}
		if d := depthOf(t, inst); d != 0 {
			t.Fatalf("depth is %d after %s%v returned, want 0", d, tc.fn, tc.args)
		}
	}
}

// TestCallDepthBound: a frame counts as 1 + (parameters+locals)/32, the
// exported function's own frame included, a leaf function's not at all, and
// the first call past the bound fails with ErrCallDepth. Watch resets the
// depth of a failed instance.
func TestCallDepthBound(t *testing.T) {
	const bound = 100
	tr := newTestRuntimeDepth(t, bound)
	ctx := context.Background()
	mod := tr.instantiate(t, tr.compile(t, mustInstrument(t, readTestdata(t, "depth.wasm"))))
	tests := []struct {
		fn      string
		n       uint64
		wantErr bool
	}{
		{"down", bound - 1, false}, // bound frames of weight 1
		{"down", bound, true},
		{"down_add", bound - 1, false}, // and a leaf on top, uncounted
		{"down_add", bound, true},
		{"heavy", bound/3 - 1, false}, // 33 frames of weight 3: 99
		{"heavy", bound / 3, true},
		{"down", 10, false}, // the instance is still usable after a failure
	}
	for _, tc := range tests {
		w := Watch(ctx, mod, 10*time.Second)
		if d := depthOf(t, mod); d != 0 {
			t.Fatalf("depth %d after Watch, want 0", d)
		}
		res, err := mod.ExportedFunction(tc.fn).Call(ctx, tc.n)
		if err == nil && depthOf(t, mod) != 0 {
			t.Errorf("%s(%d): depth %d after it returned", tc.fn, tc.n, depthOf(t, mod))
		}
		if stopErr := w.Stop(); stopErr != nil {
			t.Fatalf("%s(%d): Stop = %v", tc.fn, tc.n, stopErr)
		}
		if tc.wantErr {
			if !errors.Is(err, ErrCallDepth) {
				t.Errorf("%s(%d) = %v, %v; want ErrCallDepth", tc.fn, tc.n, res, err)
			}
			continue
		}
		if err != nil || res[0] != tc.n {
			t.Errorf("%s(%d) = %v, %v; want %d", tc.fn, tc.n, res, err, tc.n)
		}
	}
}

// TestCallDepthExceptions: a try_table that catches an exception thrown 50
// frames deeper restores its own depth, so catching it again and again does
// not creep towards the bound. (wabt cannot write try_table: the module is
// assembled here.)
func TestCallDepthExceptions(t *testing.T) {
	tr := newTestRuntime(t)
	ctx := context.Background()
	mod := tr.instantiate(t, tr.compile(t, mustInstrument(t, throwCatchModule())))
	catcher := mod.ExportedFunction("catcher")
	for i := 0; i < 2*DefaultMaxCallDepth/50; i++ {
		res, err := catcher.Call(ctx, 50)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if res[0] != 1 {
			t.Fatalf("call %d: catcher(50) = %d, want 1 (caught)", i, res[0])
		}
		if d := depthOf(t, mod); d != 0 {
			t.Fatalf("call %d: depth %d after catcher returned, want 0", i, d)
		}
	}
	res, err := catcher.Call(ctx, 2*DefaultMaxCallDepth)
	if !errors.Is(err, ErrCallDepth) {
		t.Errorf("catcher(%d) = %v, %v; want ErrCallDepth", 2*DefaultMaxCallDepth, res, err)
	}
}

// throwCatchModule is
//
//	(tag $e)
//	(func $thrower (param i32)
//	  (if (i32.eqz (local.get 0)) (then (throw $e)))
//	  (call $thrower (i32.sub (local.get 0) (i32.const 1))))
//	(func (export "catcher") (param i32) (result i32)
//	  (block
//	    (try_table (catch_all 0) (call $thrower (local.get 0)))
//	    (return (i32.const 0)))
//	  (i32.const 1))
func throwCatchModule() []byte {
	thrower := []byte{0, 0x20, 0, 0x45, 0x04, 0x40, 0x08, 0, 0x0b, 0x20, 0, 0x41, 1, 0x6b, 0x10, 0, 0x0b}
	catcher := []byte{0, 0x02, 0x40, 0x1f, 0x40, 1, 0x02, 0, 0x20, 0, 0x10, 0, 0x0b, 0x41, 0, 0x0f, 0x0b, 0x41, 1, 0x0b}
	code := []byte{2}
	code = appendU32(code, uint32(len(thrower)))
	code = append(code, thrower...)
	code = appendU32(code, uint32(len(catcher)))
	code = append(code, catcher...)
	b := append([]byte(nil), wasmHeader...)
	b = appendSection(b, secType, []byte{3, 0x60, 0, 0, 0x60, 1, 0x7f, 0, 0x60, 1, 0x7f, 1, 0x7f})
	b = appendSection(b, secFunction, []byte{2, 1, 2})
	b = appendSection(b, secTag, []byte{1, 0, 0})
	b = appendSection(b, secExport, append(appendName([]byte{1}, "catcher"), 0, 1))
	return appendSection(b, secCode, code)
}

// TestStopBulkMemory: a loop whose body is one 1 MiB memory.fill charges the
// budget by the length, so it polls every iteration or two rather than every
// few thousand (which would put it hundreds of milliseconds past its
// deadline). Counted, not timed: with a deadline already past when the
// call starts, the first poll stops the guest, and the guest has counted
// the fills it did before it.
func TestStopBulkMemory(t *testing.T) {
	tr := newTestRuntime(t)
	ctx := context.Background()
	cm := tr.compile(t, mustInstrument(t, readTestdata(t, "depth.wasm")))
	for i := 0; i < 5; i++ {
		mod := tr.instantiate(t, cm)
		w := Watch(ctx, mod, time.Nanosecond)
		_, callErr := mod.ExportedFunction("fill_counted").Call(ctx)
		if err := w.Stop(); !errors.Is(err, ErrTimeout) || callErr == nil {
			t.Fatalf("run %d: call %v, Stop %v; want an error and ErrTimeout", i, callErr, err)
		}
		fills, ok := mod.Memory().ReadUint32Le(0xf0000)
		if !ok {
			t.Fatal("no counter")
		}
		// Without the charge by length the loop's few instructions would
		// run thousands of times between polls.
		if fills > 2 {
			t.Errorf("run %d: %d fills of 960 KiB before the first poll, want at most 2", i, fills)
		}
		mod.Close(ctx)
	}

	// How late past a deadline such a loop returns is logged (make bench
	// measures deadlines; a loaded machine makes this anything).
	const timeout = 10 * time.Millisecond
	var lates []time.Duration
	for i := 0; i < 20; i++ {
		mod := tr.instantiate(t, cm)
		late, err := stopOnce(t, ctx, mod, runaway{name: "fill_forever", fn: "fill_forever"}, timeout)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("run %d: Stop = %v, want ErrTimeout", i, err)
		}
		lates = append(lates, late)
		mod.Close(ctx)
	}
	t.Logf("1 MiB memory.fill loop returned past a %v deadline: %v", timeout, summarize(lates))
}
