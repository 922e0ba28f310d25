package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/sandbox"
)

// TestDecidesLikeInProcess runs each case through an in-process plugin and
// through a child, on the same module, options and request: the decision,
// the failure (kind and whole message) and the logs must be the same.
func TestDecidesLikeInProcess(t *testing.T) {
	generous := sandbox.Limits{Timeout: time.Minute}
	big := request("big", "plain")
	big.Raw = json.RawMessage(`{"pad":"` + strings.Repeat("x", 8<<10) + `"}`)
	tests := []struct {
		name    string
		fixture string
		config  string
		limits  sandbox.Limits
		req     abi.Request
	}{
		{"constant", "good", "", sandbox.Limits{}, request("d1", "plain")},
		{"kernel, answers its decision id", "echo", "", sandbox.Limits{}, request("d2", "plain")},
		{"logs", "echo", "", sandbox.Limits{}, request("d3", "LOG!")},
		{"config", "echo", `{"mode":"strict"}`, sandbox.Limits{}, request("d4", "CONFIG!")},
		{"request's own config without a plugin config", "echo", "", sandbox.Limits{},
			func() abi.Request {
				r := request("d5", "CONFIG!")
				r.Config = json.RawMessage(`{"mode":"own"}`)
				return r
			}()},
		{"trap", "echo", "", sandbox.Limits{}, request("d6", "TRAP!")},
		{"plugin error", "echo", "", sandbox.Limits{}, request("d7", "ERRSET!")},
		{"network refused", "echo", "", sandbox.Limits{}, request("d8", "NET!")},
		{"unreachable", "unreachable", "", sandbox.Limits{}, request("d9", "plain")},
		{"invalid json", "invalid_json", "", sandbox.Limits{}, request("d10", "plain")},
		{"unknown outcome", "unknown_outcome", "", sandbox.Limits{}, request("d11", "plain")},
		{"select not offered", "select_not_offered", "", sandbox.Limits{}, request("d12", "plain")},
		{"huge output", "huge_output", "", sandbox.Limits{}, request("d13", "plain")},
		{"memory cap", "memory_grow", "", generous, request("d14", "plain")},
		{"wasi sees no files", "wasi_path_open", "", sandbox.Limits{}, request("d15", "plain")},
		{"input too large", "echo", "", sandbox.Limits{MaxInput: 4 << 10}, big},
		{"log flood, bounded", "log_flood", "", generous, request("d16", "plain")},
		{"empty log entries, bounded", "empty_logs", "", generous, request("d17", "plain")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if raceBuild && (tt.fixture == "log_flood" || tt.fixture == "empty_logs") {
				t.Skip("a million log calls take tens of seconds under -race, twice")
			}
			ctx := context.Background()
			o := host.Options{Path: fixture(t, tt.fixture), Limits: tt.limits, CacheDir: testCache}
			if tt.config != "" {
				o.Config = json.RawMessage(tt.config)
			}
			in, err := host.Load(ctx, o)
			require.NoError(t, err)
			defer in.Close(ctx)
			out := startWorker(t, o)

			want := in.Call(ctx, tt.req)
			got := out.Call(ctx, tt.req)
			assert.Equal(t, want.Decision, got.Decision)
			assert.Equal(t, host.KindOf(want.Err), host.KindOf(got.Err))
			if want.Err != nil && got.Err != nil {
				assert.Equal(t, want.Err.Error(), got.Err.Error())
			} else {
				assert.Equal(t, want.Err, got.Err)
			}
			assert.Equal(t, want.Logs, got.Logs)
			assert.Equal(t, in.Info(), out.Info())
			assert.Equal(t, in.SHA256(), out.SHA256())
			assert.Equal(t, in.ABI(), out.ABI())
			assert.Equal(t, in.Limits(), out.Limits())
		})
	}
}

