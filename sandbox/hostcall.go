package sandbox

import (
	"context"
	"math"
	"reflect"

	"github.com/tetratelabs/wazero/api"
)

// What host functions need to keep their own work within a guest's limits.
// A host function runs in Go, where none of the guest's deadline checks
// do; one that does work in proportion to its arguments (copying, filling,
// scanning) must charge it and stop at the deadline itself, or a guest stuck
// in one long host call keeps its goroutine and a core busy, and holds up
// the Go GC's stop-the-world for everyone.

// Charge accounts for units of work (about a nanosecond each: a byte copied
// is 1/16 of a unit) that a host function is about to do for mod's running
// call, and reports whether the call may go on. The units are taken from
// the guest's instruction budget, so that it polls at its next check; and
// the deadline of the call (see Watch) and ctx, the host function's
// context, are checked now. A non-nil error (ErrTimeout, or the context's
// error) means the call must end: the host function should stop its work
// and panic with the error, which makes the guest's call fail with it;
// Watcher.Stop then reports the same reason. Call Charge before the work,
// and between chunks of a long one.
//
// mod must be an instance of a module rewritten by Instrument; for any
// other, Charge checks ctx only.
func Charge(ctx context.Context, mod api.Module, units uint64) error {
	deadline, _ := mod.ExportedGlobal(deadlineGlobal).(api.MutableGlobal)
	var due int64
	if deadline != nil {
		due = int64(deadline.Get())
	}
	if reason := pollReason(ctx, due); reason != reasonNone {
		if stop, ok := mod.ExportedGlobal(stopGlobal).(api.MutableGlobal); ok {
			stop.Set(uint64(reason))
		}
		if reason == reasonTimeout {
			return ErrTimeout
		}
		return ctxError(ctx)
	}
	if budget, ok := mod.ExportedGlobal(budgetGlobal).(api.MutableGlobal); ok && units > 0 {
		b := int64(int32(uint32(budget.Get()))) - int64(min(units, math.MaxInt32))
		budget.Set(uint64(uint32(int32(max(b, math.MinInt32)))))
	}
	return nil
}

// MemoryInUse is what mod, an instance of a module rewritten by Instrument,
// uses of its memory budget (Limits.MemoryBytes): its linear memory (none
// for a module without one), its table entries at 8 bytes each, and what
// its host keeps for it (SetHostBytes). memory.grow and table.grow fail
// rather than take it past the budget.
func MemoryInUse(mod api.Module) uint64 {
	var n uint64
	if m := memoryOf(mod); m != nil {
		n = uint64(m.Size())
	}
	if g := mod.ExportedGlobal(tableEntriesGlobal); g != nil {
		n += g.Get() * 8
	}
	if g := mod.ExportedGlobal(hostBytesGlobal); g != nil {
		n += g.Get()
	}
	return n
}

// SetHostBytes records that the host keeps n bytes for mod (buffers of its
// host functions), which count against its memory budget: the guest's
// memory.grow and table.grow fail rather than take linear memory, tables and
// these bytes together past Limits.MemoryBytes. The host, for its part,
// should refuse to keep more than MemoryBytes - MemoryInUse(mod) besides
// what it already recorded.
func SetHostBytes(mod api.Module, n uint64) {
	if g, ok := mod.ExportedGlobal(hostBytesGlobal).(api.MutableGlobal); ok {
		g.Set(n)
	}
}

// memoryOf is mod's memory, or nil when it has none: wazero then returns a
// non-nil api.Memory holding a nil pointer, whose methods panic.
func memoryOf(mod api.Module) api.Memory {
	m := mod.Memory()
	if m == nil {
		return nil
	}
	if v := reflect.ValueOf(m); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return m
}
