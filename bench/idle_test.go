package bench

import (
	"context"
	"testing"
	"time"
)

// idleGap is the untimed pause before each decision of
// BenchmarkDecideIdle: far longer than either side of the process wall
// polls (worker.DefaultPollFor), so that both have parked and the CPUs may
// have gone idle, as between an agent's tool calls.
const idleGap = 2 * time.Millisecond

// BenchmarkDecideIdle is BenchmarkDecide's constant plugin decided after
// a pause, one decision at a time, in process and behind the process wall
// (polling first, as permhost does, and parking at once): what a person's
// agent, which asks seconds apart, meets, where BenchmarkDecide measures a
// burst. Run it with a fixed count (-benchtime 300x): the pauses are not
// timed but take the run's time.
func BenchmarkDecideIdle(b *testing.B) {
	ctx := context.Background()
	req := request1K(b)
	idleLoop := func(b *testing.B, decide func() error) {
		b.Helper()
		if err := decide(); err != nil { // warm up, and never time a failure
			b.Fatal(err)
		}
		for b.Loop() {
			b.StopTimer()
			time.Sleep(idleGap)
			b.StartTimer()
			if err := decide(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("permhost", func(b *testing.B) {
		p := load(b, fixture(b, "good"), "", 1)
		idleLoop(b, func() error { _, err := p.Decide(ctx, req); return err })
	})
	b.Run("permhost-process", func(b *testing.B) {
		p := loadProcess(b, fixture(b, "good"), "", 1)
		idleLoop(b, func() error { return p.Call(ctx, req).Err })
	})
	b.Run("permhost-process-park", func(b *testing.B) {
		p := loadProcessPolling(b, fixture(b, "good"), "", 1, -1)
		idleLoop(b, func() error { return p.Call(ctx, req).Err })
	})
}
