package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/permhost/permhost/abi"
)

// The pool. Making an instance of a standard Go plugin (instantiation and
// _initialize, the Go runtime's start-up) takes tens of milliseconds, more
// on a loaded machine: it must never run under a decision's deadline. So
// instances are made ahead of need by one background goroutine, each under
// the generous init budget (Limits.InitTimeout), and a decision only takes
// a ready one:
//
//   - Load makes the first instance itself (it also answers permhost_abi
//     and permhost_describe), pools it without a warm-up and starts the
//     filler for a spare, which it warms up (under the plugin's own
//     Timeout: a warm-up that fails or times out means no warm-up from
//     then on), and then warms Load's instance up while the spare is
//     idle. No decision waits for a warm-up that may not end: the first
//     one takes the first instance as it is if the spare is not ready.
//   - Whenever fewer than two instances are idle (a call took one, or one
//     was discarded), the filler makes another, so that while a call runs
//     one instance is ready for the next, even when the first fails (as
//     long as the pool has room: PoolSize plus the spare).
//   - A call that finds no idle instance waits for one, at most until its
//     deadline: an instance a call gives back, or a new one from the filler.
//     At the deadline it fails with KindTimeout and the instance being made
//     joins the pool when it is ready.
//   - At most maxLive instances exist at once (busy, idle, being made, or
//     abandoned by a call that timed out and not stopped yet).

// maxLiveInstances is the cap on instances alive at once for a pool that
// keeps poolSize idle instances.
func maxLiveInstances(poolSize int) int {
	return 2*runtime.GOMAXPROCS(0) + poolSize
}

// handoff is what a waiting call receives: a ready instance, already marked
// busy, or the error that stopped the filler.
type handoff struct {
	inst *instance
	err  *Error
}

// acquire takes a ready instance, waiting for one until deadline at most.
func (p *Plugin) acquire(ctx context.Context, deadline time.Time) (*instance, *Error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, p.fail(KindCancelled, ErrClosed)
	}
	if n := len(p.idle); n > 0 {
		// The most recently used instance: its memory is warm.
		inst := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.busy[inst] = struct{}{}
		p.fillLocked()
		p.mu.Unlock()
		return inst, nil
	}
	w := make(chan handoff, 1)
	p.waiters = append(p.waiters, w)
	p.fillLocked()
	p.mu.Unlock()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var e *Error
	select {
	case h := <-w:
		return h.inst, h.err
	case <-ctx.Done():
		e = p.fail(KindCancelled, ctx.Err())
	case <-timer.C:
		e = p.fail(KindTimeout, fmt.Errorf("no instance was ready within the %v deadline", p.limits.Timeout))
	}
	p.mu.Lock()
	for i, x := range p.waiters {
		if x == w {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			p.mu.Unlock()
			return nil, e
		}
	}
	p.mu.Unlock()
	// Handed something just as we gave up: pass an instance on.
	if h := <-w; h.inst != nil {
		p.release(h.inst, true)
	}
	return nil, e
}

// release gives inst back after a call: to a waiting call or the idle pool
// when the call ended cleanly, otherwise it is discarded and replaced.
func (p *Plugin) release(inst *instance, ok bool) {
	p.mu.Lock()
	delete(p.busy, inst)
	keep := ok && !inst.stopping.Load() && p.putLocked(inst)
	p.fillLocked()
	p.mu.Unlock()
	if !keep {
		p.discard(inst)
		// Its place is free now: replace it. (Not in retire: the filler's
		// own failures retire instances too, and must not restart it.)
		p.mu.Lock()
		p.fillLocked()
		p.mu.Unlock()
	}
}

// putLocked hands a ready instance to the oldest waiting call, or keeps it
// idle; it reports false when there is no room and the caller must discard
// it. p.mu is held.
func (p *Plugin) putLocked(inst *instance) bool {
	if p.closed {
		return false
	}
	if len(p.waiters) > 0 {
		w := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		p.busy[inst] = struct{}{}
		w <- handoff{inst: inst}
		return true
	}
	if len(p.idle) < p.maxIdle {
		p.idle = append(p.idle, inst)
		return true
	}
	return false
}

// discard closes an instance that will not be used again. An abandoned one
// is closed by its own goroutine, which then calls retire.
func (p *Plugin) discard(inst *instance) {
	if inst.close() {
		p.retire()
	}
}

// retire counts a closed instance out, and frees the runtime when it was
// the last one of a closed plugin.
func (p *Plugin) retire() {
	p.mu.Lock()
	p.live--
	last := p.closed && p.live == 0
	p.mu.Unlock()
	if last {
		p.releaseRuntime()
	}
}

