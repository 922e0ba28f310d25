package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// testFeatures are what the hand-written fixtures use beyond Core 2.0.
const testFeatures = api.CoreFeaturesV2 | experimental.CoreFeaturesThreads |
	experimental.CoreFeaturesTailCall | experimental.CoreFeaturesExceptionHandling

var goWasm struct {
	once sync.Once
	path string
	err  error
	dir  string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if goRuntime.r != nil {
		goRuntime.r.Close(context.Background())
	}
	if goWasm.dir != "" {
		os.RemoveAll(goWasm.dir)
	}
	os.Exit(code)
}

// goModule builds testdata/goplugin with the installed Go toolchain, once.
func goModule(t testing.TB) []byte {
	t.Helper()
	goWasm.once.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			goWasm.err = fmt.Errorf("no go toolchain: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "sandbox-goplugin")
		if err != nil {
			goWasm.err = err
			return
		}
		goWasm.dir = dir
		goWasm.path = filepath.Join(dir, "plugin.wasm")
		cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", goWasm.path, "./testdata/goplugin")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			goWasm.err = fmt.Errorf("building the Go test plugin: %v\n%s", err, out)
		}
	})
	if goWasm.err != nil {
		if strings.HasPrefix(goWasm.err.Error(), "no go toolchain") {
			t.Skip(goWasm.err)
		}
		t.Fatal(goWasm.err)
	}
	b, err := os.ReadFile(goWasm.path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustInstrument(t testing.TB, b []byte) []byte {
	t.Helper()
	out, err := Instrument(b)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	return out
}

// testRuntime is a runtime with the features the fixtures use, WASI, the
// poll function, a "test" host module (tick counts its calls) and the
// "testg" module features.wat imports a global from.
type testRuntime struct {
	wazero.Runtime
	ticks atomic.Int64
}

func newTestRuntime(t testing.TB) *testRuntime {
	t.Helper()
	return newTestRuntimeDepth(t, DefaultMaxCallDepth)
}

// newTestRuntimeDepth is newTestRuntime with the call-depth bound maxDepth.
func newTestRuntimeDepth(t testing.TB, maxDepth int) *testRuntime {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(testFeatures))
	t.Cleanup(func() { r.Close(ctx) })
	if err := instantiateHostModules(ctx, r, Limits{MaxCallDepth: maxDepth}); err != nil {
		t.Fatal(err)
	}
	tr := &testRuntime{Runtime: r}
	_, err := r.NewHostModuleBuilder("test").
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) { tr.ticks.Add(1) }), nil, nil).
		Export("tick").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.InstantiateWithConfig(ctx, readTestdata(t, "testg.wasm"), wazero.NewModuleConfig().WithName("testg")); err != nil {
		t.Fatal(err)
	}
	return tr
}

func (tr *testRuntime) instantiate(t testing.TB, cm wazero.CompiledModule) api.Module {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mod, err := tr.InstantiateModule(ctx, cm, ModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(context.Background()) })
	return mod
}

func (tr *testRuntime) compile(t testing.TB, bin []byte) wazero.CompiledModule {
	t.Helper()
	cm, err := tr.CompileModule(context.Background(), bin)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return cm
}

// forceGC runs a garbage collection every period until the returned function
// is called: the condition under which an unchecked guest freezes the process.
func forceGC(period time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				runtime.GC()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

type percentiles struct{ p50, p99, max time.Duration }

func summarize(d []time.Duration) percentiles {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return percentiles{at(0.50), at(0.99), s[len(s)-1]}
}

func (p percentiles) String() string {
	return fmt.Sprintf("p50 %v, p99 %v, max %v", p.p50, p.p99, p.max)
}

// loadAverage is the 1-minute load average, to read latencies against.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// goRuntime is shared by the tests that run the Go module: compiling 3.3 MB
// is the slowest step under -race, so it happens once.
var goRuntime struct {
	once sync.Once
	r    wazero.Runtime
	cm   wazero.CompiledModule
	err  error
}

// instantiateGo returns a new instance of bin, the instrumented Go module,
// in a runtime from NewRuntime with default limits, and a context whose
// calls write the guest's stdout and stderr to the writer returned.
func instantiateGo(t testing.TB, bin []byte) (api.Module, context.Context, *limitedWriter) {
	t.Helper()
	ctx := context.Background()
	goRuntime.once.Do(func() {
		goRuntime.r, goRuntime.err = NewRuntime(ctx, Limits{}, nil)
		if goRuntime.err == nil {
			cctx := experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
			goRuntime.cm, goRuntime.err = CompileModule(cctx, goRuntime.r, bin)
		}
		if goRuntime.err == nil {
			goRuntime.err = CheckImports(goRuntime.cm)
		}
	})
	if goRuntime.err != nil {
		t.Fatal(goRuntime.err)
	}
	logs := newLimitedWriter(4096)
	ctx = WithStdio(ctx, logs, logs)
	mod, err := goRuntime.r.InstantiateModule(ctx, goRuntime.cm, ModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(context.Background()) })
	return mod, ctx, logs
}
