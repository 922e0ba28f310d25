package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/worker"
	"github.com/permhost/permhost/sandbox"
)

// deadline is the per-call deadline of every plugin here: the default.
const deadline = 100 * time.Millisecond

// fixture returns the path of a testdata/wasm fixture.
func fixture(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join("..", "testdata", "wasm", name+".wasm")
	if _, err := os.Stat(p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// examplePlugin returns the path of a built example plugin, or skips: the
// examples are built by `make plugins`, which `make bench` runs first.
func examplePlugin(tb testing.TB, name string) string {
	tb.Helper()
	dir := os.Getenv("PERMHOST_PLUGINS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "build", "plugins")
	}
	p := filepath.Join(dir, name+".wasm")
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("example plugin %s not built (make plugins): %v", name, err)
	}
	return p
}

// request1K is an execute request for `npm test` whose JSON is about 1 KiB,
// with the shell analysis and paths permhost adds.
func request1K(tb testing.TB) abi.Request {
	tb.Helper()
	req := abi.Request{
		ABI:        abi.Current,
		DecisionID: "bench-0001",
		Session: abi.Session{ID: "2a178532-7f3e-4eef-ad46-ab41b93044de", Cwd: "/home/dev/project", Mode: "default",
			Agent: &abi.Peer{Name: "claude-agent-acp", Version: "0.23.1"}},
		ToolCall: abi.ToolCall{ID: "toolu_bench_0001", Title: "npm test -- --watch=false", Kind: abi.KindExecute, Status: "pending",
			RawInput: json.RawMessage(`{"command":"npm test -- --watch=false","description":"Run the unit tests"}`),
			ToolName: "Bash"},
		Options: []abi.Option{
			{OptionID: "allow_always", Name: "Always Allow", Kind: abi.OptionAllowAlways, Durable: true},
			{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
			{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
		},
		Shell: &abi.Shell{Source: "npm test -- --watch=false", Parsed: true,
			Commands: []abi.Command{{Argv: []string{"npm", "test", "--", "--watch=false"}}}},
		Paths: []abi.Path{{Path: "/home/dev/project/package.json", Access: abi.AccessRead, InsideCwd: true, Source: "argv"}},
	}
	b, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	req.Raw = json.RawMessage(`{"sessionId":"2a178532-7f3e-4eef-ad46-ab41b93044de","note":"` + strings.Repeat("x", max(0, 1024-len(b)-70)) + `"}`)
	if b, _ = json.Marshal(req); len(b) < 1000 || len(b) > 1100 {
		tb.Fatalf("request is %d bytes, want about 1 KiB", len(b))
	}
	return req
}

// teamRulesConfig allows `npm test`, the decision request1K asks for.
const teamRulesConfig = `{"rules":[
 {"action":"reject","command":["rm","-rf"],"reason":"no recursive deletes"},
 {"action":"reject","kind":"edit","paths":["/etc/**","~/.ssh/**"]},
 {"action":"ask","kind":"fetch","domains":["*.example.com"]},
 {"action":"allow","kind":"execute","command":[["npm","test"],["git","status"],["go","test"]]},
 {"action":"allow","kind":"edit","paths":["src/**","docs/*.md"]}]}`

func load(tb testing.TB, path string, config string, pool int) *host.Plugin {
	tb.Helper()
	return loadWith(tb, path, config, pool, false)
}

// loadWith is load, of a trusted module (host.Options.Trusted) when
// trusted.
func loadWith(tb testing.TB, path string, config string, pool int, trusted bool) *host.Plugin {
	tb.Helper()
	ctx := context.Background()
	opts := host.Options{Path: path, CacheDir: cacheDir(tb), PoolSize: pool,
		Limits: sandbox.Limits{Timeout: deadline}, Trusted: trusted}
	if config != "" {
		opts.Config = json.RawMessage(config)
	}
	p, err := host.Load(ctx, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close(ctx) })
	return p
}

var (
	cacheOnce sync.Once
	cacheRoot string
)

// cacheDir is one compile cache for the whole run, so that benchmarks
// measure calls, not compilation.
func cacheDir(tb testing.TB) string {
	cacheOnce.Do(func() {
		cacheRoot, _ = os.MkdirTemp("", "permhost-bench-cache-")
	})
	return cacheRoot
}

func TestMain(m *testing.M) {
	// This test binary is also the child of the process-isolated rows, as
	// permhost's own binary is for `isolation = "process"`.
	if len(os.Args) > 1 && os.Args[1] == worker.Command {
		os.Exit(worker.Serve(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
	worker.Enable()
	code := m.Run()
	if cacheRoot != "" {
		os.RemoveAll(cacheRoot)
	}
	if hookDir != "" {
		os.RemoveAll(hookDir)
	}
	os.Exit(code)
}

// TestRequest1K checks the benchmarks' request and the plugins' answers to
// it, so that a benchmark never times a failure.
func TestRequest1K(t *testing.T) {
	req := request1K(t)
	d, err := load(t, fixture(t, "good"), "", 1).Decide(context.Background(), req)
	if err != nil || d.Outcome != abi.OutcomeAbstain {
		t.Fatalf("good: %+v, %v", d, err)
	}
	d, err = load(t, examplePlugin(t, "team-rules"), teamRulesConfig, 1).Decide(context.Background(), req)
	if err != nil || d.Outcome != abi.OutcomeAllow {
		t.Fatalf("team-rules: %+v, %v; want allow", d, err)
	}
	out, err := runHook(hookBinary(t), mustJSON(t, req))
	if err != nil || out.Outcome != abi.OutcomeAbstain {
		t.Fatalf("hook: %+v, %v", out, err)
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkDecide is P2 and P3: the same constant decision on the same
// 1 KiB request, warm, made five ways.
func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	req := request1K(b)
	input := mustJSON(b, req)
	wasm, err := os.ReadFile(fixture(b, "good"))
	if err != nil {
		b.Fatal(err)
	}

	// permhost's host: encode, call under the deadline, decode, validate.
	b.Run("permhost", func(b *testing.B) {
		p := load(b, fixture(b, "good"), "", 1)
		decideLoop(b, func() error { _, err := p.Decide(ctx, req); return err })
	})
	b.Run("team-rules", func(b *testing.B) {
		p := load(b, examplePlugin(b, "team-rules"), teamRulesConfig, 1)
		decideLoop(b, func() error { _, err := p.Decide(ctx, req); return err })
	})
	// The same two behind the process wall: the request framed to a worker
	// child over a pipe, decided there, the answer framed back and checked.
	b.Run("permhost-process", func(b *testing.B) {
		p := loadProcess(b, fixture(b, "good"), "", 1)
		decideLoopProcess(b, func() error { return p.Call(ctx, req).Err })
	})
	// The same constant plugin behind the wall, each side parking on Go's
	// poller at once instead of polling the pipe first.
	b.Run("permhost-process-park", func(b *testing.B) {
		p := loadProcessPolling(b, fixture(b, "good"), "", 1, -1)
		decideLoopProcess(b, func() error { return p.Call(ctx, req).Err })
	})
	b.Run("team-rules-process", func(b *testing.B) {
		p := loadProcess(b, examplePlugin(b, "team-rules"), teamRulesConfig, 1)
		decideLoopProcess(b, func() error { return p.Call(ctx, req).Err })
	})
	// Stock Extism go-sdk, the same module: without a timeout (its fastest),
	// and with Manifest.Timeout (wazero's close-on-context-done), set to 1 s
	// so that a stall of the shared machine does not close the plugin
	// mid-benchmark: the cost is the mechanism, not the value.
	for _, timeout := range []uint64{0, 1000} {
		name := "extism"
		if timeout > 0 {
			name = "extism-timeout"
		}
		b.Run(name, func(b *testing.B) {
			m := extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}, Timeout: timeout}
			cp, err := extism.NewCompiledPlugin(ctx, m, extism.PluginConfig{EnableWasi: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cp.Close(ctx)
			pl, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer pl.Close(ctx)
			decideLoop(b, func() error {
				in, err := json.Marshal(req)
				if err != nil {
					return err
				}
				rc, out, err := pl.Call(abi.ExportDecide, in)
				if err != nil || rc != 0 {
					return fmt.Errorf("rc %d: %v", rc, err)
				}
				var d abi.Decision
				return json.Unmarshal(out, &d)
			})
		})
	}
	// The floor: wazero calling permhost_decide with do-nothing host
	// functions and a per-call deadline; no encoding, no decoding.
	b.Run("wazero-raw", func(b *testing.B) {
		call := rawWazero(b, wasm)
		decideLoop(b, func() error {
			// 1 s, not the plugin deadline: a stall of the shared machine
			// must not fail the benchmark; the cost is the same.
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return call(cctx)
		})
	})
	// P3: a process started per decision.
	b.Run("hook-process", func(b *testing.B) {
		bin := hookBinary(b)
		decideLoop(b, func() error { _, err := runHook(bin, input); return err })
	})
	b.Run("hook-sh", func(b *testing.B) {
		decideLoop(b, func() error {
			cmd := exec.Command("/bin/sh", "-c", `cat >/dev/null; echo '{"outcome":"abstain","reason":"good fixture: constant decision"}'`)
			cmd.Stdin = bytes.NewReader(input)
			out, err := cmd.Output()
			if err != nil {
				return err
			}
			var d abi.Decision
			return json.Unmarshal(out, &d)
		})
	})
}

func decideLoop(b *testing.B, decide func() error) {
	b.Helper()
	if err := decide(); err != nil { // warm up, and never time a failure
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := decide(); err != nil {
			b.Fatal(err)
		}
	}
}

// rawWazero instantiates wasm with a no-op for each function it imports and
// returns a call of its permhost_decide.
func rawWazero(b *testing.B, wasm []byte) func(context.Context) error {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	b.Cleanup(func() { rt.Close(ctx) })
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	builders := map[string]wazero.HostModuleBuilder{}
	for _, f := range compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		hb, ok := builders[mod]
		if !ok {
			hb = rt.NewHostModuleBuilder(mod)
			builders[mod] = hb
		}
		results := f.ResultTypes()
		hb = hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			for i := range results {
				stack[i] = 0
			}
		}), f.ParamTypes(), results).Export(name)
		builders[mod] = hb
	}
	for mod, hb := range builders {
		if _, err := hb.Instantiate(ctx); err != nil {
			b.Fatalf("host module %s: %v", mod, err)
		}
	}
	m, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		b.Fatal(err)
	}
	fn := m.ExportedFunction(abi.ExportDecide)
	if fn == nil {
		b.Fatal("no permhost_decide")
	}
	stack := make([]uint64, 1)
	return func(ctx context.Context) error { return fn.CallWithStack(ctx, stack) }
}

var (
	hookOnce sync.Once
	hookDir  string
	hookBin  string
	hookErr  error
)

// hookBinary builds cmd/permhost-hook once.
func hookBinary(tb testing.TB) string {
	tb.Helper()
	hookOnce.Do(func() {
		hookDir, hookErr = os.MkdirTemp("", "permhost-hook-")
		if hookErr != nil {
			return
		}
		hookBin = filepath.Join(hookDir, "permhost-hook")
		out, err := exec.Command("go", "build", "-o", hookBin, "./cmd/permhost-hook").CombinedOutput()
		if err != nil {
			hookErr = fmt.Errorf("go build ./cmd/permhost-hook: %v\n%s", err, out)
		}
	})
	if hookErr != nil {
		tb.Fatal(hookErr)
	}
	return hookBin
}

func runHook(bin string, input []byte) (abi.Decision, error) {
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return abi.Decision{}, fmt.Errorf("%v: %s", err, stderr.Bytes())
	}
	var d abi.Decision
	if err := json.Unmarshal(out, &d); err != nil {
		return abi.Decision{}, err
	}
	return d, nil
}

