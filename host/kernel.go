package host

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/permhost/permhost/sandbox"
)

// extismModule is the import module of every Extism PDK.
const extismModule = "extism:host/env"

// arenaStart is the offset of the first block: 0 stays the null offset, and
// blocks are 8-aligned like the Extism kernel's, which the PDKs assume when
// they move data with load_u64 and store_u64.
const arenaStart = 8

// maxErrorBytes bounds the message of error_set kept in an error.
const maxErrorBytes = 4 << 10

// maxVarBytes bounds what one call may keep with var_set.
const maxVarBytes = 64 << 10

// Extism log levels as returned by get_log_level: everything is logged,
// because logs are bounded per call anyway.
const extismLogTrace = 0

// kernelFault is panicked by a kernel function when the plugin misuses the
// ABI or exceeds a limit; wazero turns the panic into the call's error,
// which [instance.classify] unwraps.
type kernelFault struct {
	kind Kind
	err  error
}

func (f *kernelFault) Error() string { return f.err.Error() }
func (f *kernelFault) Unwrap() error { return f.err }

func fault(kind Kind, format string, args ...any) *kernelFault {
	return &kernelFault{kind: kind, err: fmt.Errorf(format, args...)}
}

// callCtx carries the running instance to the kernel functions. Each
// instance owns one and points it at the caller's context for the length of
// a call, so reaching the per-call state costs a type assertion and no
// allocation.
type callCtx struct {
	context.Context
	inst *instance
}

type callCtxKey struct{}

// Err reports the caller's context's error, or Canceled once Close has
// stopped the instance: the sandbox's deadline checks consult Err, so that
// is how Close reaches a running guest without touching its globals from
// another goroutine.
func (c *callCtx) Err() error {
	if c.inst.stopping.Load() {
		return context.Canceled
	}
	return c.Context.Err()
}