// TestLoadFailsLikeInProcess: a module the host refuses is refused the same
// way through a child, and no child is left.
func TestLoadFailsLikeInProcess(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	tests := []struct {
		name string
		opts host.Options
	}{
		{"ABI major", host.Options{Path: fixture(t, "abi_major")}},
		{"ABI minor", host.Options{Path: fixture(t, "abi_minor")}},
		{"no decide", host.Options{Path: fixture(t, "no_decide")}},
		{"forbidden import", host.Options{Path: fixture(t, "forbidden_import")}},
		{"pin mismatch", host.Options{Path: fixture(t, "good"), SHA256: strings.Repeat("ab", 32)}},
		{"garbage", host.Options{Name: "garbage", Wasm: []byte("not a module")}},
		{"missing file", host.Options{Path: fixture(t, "good") + ".missing"}},
		{"config not an object", host.Options{Path: fixture(t, "good"), Config: json.RawMessage(`[1]`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			tt.opts.CacheDir = testCache
			_, want := host.Load(ctx, tt.opts)
			require.Error(t, want)
			p, got := Load(ctx, Options{Plugin: tt.opts})
			require.Error(t, got)
			assert.Nil(t, p)
			assert.Equal(t, host.KindOf(want), host.KindOf(got))
			assert.Equal(t, want.Error(), got.Error())
		})
	}
	goleak.VerifyNone(t, leaks)
}

// TestCrashIsThePluginsFailure: the Go runtime's fatal error in the child
// (an allocation past RLIMIT_AS: "fatal error: runtime: out of memory",
// which no recover stops) fails that call with kind memory, at once; this
// process lives on; calls while the child is replaced fail fast with kind
// load; then a new child answers.
func TestCrashIsThePluginsFailure(t *testing.T) {
	t.Setenv(hookEnv, "1")
	// A deadline no crash comes near, even on a loaded machine: the kind
	// (memory, not timeout) says the crash ended the call.
	p := startWorker(t, host.Options{Path: fixture(t, "echo"), Limits: sandbox.Limits{Timeout: time.Minute}})
	ctx := context.Background()
	first := p.pid()
	require.NotZero(t, first)
	hold := make(chan struct{})
	p.beforeRestart = func() { <-hold }

	r := p.Call(ctx, request("c1", hook("crash")))
	require.Error(t, r.Err)
	assert.Equal(t, host.KindMemory, host.KindOf(r.Err), "%v", r.Err)
	assert.ErrorIs(t, r.Err, ErrCrashed)
	if !raceBuild { // -race: "too many address space collisions"
		assert.Contains(t, r.Err.Error(), "out of memory")
	}
	assert.Less(t, r.Duration, p.Limits().Timeout, "a crash fails the call when it happens, not at the deadline")

	r = p.Call(ctx, request("c2", "plain"))
	assert.Equal(t, host.KindLoad, host.KindOf(r.Err), "%v", r.Err)
	assert.ErrorIs(t, r.Err, ErrRestarting)
	assert.Contains(t, r.Err.Error(), "pid ", "says what it restarts from")
	close(hold)

	eventually(t, "a new child", func() bool { return p.pid() != 0 })
	r = p.Call(ctx, request("c3", "plain"))
	require.NoError(t, r.Err)
	assert.Equal(t, "c3", r.Decision.Reason)
	assert.NotEqual(t, first, p.pid())
	assert.False(t, alive(first))
}

// TestDeathsFailEveryCallOfTheChild: an exit fails the calls the child had
// at once, with kind trap; each dies with it, none waits for its deadline.
func TestDeathsFailEveryCallOfTheChild(t *testing.T) {
	t.Setenv(hookEnv, "1")
	p := startWorker(t, host.Options{Path: fixture(t, "echo"), Limits: sandbox.Limits{Timeout: time.Minute}})
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([]host.Result, 3)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p.Call(ctx, request("spin", "SPIN!"))
		}()
	}
	// Both spinning in the child (the pool has room for both).
	eventually(t, "two calls in flight", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cur.mu.Lock()
		defer p.cur.mu.Unlock()
		return len(p.cur.calls) == 2
	})
	results[2] = p.Call(ctx, request("x", hook("exit")))
	wg.Wait()
	for i, r := range results {
		assert.Equal(t, host.KindTrap, host.KindOf(r.Err), "call %d: %v", i, r.Err)
		assert.ErrorIs(t, r.Err, ErrCrashed)
		assert.Contains(t, r.Err.Error(), "exit status 7")
		assert.Less(t, r.Duration, 30*time.Second)
	}
	eventually(t, "a new child", func() bool { return p.pid() != 0 })
	require.NoError(t, p.Call(ctx, request("after", "plain")).Err)
}

