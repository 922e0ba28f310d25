package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// Watcher is the deadline of one call on one instrumented instance. It is a
// small value: Watch and Stop allocate nothing.
type Watcher struct {
	ctx      context.Context
	stop     api.MutableGlobal
	deadline api.MutableGlobal
	due      int64 // monotonic deadline
	err      error // set when mod is not instrumented
}

// Watch arms the deadline of the next call on mod, an instance of a module
// rewritten by Instrument: once timeout has passed, or ctx is done, the guest
// stops at its next check (within microseconds) by trapping. The call must be
// made with the same ctx. A timeout <= 0 has already expired.
//
// Watch also resets the instance's call depth to 0.
//
// An instance is not safe for concurrent calls, so neither is its Watcher:
// call Stop before the next Watch on the same instance.
func Watch(ctx context.Context, mod api.Module, timeout time.Duration) Watcher {
	stop, ok1 := mod.ExportedGlobal(stopGlobal).(api.MutableGlobal)
	deadline, ok2 := mod.ExportedGlobal(deadlineGlobal).(api.MutableGlobal)
	depth, ok3 := mod.ExportedGlobal(depthGlobal).(api.MutableGlobal)
	if !ok1 || !ok2 || !ok3 || stop.Type() != api.ValueTypeI32 || deadline.Type() != api.ValueTypeI64 || depth.Type() != api.ValueTypeI32 {
		return Watcher{ctx: ctx, err: fmt.Errorf("%w: instance of %q has no %s/%s/%s globals; it cannot be stopped", ErrInstrument, mod.Name(), stopGlobal, deadlineGlobal, depthGlobal)}
	}
	// No call is running, so the depth is 0 unless an earlier call trapped
	// (and the instance should have been discarded).
	depth.Set(0)
	due := monotonicNow()
	if timeout > 0 {
		due += int64(timeout)
	}
	stop.Set(reasonNone)
	deadline.Set(uint64(due))
	return Watcher{ctx: ctx, stop: stop, deadline: deadline, due: due}
}

// Stop disarms the deadline and reports whether the call's result must not be
// trusted: ErrTimeout if the guest was stopped at its deadline or finished
// after it, the context's error if the context ended first, nil otherwise. An
// instance whose Watcher reported an error should be discarded. Stop is
// idempotent.
func (w Watcher) Stop() error {
	if w.err != nil {
		return w.err
	}
	reason := w.stop.Get()
	w.deadline.Set(0)
	w.stop.Set(reasonNone)
	switch {
	case reason == reasonCanceled:
		return ctxError(w.ctx)
	case reason != reasonNone || monotonicNow() > w.due:
		if err := w.ctx.Err(); err != nil {
			return err
		}
		return ErrTimeout
	}
	return w.ctx.Err()
}

// ctxError is ctx.Err(), or DeadlineExceeded when the context's deadline has
// passed but its timer has not fired yet.
func ctxError(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.DeadlineExceeded
}