// fillLocked starts the filler when the pool needs an instance. p.mu is
// held.
func (p *Plugin) fillLocked() {
	if p.filling || !p.needLocked() {
		return
	}
	p.filling = true
	p.live++
	go p.fill()
}

// needLocked reports whether another instance should be made: for a call
// waiting for one, or while fewer than two are idle, so that a call that
// takes one leaves a spare for the next (which it needs at once when the
// first fails), as long as it will fit in the pool once the busy instances
// come back. p.mu is held.
func (p *Plugin) needLocked() bool {
	if p.closed || p.live >= p.maxLive {
		return false
	}
	return len(p.waiters) > 0 || (len(p.idle) < 2 && p.live < p.maxIdle)
}

// fill makes instances, one at a time, while the pool needs them. The
// instance it is making has been counted in p.live already. A panic is
// that instance's failure.
func (p *Plugin) fill() {
	for {
		inst, e := p.ready()
		p.mu.Lock()
		if e != nil {
			// A failure here repeats until something changes: stop, fail
			// the waiting calls with the reason, and let the next call
			// start the filler again.
			// An instance that exists is counted out by discard (or by its
			// own goroutine when abandoned), not here.
			last := false
			if inst == nil {
				p.live--
				last = p.closed && p.live == 0
			}
			waiters := p.waiters
			p.waiters = nil
			p.filling = false
			p.mu.Unlock()
			for _, w := range waiters {
				w <- handoff{err: e}
			}
			if inst != nil {
				p.discard(inst)
			}
			if p.logger != nil && !errors.Is(e, ErrClosed) && !p.isClosed() {
				p.logger.Warn("plugin instance not made", "plugin", p.name, "err", e)
			}
			if last {
				p.releaseRuntime()
			}
			return
		}
		kept := p.putLocked(inst)
		cold := p.takeColdLocked()
		p.mu.Unlock()
		if !kept {
			p.discard(inst)
		}
		if cold != nil {
			p.warmCold(cold)
		}
		p.mu.Lock()
		more := p.needLocked()
		if more {
			p.live++
		} else {
			p.filling = false
		}
		p.mu.Unlock()
		if !more {
			return
		}
	}
}

// takeColdLocked takes Load's instance out of the pool to be warmed up,
// once the filler has pooled a warmed spare (so that a decision that comes
// meanwhile finds that one) and as long as warm-ups succeed and the
// instance has not served a decision yet (which warmed it). p.mu is held.
func (p *Plugin) takeColdLocked() *instance {
	c := p.cold
	if c == nil || p.closed || p.noWarmup.Load() {
		return nil
	}
	p.cold = nil
	i := slices.Index(p.idle, c)
	if i < 0 || len(p.idle) < 2 {
		return nil // serving, or the only one ready
	}
	p.idle = slices.Delete(p.idle, i, i+1)
	p.busy[c] = struct{}{}
	return c
}

// warmCold warms Load's instance up and gives it back to the pool (to a
// waiting decision first), or discards it when its warm-up failed.
func (p *Plugin) warmCold(c *instance) {
	ok := c.warmUp(p.lifetime)
	if !ok {
		p.noWarmup.Store(true)
	}
	p.release(c, ok)
}

func (p *Plugin) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// makeReady makes an instance ready to serve; p.live counts it already (on
// failure with no instance, the caller uncounts it).
//
// Ready means initialized and, for a module with a language runtime to
// start (it exports _initialize, as Go's c-shared build does), warmed up:
// _initialize, then one permhost_decide on a synthetic request, both under
// the init budget. A Go plugin's first decision pays for its runtime's first
// use (reflection caches, heap growth): 20-40 ms measured on a loaded
// machine, a good part of a 100 ms deadline; warmed, its first decision
// takes 0.2-5 ms. Plugins are functions of their request, so the warm-up
// changes nothing but time; its result and logs are dropped. A plugin that
// fails on the synthetic request is made ready without warm-up from then
// on.
func (p *Plugin) makeReady(ctx context.Context) (*instance, *Error) {
	inst, e := p.newInitializedInstance(ctx)
	if e != nil {
		return inst, e
	}
	return p.warm(ctx, inst)
}

// ready makes one instance ready for the filler. A panic (a bug in the
// host or in wazero) is that instance's failure, not the process's; the
// instance it was making is left to the garbage collector.
func (p *Plugin) ready() (inst *instance, e *Error) {
	defer func() {
		if r := recover(); r != nil {
			inst, e = nil, p.fail(KindLoad, fmt.Errorf("%w: making an instance ready: %v", errPanic, r))
		}
	}()
	return p.makeReady(p.lifetime)
}