// TestStuckChildIsKilled: a child that does not answer by the deadline (a
// guest where the in-process wall cannot reach it) gets its call failed at
// the deadline with kind timeout; after the grace its process group is
// killed and a new child answers.
func TestStuckChildIsKilled(t *testing.T) {
	t.Setenv(hookEnv, "1")
	p := startWorker(t, host.Options{Path: fixture(t, "echo")})
	ctx := context.Background()
	first := p.pid()
	r := p.Call(ctx, request("h1", hook("hang")))
	assert.Equal(t, host.KindTimeout, host.KindOf(r.Err), "%v", r.Err)
	assert.GreaterOrEqual(t, r.Duration, p.Limits().Timeout)
	eventually(t, "the stuck child killed", func() bool { return !alive(first) })
	eventually(t, "a new child", func() bool { return p.pid() != 0 && p.pid() != first })
	r = p.Call(ctx, request("h2", "plain"))
	require.NoError(t, r.Err)
	assert.Equal(t, "h2", r.Decision.Reason)
}

// TestRunawayStoppedInsideTheChild: an infinite loop is stopped by the
// child's own deadline; the call fails with kind timeout and the plugin
// answers the next request (the same child, unless the machine was so
// loaded that it looked stuck).
func TestRunawayStoppedInsideTheChild(t *testing.T) {
	p := startWorker(t, host.Options{Path: fixture(t, "echo")})
	ctx := context.Background()
	first := p.pid()
	r := p.Call(ctx, request("s1", "SPIN!"))
	assert.Equal(t, host.KindTimeout, host.KindOf(r.Err), "%v", r.Err)
	eventually(t, "a child serving", func() bool { return p.pid() != 0 })
	var next host.Result
	eventually(t, "the next request answered", func() bool {
		next = p.Call(ctx, request("s2", "plain"))
		return next.Err == nil
	})
	assert.Equal(t, "s2", next.Decision.Reason)
	t.Logf("child %d, then %d", first, p.pid())
}

// TestCancelled: a caller that gives up gets kind cancelled at once; the
// child stops the call and goes on serving.
func TestCancelled(t *testing.T) {
	p := startWorker(t, host.Options{Path: fixture(t, "echo"), Limits: sandbox.Limits{Timeout: time.Minute}})
	first := p.pid()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan host.Result)
	go func() { done <- p.Call(ctx, request("k1", "SPIN!")) }()
	eventually(t, "the call in flight", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cur.mu.Lock()
		defer p.cur.mu.Unlock()
		return len(p.cur.calls) == 1
	})
	cancel()
	r := <-done
	assert.Equal(t, host.KindCancelled, host.KindOf(r.Err), "%v", r.Err)
	assert.ErrorIs(t, r.Err, context.Canceled)
	r = p.Call(context.Background(), request("k2", "plain"))
	require.NoError(t, r.Err)
	assert.Equal(t, first, p.pid(), "a cancel is not a failure of the child")
}

