package worker

import (
	"context"
	"testing"

	"github.com/permhost/permhost/host"
)

// BenchmarkCall is one warm decision of good.wasm through a child: the
// request framed to the child as the plugin's JSON, decided there by the
// host, the answer framed (JSON) back and checked. bench/ has the rows of BENCHMARKS.md;
// this is for work on the wire.
func BenchmarkCall(b *testing.B) {
	p := startWorker(b, host.Options{Path: fixture(b, "good")})
	call(b, p)
}

// BenchmarkCallFloor is the same against a child that answers at once
// without decoding the request or calling a plugin: the wire's own cost.
func BenchmarkCallFloor(b *testing.B) {
	p := startWorker(b, host.Options{Name: "evil-fast", Path: fixture(b, "good")})
	call(b, p)
}

func call(b *testing.B, p *Plugin) {
	req := request("b", "plain")
	if r := p.Call(context.Background(), req); r.Err != nil {
		b.Fatal(r.Err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := p.Call(context.Background(), req); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}
