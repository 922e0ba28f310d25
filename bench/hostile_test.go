package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/wasmgen"
	"github.com/permhost/permhost/internal/worker"
)

// loadFailureModule is the module of one of LoadFailures.
func loadFailureModule(tb testing.TB, name string) host.Options {
	for _, g := range wasmgen.Hostile {
		if g.Name == name {
			return host.Options{Name: name, Wasm: wasmgen.Module(g.Shape)}
		}
	}
	if name == "slow_compile" {
		return host.Options{Name: name, Wasm: wasmgen.Module(wasmgen.Shape{BrTableTargets: 50_000})}
	}
	return host.Options{Path: fixture(tb, name)}
}

// BenchmarkLoadFailure times, for each hostile module of LoadFailures, a
// host.Load from its start until it fails: the plugin is then failed for
// every decision (its failure policy applies). In process, without a
// compile cache. Run it with -benchtime Nx and a small N: each abandoned
// compile of slow_compile goes on in the background until it finishes.
//
// The rows of a process wall (a plugin in a worker child) belong beside
// these as BenchmarkLoadFailureProcess/<name>, and beside BenchmarkFallback's
// as BenchmarkFallbackProcess/<name>: permhost-bench shows them in a column
// of their own when present.
func BenchmarkLoadFailure(b *testing.B) { benchLoadFailure(b, false) }

// benchLoadFailure is BenchmarkLoadFailure in this process or, walled,
// behind the process wall.
func benchLoadFailure(b *testing.B, walled bool) {
	ctx := context.Background()
	for _, c := range LoadFailures {
		b.Run(c.Name, func(b *testing.B) {
			opts := loadFailureModule(b, c.Name)
			opts.CacheDir, opts.Limits = "off", c.Limits
			if opts.Limits.Timeout == 0 {
				opts.Limits.Timeout = deadline
			}
			var took []time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				p, err := worker.LoadWhere(ctx, opts, walled)
				took = append(took, time.Since(start))
				var he *host.Error
				if p != nil || !errors.As(err, &he) {
					b.Fatalf("%s loaded (%v)", c.Name, err)
				}
			}
			ms := Millis(took)
			b.ReportMetric(Percentile(ms, 50), "p50-ms")
			b.ReportMetric(Percentile(ms, 99), "p99-ms")
			b.ReportMetric(Percentile(ms, 100), "max-ms")
		})
	}
}
