package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/permhost/permhost/internal/proctest"
)

// runaway is a guest call that never ends by itself.
type runaway struct {
	name, file, fn string
	args           []uint64
}

var runaways = []runaway{
	{"infinite loop", "spin.wasm", "loop", nil},
	{"call tree", "calltree.wasm", "run", nil},
	{"deep recursion", "spin.wasm", "deep", []uint64{60}},
	{"loop calling the host", "spin.wasm", "host_loop", nil},
}

// stopOnce runs one runaway under timeout and returns how long after the
// deadline the call returned and the Stop error.
func stopOnce(t *testing.T, ctx context.Context, mod api.Module, rw runaway, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	w := Watch(ctx, mod, timeout)
	_, callErr := mod.ExportedFunction(rw.fn).Call(ctx, rw.args...)
	late := time.Since(start) - timeout
	err := w.Stop()
	if callErr == nil {
		t.Fatalf("%s: call returned without error", rw.name)
	}
	return late, err
}

// TestStopRunaways is the hard deadline: every runaway shape is stopped
// (ErrTimeout) while a GC is forced every millisecond (without the checks'
// safe points the process would freeze, and the test with it), and
// afterwards the process stops burning CPU. How late past the deadline
// each run returns is logged; `make bench` measures it on a quiet machine.
func TestStopRunaways(t *testing.T) {
	tr := newTestRuntime(t)
	ctx := context.Background()
	const timeout = 10 * time.Millisecond
	const runs = 100
	t.Logf("load average at start: %s", loadAverage())

	stopGC := forceGC(time.Millisecond)
	var all []time.Duration
	for _, rw := range runaways {
		cm := tr.compile(t, mustInstrument(t, readTestdata(t, rw.file)))
		var lates []time.Duration
		for i := 0; i < runs; i++ {
			mod := tr.instantiate(t, cm)
			late, err := stopOnce(t, ctx, mod, rw, timeout)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("%s run %d: Stop = %v, want ErrTimeout", rw.name, i, err)
			}
			lates = append(lates, late)
			mod.Close(ctx)
		}
		t.Logf("%-22s stop latency past a %v deadline over %d runs, GC every 1 ms: %v", rw.name, timeout, runs, summarize(lates))
		all = append(all, lates...)
	}
	stopGC()
	t.Logf("all shapes: %v; load average at end: %s", summarize(all), loadAverage())

	// Nothing keeps running: the process settles into idling (a guest left
	// running would use a core's share in every window).
	r, err := proctest.WaitIdle(0, 250*time.Millisecond, 25*time.Millisecond, 10*time.Second)
	switch {
	case errors.Is(err, proctest.ErrUnsupported):
		t.Log(err)
	case err != nil:
		t.Fatal(err)
	case !r.Idle:
		t.Errorf("the process kept busy after the stops: %v", r)
	}
}

// TestStopUnboundedRecursion: recursion without a base case ends, at the
// call-depth bound (the default 10,000 frames) long before wazero's 400 MB
// stack ceiling; the time it took is logged.
func TestStopUnboundedRecursion(t *testing.T) {
	tr := newTestRuntime(t)
	mod := tr.instantiate(t, tr.compile(t, mustInstrument(t, readTestdata(t, "spin.wasm"))))
	ctx := context.Background()
	start := time.Now()
	w := Watch(ctx, mod, time.Minute)
	_, err := mod.ExportedFunction("recurse").Call(ctx, 0)
	d := time.Since(start)
	stopErr := w.Stop()
	if !errors.Is(err, ErrCallDepth) || stopErr != nil {
		t.Fatalf("unbounded recursion: call %v, Stop %v; want ErrCallDepth and nil", err, stopErr)
	}
	t.Logf("ended at the call-depth bound after %v", d)
}