// BenchmarkThroughput is P5: decisions per second with the instance pool
// (GOMAXPROCS instances), callers on every core.
func BenchmarkThroughput(b *testing.B) {
	ctx := context.Background()
	req := request1K(b)
	for _, c := range []struct{ name, path, config string }{
		{"constant", fixture(b, "good"), ""},
		{"team-rules", "team-rules", teamRulesConfig},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := c.path
			if !strings.HasSuffix(path, ".wasm") {
				path = examplePlugin(b, path)
			}
			p := load(b, path, c.config, 0)
			if _, err := p.Decide(ctx, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism(2) // 2×GOMAXPROCS callers keep every pooled instance busy
			b.ResetTimer()
			// A decision that misses its deadline on a loaded machine is
			// counted, not fatal: the proxy would have answered from the
			// fallback, and the table shows how often.
			var failures atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.Decide(ctx, req); err != nil {
						if host.KindOf(err) != host.KindTimeout {
							b.Error(err)
							return
						}
						failures.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			b.ReportMetric(float64(failures.Load()), "timeouts")
		})
	}
}

// fallbackCases are the hostile fixtures of BenchmarkFallback and
// BenchmarkFallbackProcess, with the kinds testdata/wasm/README.md
// expects.
var fallbackCases = []struct {
	name string
	want []host.Kind
}{
	{"infinite_loop", []host.Kind{host.KindTimeout}},
	{"call_tree", []host.Kind{host.KindTimeout}},
	// The call-depth bound (a timeout only if the machine stalls).
	{"deep_recursion", []host.Kind{host.KindTrap, host.KindTimeout}},
	// Late memory.grow calls near the cap can be overtaken by the deadline.
	{"memory_grow", []host.Kind{host.KindMemory, host.KindTimeout}},
	{"log_flood", []host.Kind{host.KindTimeout}},
	{"huge_output", []host.Kind{host.KindOutputTooLarge}},
	{"invalid_json", []host.Kind{host.KindBadOutput}},
	{"unreachable", []host.Kind{host.KindTrap}},
	{"table_grow", []host.Kind{host.KindTrap}},
	{"fd_write_iovecs", []host.Kind{host.KindTimeout}},
	{"random_get_loop", []host.Kind{host.KindTimeout}},
	{"duplicate_key", []host.Kind{host.KindBadOutput}},
}

// BenchmarkFallback times, for each hostile fixture, a call from its start
// until the host returns the failure from which the builtin fallback
// answers. Run it with -benchtime Nx: every call of a timing-out fixture
// takes the whole deadline.
func BenchmarkFallback(b *testing.B) {
	ctx := context.Background()
	req := request1K(b)
	for _, c := range fallbackCases {
		b.Run(c.name, func(b *testing.B) {
			p := load(b, fixture(b, c.name), "", 0)
			var took []time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				_, err := p.Decide(ctx, req)
				took = append(took, time.Since(start))
				var he *host.Error
				if !errors.As(err, &he) {
					b.Fatalf("%s decided: %v", c.name, err)
				}
				if !slices.Contains(c.want, he.Kind) {
					b.Fatalf("%s failed with %s, want one of %v: %v", c.name, he.Kind, c.want, err)
				}
			}
			ms := Millis(took)
			b.ReportMetric(Percentile(ms, 50), "p50-ms")
			b.ReportMetric(Percentile(ms, 99), "p99-ms")
			b.ReportMetric(Percentile(ms, 100), "max-ms")
		})
	}
}