// warm warms inst up, or replaces it with an unwarmed instance when the
// warm-up failed; see makeReady.
func (p *Plugin) warm(ctx context.Context, inst *instance) (*instance, *Error) {
	if inst.initialize == nil || p.noWarmup.Load() {
		return inst, nil
	}
	if inst.warmUp(ctx) {
		return inst, nil
	}
	p.noWarmup.Store(true)
	// Counted again before the failed one is counted out, so that a closed
	// plugin cannot see zero instances and free the runtime in between.
	p.mu.Lock()
	p.live++
	p.mu.Unlock()
	p.discard(inst)
	return p.newInitializedInstance(ctx)
}

// newInitializedInstance instantiates the module and runs its _initialize,
// each under the init budget. On failure the instance returned, if any,
// must be discarded.
func (p *Plugin) newInitializedInstance(ctx context.Context) (*instance, *Error) {
	inst, e := p.newInstance(ctx)
	if e != nil {
		return nil, e
	}
	if inst.initialize == nil {
		return inst, nil
	}
	inst.input = inst.input[:0]
	inst.begin(false)
	if e := inst.exec(ctx, inst.initialize, p.limits.InitTimeout); e != nil {
		e.Err = fmt.Errorf("_initialize: %w", e.Err)
		return inst, e
	}
	return inst, nil
}

// warmupRequest is the synthetic request of the warm-up: a shell command,
// as most permission requests are.
var warmupRequest = abi.Request{
	ABI:        abi.Current,
	DecisionID: "permhost-warmup",
	Session:    abi.Session{ID: "permhost-warmup", Cwd: "/"},
	ToolCall: abi.ToolCall{ID: "permhost-warmup", Title: "true", Kind: abi.KindExecute,
		RawInput: json.RawMessage(`{"command":"true"}`)},
	Options: []abi.Option{
		{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
	},
	Shell: &abi.Shell{Source: "true", Parsed: true, Commands: []abi.Command{{Argv: []string{"true"}}}},
}

// warmUp runs permhost_decide once on warmupRequest under the plugin's own
// Timeout, like a decision, and reports whether the instance can still be
// used: any outcome, even a plugin error, will do, but not a trap, timeout
// or memory failure.
func (inst *instance) warmUp(ctx context.Context) bool {
	p := inst.plugin
	req := warmupRequest
	if p.config != nil {
		req.Config = p.config
	}
	if err := inst.encode(&req); err != nil {
		return false
	}
	inst.begin(false)
	inst.warming = true
	_, e := inst.run(ctx, inst.decide, p.limits.Timeout)
	if inst.abandoned.Load() {
		return false // its guest may still log: leave warming alone
	}
	inst.warming = false
	return e == nil || e.Kind == KindPluginError || e.Kind == KindBadOutput
}

// closeGrace is the longest Close waits for guests still running: a
// stopped guest returns at its next deadline check, within microseconds,
// and host calls are bounded to milliseconds; one that has not returned by
// then is abandoned (its goroutine frees what it holds when it does).
const closeGrace = 500 * time.Millisecond

// Close stops in-flight calls, closes every instance and frees the
// compiled module. It waits for stopped calls to return at most a short
// grace (500 ms), or until ctx ends, then returns an error wrapping
// ErrAbandoned (or ctx's error) and leaves the guests still running to end
// by themselves: nothing waits for them. Closing again returns nil once
// everything is freed.
func (p *Plugin) Close(ctx context.Context) error {
	p.mu.Lock()
	first := !p.closed
	p.closed = true
	idle, waiters := p.idle, p.waiters
	p.idle, p.waiters = nil, nil
	for inst := range p.busy {
		inst.stop()
	}
	none := p.live == 0
	p.mu.Unlock()
	if first {
		p.endLifetime() // stops an instance being made
		for _, w := range waiters {
			w <- handoff{err: p.fail(KindCancelled, ErrClosed)}
		}
		for _, inst := range idle {
			p.discard(inst)
		}
		if none {
			p.releaseRuntime()
		}
	}
	grace := time.NewTimer(closeGrace)
	defer grace.Stop()
	select {
	case <-p.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-grace.C:
		return fmt.Errorf("%w: plugin %q: guests still running %v after close", ErrAbandoned, p.name, closeGrace)
	}
}

// releaseRuntime frees the runtime; called once, when the plugin is closed
// and no instance is left.
func (p *Plugin) releaseRuntime() {
	ctx := context.Background()
	if p.rt != nil {
		_ = p.rt.Close(ctx) // also closes compiled and the kernel module
	}
	if p.cache != nil {
		_ = p.cache.Close(ctx)
	}
	close(p.released)
}