// TestCloseLeavesNothing: Close fails the calls in flight with kind
// cancelled, ends the child, leaves no goroutine, and is idempotent.
func TestCloseLeavesNothing(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Setenv(hookEnv, "1")
	ctx := context.Background()
	p, err := Load(ctx, Options{Plugin: host.Options{Path: fixture(t, "echo"), CacheDir: testCache,
		Limits: sandbox.Limits{Timeout: time.Minute}}})
	require.NoError(t, err)
	pid := p.pid()
	done := make(chan host.Result)
	go func() { done <- p.Call(ctx, request("x", hook("hang"))) }()
	eventually(t, "the call in flight", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cur.mu.Lock()
		defer p.cur.mu.Unlock()
		return len(p.cur.calls) == 1
	})
	require.NoError(t, p.Close(ctx))
	r := <-done
	assert.Equal(t, host.KindCancelled, host.KindOf(r.Err), "%v", r.Err)
	assert.ErrorIs(t, r.Err, host.ErrClosed)
	assert.False(t, alive(pid), "the child is reaped")
	require.NoError(t, p.Close(ctx))
	r = p.Call(ctx, request("y", "plain"))
	assert.ErrorIs(t, r.Err, host.ErrClosed)
	goleak.VerifyNone(t, leaks)
}

// TestCloseWhileRestarting: Close during a restart's backoff or start-up
// ends it too.
func TestCloseWhileRestarting(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Setenv(hookEnv, "1")
	ctx := context.Background()
	p, err := Load(ctx, Options{Plugin: host.Options{Path: fixture(t, "echo"), CacheDir: testCache}})
	require.NoError(t, err)
	entered := make(chan struct{})
	var once sync.Once
	p.beforeRestart = func() { once.Do(func() { close(entered) }) }
	p.Call(ctx, request("x", hook("exit")))
	<-entered
	require.NoError(t, p.Close(ctx))
	goleak.VerifyNone(t, leaks)
}

// TestRetiresAtCPULimit: at its soft CPU limit a child asks to be
// replaced; the replacement takes over without a call failing for it.
func TestRetiresAtCPULimit(t *testing.T) {
	p := startWorker(t, host.Options{Path: fixture(t, "echo"), Limits: sandbox.Limits{Timeout: 50 * time.Millisecond}},
		func(o *Options) { o.CPUTime = time.Second })
	ctx := context.Background()
	first := p.pid()
	var kinds []host.Kind
	eventually(t, "the child replaced", func() bool {
		// Each spin burns the child's CPU up to its deadline.
		r := p.Call(ctx, request("spin", "SPIN!"))
		kinds = append(kinds, host.KindOf(r.Err))
		pid := p.pid()
		return pid != 0 && pid != first
	})
	for i, k := range kinds {
		assert.Equal(t, host.KindTimeout, k, "call %d", i)
	}
	eventually(t, "the old child ended", func() bool { return !alive(first) })
	require.NoError(t, p.Call(ctx, request("after", "plain")).Err)
	t.Logf("replaced after %d spins", len(kinds))
}

// TestBackoff: a child that keeps dying before it answers anything is
// restarted after a growing wait.
func TestBackoff(t *testing.T) {
	assert.Equal(t, time.Duration(0), backoff(1))
	assert.Equal(t, 100*time.Millisecond, backoff(2))
	assert.Equal(t, 200*time.Millisecond, backoff(3))
	assert.Equal(t, maxBackoff, backoff(40))
}

