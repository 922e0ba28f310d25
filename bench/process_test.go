package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/proctest"
	"github.com/permhost/permhost/internal/worker"
	"github.com/permhost/permhost/sandbox"
)

// loadProcess is load for a plugin behind the process wall: the same
// options, in a worker child.
func loadProcess(tb testing.TB, path string, config string, pool int) *worker.Plugin {
	return loadProcessPolling(tb, path, config, pool, 0)
}

// loadProcessPolling is loadProcess with worker.Options.PollFor: negative
// to park at once.
func loadProcessPolling(tb testing.TB, path string, config string, pool int, pollFor time.Duration) *worker.Plugin {
	tb.Helper()
	ctx := context.Background()
	opts := host.Options{Path: path, CacheDir: cacheDir(tb), PoolSize: pool,
		Limits: sandbox.Limits{Timeout: deadline}}
	if config != "" {
		opts.Config = json.RawMessage(config)
	}
	p, err := worker.Load(ctx, worker.Options{Plugin: opts, PollFor: pollFor})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close(ctx) })
	return p
}

// timeToFallback times decide, which must fail with one of want, and
// reports the p50, p99 and maximum in milliseconds. Behind the process
// wall (serving not nil) a child silent past its grace is killed and
// replaced: a call that fails with its death or its restart is counted
// (restarts), not timed, and the loop waits, untimed, for the
// replacement. A call of a fixture that fails fast in-process but met the
// deadline here is timed and counted (late: a loaded machine).
func timeToFallback(b *testing.B, name string, want []host.Kind, decide func() error, serving func() bool) {
	var took []time.Duration
	restarts, late := 0, 0
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		err := decide()
		d := time.Since(start)
		if serving != nil && (errors.Is(err, worker.ErrCrashed) || errors.Is(err, worker.ErrRestarting)) {
			restarts++
			b.StopTimer()
			for end := time.Now().Add(time.Minute); !serving() && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			b.StartTimer()
			continue
		}
		took = append(took, d)
		var he *host.Error
		if !errors.As(err, &he) {
			b.Fatalf("%s decided: %v", name, err)
		}
		if he.Kind == host.KindTimeout && !slices.Contains(want, he.Kind) {
			late++
			continue
		}
		if !slices.Contains(want, he.Kind) {
			b.Fatalf("%s failed with %s, want one of %v: %v", name, he.Kind, want, err)
		}
	}
	ms := Millis(took)
	b.ReportMetric(Percentile(ms, 50), "p50-ms")
	b.ReportMetric(Percentile(ms, 99), "p99-ms")
	b.ReportMetric(Percentile(ms, 100), "max-ms")
	b.ReportMetric(float64(restarts), "restarts")
	b.ReportMetric(float64(late), "late")
}

// decideLoopProcess is decideLoop for a plugin behind the process wall; it
// also reports the CPU time its child spent per decision (the in-process
// rows spend theirs in this process, where ns/op shows it).
func decideLoopProcess(b *testing.B, decide func() error) {
	b.Helper()
	before, parentBefore := workerCPU(), ownCPU()
	decideLoop(b, decide)
	b.StopTimer()
	if after := workerCPU(); after > before {
		b.ReportMetric(float64((after-before).Microseconds())/float64(b.N), "child-cpu-µs/op")
	}
	if after := ownCPU(); after > parentBefore {
		b.ReportMetric(float64((after-parentBefore).Microseconds())/float64(b.N), "parent-cpu-µs/op")
	}
}

// ownCPU is the CPU time (user and system) of this process so far.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// workerCPU is the CPU time (user and system) of this process's plugin
// worker children so far.
func workerCPU() time.Duration {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	var cpu time.Duration
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			if !strings.Contains(string(cmd), worker.Command) {
				continue
			}
			if id, err := strconv.Atoi(pid); err == nil && id > 0 {
				c, _ := proctest.CPU(id)
				cpu += c
			}
		}
	}
	return cpu
}

// BenchmarkFallbackProcess is BenchmarkFallback behind the process wall
// (`isolation = "process"`): the same fixtures in a worker child, where the
// parent's own deadline answers whatever the child does.
func BenchmarkFallbackProcess(b *testing.B) {
	ctx := context.Background()
	req := request1K(b)
	for _, c := range fallbackCases {
		b.Run(c.name, func(b *testing.B) {
			p := loadProcess(b, fixture(b, c.name), "", 0)
			timeToFallback(b, c.name, c.want, func() error { return p.Call(ctx, req).Err }, p.Serving)
		})
	}
}

// BenchmarkLoadFailureProcess is BenchmarkLoadFailure behind the process
// wall: from worker.Load (the child's start, its handshake and the host's
// load in it) until it fails; no child is left.
func BenchmarkLoadFailureProcess(b *testing.B) { benchLoadFailure(b, true) }

// TestRequest1KProcess: behind the process wall the plugins decide the
// benchmarks' request as in process: team-rules' allow comes from its own
// config, which the child's host splices into the request's JSON.
func TestRequest1KProcess(t *testing.T) {
	ctx := context.Background()
	req := request1K(t)
	for _, c := range []struct {
		name, path, config string
	}{
		{"good", fixture(t, "good"), ""},
		{"team-rules", examplePlugin(t, "team-rules"), teamRulesConfig},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := load(t, c.path, c.config, 1).Decide(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			r := loadProcess(t, c.path, c.config, 1).Call(ctx, req)
			if r.Err != nil || !reflect.DeepEqual(r.Decision, want) {
				t.Fatalf("process: %+v, %v; in process: %+v", r.Decision, r.Err, want)
			}
		})
	}
}
