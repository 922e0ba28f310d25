package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

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

// The warm path, side by side in one run (go test -bench . -count 5
// -benchtime 2000x ./host): each benchmark has a sub-benchmark per fixture.
// Stock Extism and a raw wazero call on the same module are measured beside
// permhost in package bench (BenchmarkDecide), which BENCHMARKS.md reports.
// constant writes its output with 8 store_u64 calls; good with 64 store_u8
// calls (one per byte), which is what that fixture costs, not the host.
var warmFixtures = []string{"constant", "good"}

func benchOn(b *testing.B, p *Plugin) {
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
// instance, through Decide (encode, call on the instance's goroutine under
// the hard deadline, decode, validate).
func BenchmarkDecideWarm(b *testing.B) {
	for _, name := range warmFixtures {
		b.Run(name, func(b *testing.B) { benchOn(b, load(b, name, Options{PoolSize: 1})) })
	}
}

// BenchmarkDecideWarmOnCaller: the same with the guest on the caller's
// goroutine (no hand-off, no hard deadline): what the hand-off costs.
func BenchmarkDecideWarmOnCaller(b *testing.B) {
	for _, name := range warmFixtures {
		b.Run(name, func(b *testing.B) {
			p := load(b, name, Options{PoolSize: 1})
			p.onCallersGoroutine = true
			benchOn(b, p)
		})
	}
}

// BenchmarkDecideWarmReadsInput: a plugin that reads the whole input
// through input_load_u64 and answers with part of it.
func BenchmarkDecideWarmReadsInput(b *testing.B) {
	benchOn(b, load(b, "echo", Options{PoolSize: 1}))
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