func (c *callCtx) Value(key any) any {
	if key == (callCtxKey{}) {
		return c.inst
	}
	if v := c.inst.stdio.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

// running returns the instance whose call is running on ctx.
func running(ctx context.Context) *instance {
	if c, ok := ctx.(*callCtx); ok {
		return c.inst
	}
	// wazero passes our context through unchanged today; if it ever wraps
	// it, the value still reaches us.
	if inst, ok := ctx.Value(callCtxKey{}).(*instance); ok {
		return inst
	}
	panic(fault(KindTrap, "extism kernel called outside a permhost call"))
}

// block is one allocation in the arena.
type block struct {
	off, len uint64
}

// arena is the Extism kernel memory of one instance: the blocks the plugin
// allocates with alloc, addressed by offsets into a Go byte slice. It is
// reset at the start of every call and its backing array is reused.
type arena struct {
	mem    []byte  // mem[:arenaStart] is never handed out
	blocks []block // ascending offsets; freed blocks are removed
}

func (a *arena) reset() {
	if cap(a.mem) > 1<<20 {
		// A plugin that once needed a large arena should not keep it in the
		// pool for ever.
		a.mem = nil
	}
	if a.mem == nil {
		a.mem = make([]byte, arenaStart, 4<<10)
	}
	a.mem = a.mem[:arenaStart]
	a.blocks = a.blocks[:0]
}

// alloc returns the offset of a new zeroed block of n bytes, or a fault
// when the arena would grow past limit bytes of capacity.
func (a *arena) alloc(n, limit uint64) (uint64, *kernelFault) {
	if n == 0 {
		return 0, nil
	}
	off := (uint64(len(a.mem)) + 7) &^ 7
	end := off + n
	if n > limit || end > limit || end < off {
		return 0, fault(KindMemory, "alloc of %d bytes exceeds the memory limit", n)
	}
	if end > uint64(cap(a.mem)) {
		// Doubling, but never past the limit: the capacity is what counts.
		grown := make([]byte, end, min(max(end, 2*uint64(cap(a.mem))), limit))
		copy(grown, a.mem)
		a.mem = grown
	} else {
		a.mem = a.mem[:end]
		clear(a.mem[off:end])
	}
	a.blocks = append(a.blocks, block{off: off, len: n})
	return off, nil
}

// find returns the index of the block starting at off, or -1.
func (a *arena) find(off uint64) int {
	// The block asked about is nearly always the newest one.
	if n := len(a.blocks); n > 0 && a.blocks[n-1].off == off {
		return n - 1
	}
	lo, hi := 0, len(a.blocks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch b := a.blocks[m].off; {
		case b == off:
			return m
		case b < off:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

func (a *arena) length(off uint64) uint64 {
	if i := a.find(off); i >= 0 {
		return a.blocks[i].len
	}
	return 0
}

// free drops the block at off; freeing the newest block gives its bytes
// back, so alloc-use-free sequences do not grow the arena.
func (a *arena) free(off uint64) {
	i := a.find(off)
	if i < 0 {
		return
	}
	if i == len(a.blocks)-1 {
		a.mem = a.mem[:a.blocks[i].off]
	}
	a.blocks = append(a.blocks[:i], a.blocks[i+1:]...)
}

// bytes returns the whole block at off.
func (a *arena) bytes(off uint64) ([]byte, bool) {
	i := a.find(off)
	if i < 0 {
		return nil, false
	}
	b := a.blocks[i]
	return a.mem[b.off : b.off+b.len], true
}

// span returns mem[off:off+n] when it lies inside the allocated arena.
func (a *arena) span(off, n uint64) ([]byte, bool) {
	if off < arenaStart || n > math.MaxUint64-off || off+n > uint64(len(a.mem)) {
		return nil, false
	}
	return a.mem[off : off+n], true
}

// store copies b into a new block.
func (inst *instance) store(ctx context.Context, mod api.Module, b []byte) uint64 {
	off := inst.alloc(ctx, mod, uint64(len(b)))
	copy(inst.arena.mem[off:], b)
	return off
}

// alloc is the kernel's alloc: a zeroed block of n bytes, charged to the
// guest's budget (it costs a clear and maybe a copy of the arena), within
// the memory budget.
func (inst *instance) alloc(ctx context.Context, mod api.Module, n uint64) uint64 {
	charge(ctx, mod, n>>bulkShift)
	grew := uint64(cap(inst.arena.mem))
	off, f := inst.arena.alloc(n, inst.arenaLimit(mod))
	if f != nil {
		panic(f)
	}
	if uint64(cap(inst.arena.mem)) != grew {
		inst.accountArena(mod)
	}
	return off
}

// arenaLimit is what the arena's capacity may grow to: it counts against
// the same memory budget as the plugin's linear memory and tables.
func (inst *instance) arenaLimit(mod api.Module) uint64 {
	limit := inst.plugin.limits.MemoryBytes
	others := sandbox.MemoryInUse(mod) - min(inst.arenaBytes, sandbox.MemoryInUse(mod))
	if others >= limit {
		return 0
	}
	return limit - others
}

// accountArena records the arena's capacity in the instance's memory
// budget, so that the guest's memory.grow and table.grow leave room for it.
func (inst *instance) accountArena(mod api.Module) {
	inst.arenaBytes = uint64(cap(inst.arena.mem))
	sandbox.SetHostBytes(mod, inst.arenaBytes)
}

// bulkShift: a kernel function charges a unit per 1<<bulkShift bytes it
// copies or clears (about a nanosecond's worth), as the sandbox charges
// bulk memory instructions.
const bulkShift = 4

// charge is sandbox.Charge for a kernel function: at the call's deadline
// it ends the call.
func charge(ctx context.Context, mod api.Module, units uint64) {
	if err := sandbox.Charge(ctx, mod, units); err != nil {
		panic(err)
	}
}

// checkOutputSize fails the call when an output of n bytes is over the
// plugin's limit.
func (inst *instance) checkOutputSize(n uint64) {
	if limit := uint64(inst.plugin.limits.MaxOutput); n > limit {
		panic(fault(KindOutputTooLarge, "output of %d bytes exceeds the limit of %d", n, limit))
	}
}

func (inst *instance) blockOrFault(fn string, off uint64) []byte {
	b, ok := inst.arena.bytes(off)
	if !ok {
		panic(fault(KindTrap, "%s: offset %d is not an allocated block", fn, off))
	}
	return b
}

func (inst *instance) spanOrFault(fn string, off, n uint64) []byte {
	b, ok := inst.arena.span(off, n)
	if !ok {
		panic(fault(KindTrap, "%s: %d bytes at offset %d lie outside the allocated memory", fn, n, off))
	}
	return b
}

var (
	i32   = []api.ValueType{api.ValueTypeI32}
	i64   = []api.ValueType{api.ValueTypeI64}
	i64x2 = []api.ValueType{api.ValueTypeI64, api.ValueTypeI64}
	i64i3 = []api.ValueType{api.ValueTypeI64, api.ValueTypeI32}
	none  = []api.ValueType{}
)

// testHookInput, when set, is called when a guest asks for its input's
// length, on the goroutine running its call: tests learn that a call is
// inside the guest.
var testHookInput atomic.Pointer[func(*instance)]

// kernelFunctions lists the Extism host ABI as the PDKs import it (checked
// against go-pdk v1.1.3, the AssemblyScript PDK and go-sdk v1.7.1).
var kernelFunctions = []hostFunction{
	{"input_length", none, i64, func(ctx context.Context, _ api.Module, s []uint64) {
		inst := running(ctx)
		if h := testHookInput.Load(); h != nil {
			(*h)(inst)
		}
		s[0] = uint64(len(inst.input))
	}},
	{"input_load_u8", i64, i32, func(ctx context.Context, _ api.Module, s []uint64) {
		in := running(ctx).input
		if s[0] >= uint64(len(in)) {
			panic(fault(KindTrap, "input_load_u8: offset %d past the input's %d bytes", s[0], len(in)))
		}
		s[0] = uint64(in[s[0]])
	}},
	{"input_load_u64", i64, i64, func(ctx context.Context, _ api.Module, s []uint64) {
		in := running(ctx).input
		if s[0] > uint64(len(in)) || uint64(len(in))-s[0] < 8 {
			panic(fault(KindTrap, "input_load_u64: offset %d past the input's %d bytes", s[0], len(in)))
		}
		s[0] = binary.LittleEndian.Uint64(in[s[0]:])
	}},
	// The input as a block, for PDKs that read it with load_u8/load_u64
	// (the C PDK's extism_load_input). Made on first use, since most PDKs
	// read it with input_load_*; made again if the plugin freed or changed it.
	{"input_offset", none, i64, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := running(ctx)
		in := inst.input
		charge(ctx, mod, uint64(len(in))>>bulkShift)
		if b, ok := inst.arena.bytes(inst.inputOff); !ok || !bytes.Equal(b, in) {
			inst.inputOff = inst.store(ctx, mod, in)
		}
		s[0] = inst.inputOff
	}},
	{"alloc", i64, i64, func(ctx context.Context, mod api.Module, s []uint64) {
		s[0] = running(ctx).alloc(ctx, mod, s[0])
	}},
	{"free", i64, none, func(ctx context.Context, _ api.Module, s []uint64) {
		running(ctx).arena.free(s[0])
	}},
	{"length", i64, i64, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = running(ctx).arena.length(s[0])
	}},
	{"length_unsafe", i64, i64, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = running(ctx).arena.length(s[0])
	}},
	{"load_u8", i64, i32, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = uint64(running(ctx).spanOrFault("load_u8", s[0], 1)[0])
	}},
	{"load_u64", i64, i64, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = binary.LittleEndian.Uint64(running(ctx).spanOrFault("load_u64", s[0], 8))
	}},
	{"store_u8", i64i3, none, func(ctx context.Context, _ api.Module, s []uint64) {
		running(ctx).spanOrFault("store_u8", s[0], 1)[0] = byte(s[1])
	}},
	{"store_u64", i64x2, none, func(ctx context.Context, _ api.Module, s []uint64) {
		binary.LittleEndian.PutUint64(running(ctx).spanOrFault("store_u64", s[0], 8), s[1])
	}},
	{"output_set", i64x2, none, func(ctx context.Context, _ api.Module, s []uint64) {
		inst := running(ctx)
		off, n := s[0], s[1]
		inst.checkOutputSize(n)
		if n > 0 {
			inst.spanOrFault("output_set", off, n)
		}
		inst.outOff, inst.outLen, inst.outSet = off, n, true
	}},
	{"error_set", i64, none, func(ctx context.Context, _ api.Module, s []uint64) {
		inst := running(ctx)
		if s[0] == 0 {
			inst.errMsg, inst.errSet = inst.errMsg[:0], false
			return
		}
		b := inst.blockOrFault("error_set", s[0])
		if len(b) > maxErrorBytes {
			b = b[:maxErrorBytes]
		}
		inst.errMsg, inst.errSet = append(inst.errMsg[:0], b...), true
	}},
	{"config_get", i64, i64, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := running(ctx)
		key := inst.blockOrFault("config_get", s[0])
		charge(ctx, mod, uint64(len(key))>>bulkShift)
		v, ok := inst.plugin.configStrings[string(key)]
		if !ok {
			s[0] = 0
			return
		}
		s[0] = inst.store(ctx, mod, []byte(v))
	}},
	{"var_get", i64, i64, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := running(ctx)
		key := inst.blockOrFault("var_get", s[0])
		charge(ctx, mod, uint64(len(key)+inst.varBytes)>>bulkShift)
		for _, v := range inst.vars {
			if v.key == string(key) {
				s[0] = inst.store(ctx, mod, v.value)
				return
			}
		}
		s[0] = 0
	}},
	{"var_set", i64x2, none, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := running(ctx)
		key := string(inst.blockOrFault("var_set", s[0]))
		var value []byte
		if s[1] != 0 {
			value = inst.blockOrFault("var_set", s[1])
		}
		charge(ctx, mod, uint64(len(key)+len(value)+inst.varBytes)>>bulkShift)
		inst.setVar(key, value)
	}},
	{"http_request", i64x2, i64, func(ctx context.Context, _ api.Module, s []uint64) {
		panic(&kernelFault{kind: KindTrap, err: fmt.Errorf("http_request: %w", ErrNetwork)})
	}},
	{"http_status_code", none, i32, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = 0
	}},
	{"http_headers", none, i64, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = 0
	}},
	{"get_log_level", none, i32, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = extismLogTrace
	}},
	{"log_trace", i64, none, logFunc("trace")},
	{"log_debug", i64, none, logFunc("debug")},
	{"log_info", i64, none, logFunc("info")},
	{"log_warn", i64, none, logFunc("warn")},
	{"log_error", i64, none, logFunc("error")},
}