// TestOptions: what Load refuses before starting anything.
func TestOptions(t *testing.T) {
	ctx := context.Background()
	_, err := Load(ctx, Options{Plugin: host.Options{}})
	assert.ErrorIs(t, err, host.ErrBadOptions)
	_, err = Load(ctx, Options{Plugin: host.Options{Path: fixture(t, "good")}, CPUTime: -time.Second})
	assert.ErrorIs(t, err, host.ErrBadOptions)
	_, err = Load(ctx, Options{Plugin: host.Options{Path: fixture(t, "good")}, PollFor: 2 * time.Millisecond})
	assert.ErrorIs(t, err, host.ErrBadOptions)
	assert.ErrorContains(t, err, "PollFor 2ms exceeds 1ms")
	_, err = Load(ctx, Options{Plugin: host.Options{Path: fixture(t, "good"), Limits: sandbox.Limits{Timeout: -1}}})
	assert.ErrorIs(t, err, sandbox.ErrBadLimits)
	_, err = Load(ctx, Options{Plugin: host.Options{Path: fixture(t, "good"), CacheDir: testCache}, Executable: "/nonexistent/permhost"})
	assert.Equal(t, host.KindLoad, host.KindOf(err), "%v", err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	var he *host.Error
	require.True(t, errors.As(err, &he))
}

// TestCallerReadsItsOwnAnswer: alone in flight, a call's caller reads the
// child's answers itself (no reader goroutine hands it over); it answers
// the other calls it meets on the way; when it goes (cancelled here) with
// calls left, the background reader takes over; with none left, nobody
// reads until the next call.
func TestCallerReadsItsOwnAnswer(t *testing.T) {
	p := startWorker(t, host.Options{Path: fixture(t, "echo"), Limits: sandbox.Limits{Timeout: time.Minute}})
	c := p.cur
	role := func() readerRole {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.reader
	}
	require.Equal(t, readerNone, role())
	r := p.Call(context.Background(), request("r1", "plain"))
	require.NoError(t, r.Err)
	assert.Equal(t, "r1", r.Decision.Reason)
	assert.Equal(t, readerNone, role(), "the caller gave the reading back")

	ctx, cancel := context.WithCancel(context.Background())
	spinning := make(chan host.Result)
	go func() { spinning <- p.Call(ctx, request("r2", "SPIN!")) }()
	eventually(t, "the spinning call reading", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.calls) == 1 && c.reader == readerCaller
	})
	// Answered through the spinning call's caller, which reads.
	r = p.Call(context.Background(), request("r3", "plain"))
	require.NoError(t, r.Err)
	assert.Equal(t, "r3", r.Decision.Reason)
	assert.Equal(t, readerCaller, role())

	// A call waiting while the reading caller goes: the background reader
	// reads its answer.
	waiting := make(chan host.Result)
	go func() { waiting <- p.Call(context.Background(), request("r4", "SPIN!")) }()
	eventually(t, "two calls in flight", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.calls) == 2
	})
	cancel()
	r = <-spinning
	assert.Equal(t, host.KindCancelled, host.KindOf(r.Err), "%v", r.Err)
	assert.Equal(t, readerBackground, role())
	r = p.Call(context.Background(), request("r5", "plain"))
	require.NoError(t, r.Err)
	assert.Equal(t, "r5", r.Decision.Reason)
	select {
	case r := <-waiting:
		t.Fatalf("the spinning call ended: %+v", r)
	default:
	}
	require.NoError(t, p.Close(context.Background()))
	r = <-waiting
	assert.ErrorIs(t, r.Err, host.ErrClosed)
}

// TestConcurrentCallsGetTheirOwnAnswers: many calls in flight at once, some
// cancelled, some timing out, the reading passing between their callers
// and the background reader: each call gets its own answer (the reason is
// its id) or a failure of its own (a spin never decides, a call not
// cancelled is never cancelled), never another call's.
func TestConcurrentCallsGetTheirOwnAnswers(t *testing.T) {
	p := startWorker(t, host.Options{Path: fixture(t, "echo"), Limits: sandbox.Limits{Timeout: 50 * time.Millisecond}})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				id := fmt.Sprintf("g%d-%d", g, i)
				title := "plain"
				if i%5 == 4 {
					title = "SPIN!"
				}
				ctx, cancel := context.WithCancel(context.Background())
				if i%7 == 3 {
					go cancel()
				}
				r := p.Call(ctx, request(id, title))
				cancel()
				kind := host.KindOf(r.Err)
				switch {
				case r.Err == nil:
					assert.Equal(t, "plain", title, "%s decided", id)
					assert.Equal(t, id, r.Decision.Reason)
				case kind == host.KindCancelled:
					assert.Equal(t, 3, i%7, "%s cancelled unasked: %v", id, r.Err)
				case kind == host.KindTimeout:
					// A spin, or a call that waited behind spins.
				default:
					t.Errorf("%s: %v", id, r.Err)
				}
			}
		}()
	}
	wg.Wait()
}