func TestStopGoModule(t *testing.T) {
	bin := mustInstrument(t, goModule(t))
	stopGC := forceGC(time.Millisecond)
	defer stopGC()
	for _, fn := range []string{"spin", "sleep"} {
		mod, ctx, _ := instantiateGo(t, bin)
		w := Watch(ctx, mod, time.Minute)
		if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.Stop(); err != nil {
			t.Fatal(err)
		}
		late, err := stopOnce(t, ctx, mod, runaway{name: fn, fn: fn}, 20*time.Millisecond)
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("%s: Stop = %v, want ErrTimeout", fn, err)
		}
		t.Logf("Go module %s: returned %v after the deadline", fn, late)
	}
}

func TestStopContext(t *testing.T) {
	tr := newTestRuntime(t)
	cm := tr.compile(t, mustInstrument(t, readTestdata(t, "calltree.wasm")))

	t.Run("cancelled", func(t *testing.T) {
		mod := tr.instantiate(t, cm)
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(20*time.Millisecond, cancel)
		defer timer.Stop()
		w := Watch(ctx, mod, time.Minute)
		_, callErr := mod.ExportedFunction("run").Call(ctx)
		if err := w.Stop(); !errors.Is(err, context.Canceled) || callErr == nil {
			t.Errorf("Stop = %v (call %v), want context.Canceled and a stopped call", err, callErr)
		}
	})
	t.Run("context deadline before timeout", func(t *testing.T) {
		mod := tr.instantiate(t, cm)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		w := Watch(ctx, mod, time.Minute)
		_, callErr := mod.ExportedFunction("run").Call(ctx)
		if err := w.Stop(); !errors.Is(err, context.DeadlineExceeded) || callErr == nil {
			t.Errorf("Stop = %v (call %v), want context.DeadlineExceeded and a stopped call", err, callErr)
		}
	})
	t.Run("unwatched call bounded by its context", func(t *testing.T) {
		mod := tr.instantiate(t, cm)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if _, err := mod.ExportedFunction("run").Call(ctx); err == nil {
			t.Error("call tree returned")
		}
	})
}

func TestWatchResults(t *testing.T) {
	tr := newTestRuntime(t)
	ctx := context.Background()
	mod := tr.instantiate(t, tr.compile(t, mustInstrument(t, readTestdata(t, "spin.wasm"))))
	sum := mod.ExportedFunction("sum")

	// A call that finishes in time is trusted, and the instance stays usable.
	for i := 0; i < 3; i++ {
		w := Watch(ctx, mod, time.Second)
		res, err := sum.Call(ctx, 10)
		if err != nil || res[0] != 55 {
			t.Fatalf("sum(10) = %v, %v", res, err)
		}
		if err := w.Stop(); err != nil {
			t.Fatalf("Stop = %v", err)
		}
		if err := w.Stop(); err != nil {
			t.Fatalf("second Stop = %v", err)
		}
	}

	// A zero timeout has already expired: even a result computed before the
	// first poll is not trusted.
	w := Watch(ctx, mod, 0)
	sum.Call(ctx, 1)
	if err := w.Stop(); !errors.Is(err, ErrTimeout) {
		t.Errorf("zero timeout: Stop = %v, want ErrTimeout", err)
	}

	// A cancelled context is reported even if the guest finished.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	w = Watch(cctx, mod, time.Second)
	sum.Call(cctx, 1)
	if err := w.Stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: Stop = %v, want context.Canceled", err)
	}

	// An uninstrumented instance cannot be stopped: Stop says so.
	plain := tr.instantiate(t, tr.compile(t, readTestdata(t, "spin.wasm")))
	w = Watch(ctx, plain, time.Second)
	if err := w.Stop(); !errors.Is(err, ErrInstrument) {
		t.Errorf("uninstrumented: Stop = %v, want ErrInstrument", err)
	}
}

func TestWatchAllocates(t *testing.T) {
	tr := newTestRuntime(t)
	ctx := context.Background()
	mod := tr.instantiate(t, tr.compile(t, mustInstrument(t, readTestdata(t, "spin.wasm"))))
	allocs := testing.AllocsPerRun(1000, func() {
		w := Watch(ctx, mod, time.Second)
		if err := w.Stop(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Watch+Stop allocate %v times", allocs)
	}
}