func logFunc(level string) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, s []uint64) {
		inst := running(ctx)
		// Like Extism, the block is freed once logged, so that a plugin
		// logging in a loop does not fill its arena; and like Extism, a log
		// of an offset that is no block (a freed one, say) logs nothing.
		if msg, ok := inst.arena.bytes(s[0]); ok {
			// What is kept is bounded by MaxLogBytes; the charge is for
			// validating and copying that much.
			charge(ctx, mod, uint64(min(len(msg), inst.plugin.limits.MaxLogBytes))>>bulkShift)
			inst.log(level, msg)
			inst.arena.free(s[0])
		}
	}
}

// hostFunction is one function of a host module the plugins import.
type hostFunction struct {
	name            string
	params, results []api.ValueType
	fn              api.GoModuleFunc
}

// instantiateHostModule adds the host module name, made of fns, to rt.
func instantiateHostModule(ctx context.Context, rt wazero.Runtime, name string, fns []hostFunction) error {
	b := rt.NewHostModuleBuilder(name)
	for _, f := range fns {
		b.NewFunctionBuilder().WithGoModuleFunction(f.fn, f.params, f.results).Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

type variable struct {
	key   string
	value []byte
}

// setVar keeps value under key for the rest of the call (nil removes it).
// Vars never outlive a call: instances are pooled and replaced at will, so a
// value kept across calls would make decisions depend on which instance
// answered.
func (inst *instance) setVar(key string, value []byte) {
	for i, v := range inst.vars {
		if v.key == key {
			inst.varBytes -= len(v.key) + len(v.value)
			inst.vars = append(inst.vars[:i], inst.vars[i+1:]...)
			break
		}
	}
	if value == nil {
		return
	}
	if inst.varBytes+len(key)+len(value) > maxVarBytes {
		panic(fault(KindMemory, "var_set: vars exceed %d bytes", maxVarBytes))
	}
	inst.varBytes += len(key) + len(value)
	inst.vars = append(inst.vars, variable{key: key, value: append([]byte(nil), value...)})
}
