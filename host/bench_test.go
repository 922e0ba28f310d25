package host

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/sandbox"
)

// request1K is a realistic request whose JSON is about 1 KiB.
func request1K(tb testing.TB) abi.Request {
	req := request("bench-1")
	req.ToolCall.RawInput = json.RawMessage(`{"command":"npm test -- --watch=false","description":"Run the unit tests"}`)
	req.Shell = &abi.Shell{Source: "npm test -- --watch=false", Parsed: true,
		Commands: []abi.Command{{Argv: []string{"npm", "test", "--", "--watch=false"}}}}
	req.Paths = []abi.Path{{Path: "/work/package.json", Access: abi.AccessRead, InsideCwd: true, Source: "argv"}}
	b, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	req.Raw = json.RawMessage(`{"pad":"` + strings.Repeat("x", max(0, 1024-len(b)-20)) + `"}`)
	if b, _ = json.Marshal(req); len(b) < 1000 || len(b) > 1100 {
		tb.Fatalf("request is %d bytes", len(b))
	}
	return req
}

func benchDecide(b *testing.B, fixtureName string) {
	p := load(b, fixtureName, Options{PoolSize: 1})
	ctx := context.Background()
	req := request1K(b)
	if _, err := p.Decide(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Decide(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideWarm: a constant-outcome plugin on a 1 KiB request, warm
// instance, through Decide (encode, call, decode, validate).
func BenchmarkDecideWarm(b *testing.B) { benchDecide(b, "good") }

// BenchmarkDecideWarmReadsInput: the same with a plugin that reads the whole
// input through input_load_u64 and answers with part of it.
func BenchmarkDecideWarmReadsInput(b *testing.B) { benchDecide(b, "echo") }

// BenchmarkExtismPluginCall: stock Extism go-sdk Plugin.Call on the same
// module and input (uninstrumented, no deadline), for comparison.
func BenchmarkExtismPluginCall(b *testing.B) {
	ctx := context.Background()
	wasm, err := os.ReadFile(fixture(b, "good"))
	if err != nil {
		b.Fatal(err)
	}
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}},
		extism.PluginConfig{EnableWasi: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Close(ctx)
	pl, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer pl.Close(ctx)
	input, _ := json.Marshal(request1K(b))
	b.ReportAllocs()
	for b.Loop() {
		rc, out, err := pl.Call(abi.ExportDecide, input)
		if err != nil || rc != 0 {
			b.Fatal(rc, err)
		}
		var d abi.Decision
		if err := json.Unmarshal(out, &d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawWazero: the floor: wazero calling the uninstrumented module's
// permhost_decide with do-nothing kernel functions, no encoding or decoding.
func BenchmarkRawWazero(b *testing.B) {
	ctx := context.Background()
	wasm, err := os.ReadFile(fixture(b, "good"))
	if err != nil {
		b.Fatal(err)
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	hb := rt.NewHostModuleBuilder(extismModule)
	for _, k := range kernelFunctions {
		hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {}), k.params, k.results).Export(k.name)
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		b.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig())
	if err != nil {
		b.Fatal(err)
	}
	fn := mod.ExportedFunction(abi.ExportDecide)
	stack := make([]uint64, 1)
	b.ReportAllocs()
	for b.Loop() {
		if err := fn.CallWithStack(ctx, stack); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryGrowToCap: memory_grow grows its memory one page at a time
// up to the default 32 MiB cap (then fails with KindMemory); what a runaway
// allocator costs before it is stopped.
func BenchmarkMemoryGrowToCap(b *testing.B) {
	p := load(b, "memory_grow", Options{PoolSize: 1, Limits: sandbox.Limits{Timeout: time.Minute}})
	ctx := context.Background()
	req := request("grow")
	for b.Loop() {
		// Each call fails and discards its instance: time the grow, not
		// the making of the next instance.
		b.StopTimer()
		for !p.hasIdle() {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		if _, err := p.Decide(ctx, req); KindOf(err) != KindMemory {
			b.Fatal(err)
		}
	}
}

func (p *Plugin) hasIdle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle) > 0
}

// BenchmarkMakeInstance: making one instance ready (instantiate, exports,
// _initialize, warm-up) and closing it, which the filler does in the
// background.
func BenchmarkMakeInstance(b *testing.B) {
	for _, name := range []string{"good", "memory_grow"} {
		b.Run(name, func(b *testing.B) {
			p := load(b, name, Options{PoolSize: 1})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				p.mu.Lock()
				p.live++
				p.mu.Unlock()
				inst, e := p.makeReady(ctx)
				if e != nil {
					b.Fatal(e)
				}
				p.discard(inst)
			}
		})
	}
}
