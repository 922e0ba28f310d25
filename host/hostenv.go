package host

import (
	"context"

	"github.com/tetratelabs/wazero/api"
)

// hostEnvModule holds permhost's own additions to the Extism kernel (ABI
// 1.5): the kernel moves the input and the output eight bytes per host
// call, which for a 2.5 KB request is 313 calls, more than a small plugin's
// whole decision; these move them in one call each, straight between the
// input or a new block and the guest's linear memory.
const hostEnvModule = "permhost:host/env"

var i64i32x2 = []api.ValueType{api.ValueTypeI64, api.ValueTypeI32, api.ValueTypeI32}

var hostEnvFunctions = []hostFunction{
	// input_read(offset i64, ptr i32, len i32): the input's bytes
	// [offset, offset+len) into linear memory at ptr.
	{"input_read", i64i32x2, none, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := running(ctx)
		in := inst.input
		off, ptr, n := s[0], uint32(s[1]), uint32(s[2])
		if off > uint64(len(in)) || uint64(len(in))-off < uint64(n) {
			panic(fault(KindTrap, "input_read: %d bytes at offset %d lie past the input's %d bytes", n, off, len(in)))
		}
		charge(ctx, mod, uint64(n)>>bulkShift)
		if !linearMemory("input_read", mod).Write(ptr, in[off:off+uint64(n)]) {
			panic(fault(KindTrap, "input_read: %d bytes at address %d lie outside linear memory", n, ptr))
		}
	}},
	// output_write(ptr i32, len i32): a copy of linear memory's bytes
	// [ptr, ptr+len) becomes the call's output, as alloc, the stores and
	// output_set would make it.
	{"output_write", []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, none, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := running(ctx)
		ptr, n := uint32(s[0]), uint32(s[1])
		inst.checkOutputSize(uint64(n))
		b, ok := linearMemory("output_write", mod).Read(ptr, n)
		if !ok {
			panic(fault(KindTrap, "output_write: %d bytes at address %d lie outside linear memory", n, ptr))
		}
		off := uint64(0)
		if n > 0 {
			off = inst.store(ctx, mod, b)
		}
		inst.outOff, inst.outLen, inst.outSet = off, uint64(n), true
	}},
}

// linearMemory is the guest's memory, or a trap naming fn when it has none.
func linearMemory(fn string, mod api.Module) api.Memory {
	m := mod.Memory()
	if m == nil {
		panic(fault(KindTrap, "%s: the module has no linear memory", fn))
	}
	return m
}
