package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// growModule instantiates testdata/grow.wasm, instrumented, in a runtime
// from NewRuntime under l.
func growModule(t *testing.T, l Limits) api.Module {
	t.Helper()
	ctx := context.Background()
	r, err := NewRuntime(ctx, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(ctx) })
	cm, err := CompileModule(ctx, r, mustInstrument(t, readTestdata(t, "grow.wasm")))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := r.InstantiateModule(ctx, cm, ModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// i32 is a call's i32 result as a signed value.
func i32(res []uint64) int32 { return int32(uint32(res[0])) }

// TestTableGrowBounded: table.grow past Limits.MaxTableEntries (all tables
// together) returns -1 without growing, whatever the delta; below it, the
// wasm semantics are kept.
func TestTableGrowBounded(t *testing.T) {
	mod := growModule(t, Limits{MaxTableEntries: 1000})
	for _, tc := range []struct {
		fn    string
		delta uint64
		want  int32
	}{
		{"table_grow", 1 << 30, -1},    // the grow that killed the process
		{"table_grow", 0xffffffff, -1}, // wraps to -1 in i32: still refused
		{"table_grow", 0, 10},          // growing by 0 always succeeds
		{"table_grow", 990, 10},        // to exactly the limit
		{"table_grow", 1, -1},          // one past it
		{"table_grow_b", 1, -1},        // the limit is for all tables
		{"table_grow_b", 0, 0},         // the other table is still empty
	} {
		if got := i32(call(t, mod, tc.fn, tc.delta)); got != tc.want {
			t.Errorf("%s(%d) = %d, want %d", tc.fn, tc.delta, got, tc.want)
		}
	}
	if got := i32(call(t, mod, "table_size")); got != 1000 {
		t.Errorf("table size %d, want 1000", got)
	}
	if got := MemoryInUse(mod); got != WasmPageSize+1000*8 {
		t.Errorf("MemoryInUse = %d, want one page and 1000 entries of 8 bytes", got)
	}
}

// TestMemoryBudget: linear memory, table entries (8 bytes each) and the
// host's bytes share Limits.MemoryBytes; memory.grow and table.grow fail
// rather than take them past it.
func TestMemoryBudget(t *testing.T) {
	const budget = 4 * WasmPageSize
	mod := growModule(t, Limits{MemoryBytes: budget, MaxTableEntries: 100_000})
	steps := []struct {
		fn    string
		delta uint64
		want  int32
	}{
		{"memory_grow", 1, 1},                   // 2 pages
		{"table_grow", WasmPageSize/8 - 10, 10}, // + 64 KiB of entries: 3 pages' worth
		{"memory_grow", 1, 2},                   // 3 pages + 64 KiB = the budget
		{"memory_grow", 1, -1},                  // over it
		{"table_grow", 1, -1},                   // so is one more entry
		{"memory_grow", 0, 3},                   // growing by 0 always succeeds
	}
	for _, s := range steps {
		if got := i32(call(t, mod, s.fn, s.delta)); got != s.want {
			t.Errorf("%s(%d) = %d, want %d", s.fn, s.delta, got, s.want)
		}
	}
	if got := MemoryInUse(mod); got != budget {
		t.Errorf("MemoryInUse = %d, want the whole budget %d", got, budget)
	}

	fresh := growModule(t, Limits{MemoryBytes: budget})
	SetHostBytes(fresh, WasmPageSize)
	if got := i32(call(t, fresh, "memory_grow", 2)); got != -1 {
		t.Errorf("with 64 KiB kept by the host, memory_grow(2) = %d, want -1", got)
	}
	if got := i32(call(t, fresh, "memory_grow", 1)); got != 1 {
		t.Errorf("with 64 KiB kept by the host, memory_grow(1) = %d, want 1", got)
	}
	if got, want := MemoryInUse(fresh), uint64(3*WasmPageSize+10*8); got != want {
		t.Errorf("MemoryInUse = %d, want %d", got, want)
	}
}

// TestMemorylessModule: a module without linear memory is measured and
// accounted without the nil memory wazero hands out for it.
func TestMemorylessModule(t *testing.T) {
	ctx := context.Background()
	r, err := NewRuntime(ctx, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	extismStub(t, r)
	bin := mustInstrument(t, readFixture(t, "memoryless"))
	mod, err := r.InstantiateWithConfig(ctx, bin, ModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := MemoryInUse(mod); got != 0 {
		t.Errorf("MemoryInUse = %d, want 0", got)
	}
	w := Watch(ctx, mod, time.Second)
	_, callErr := mod.ExportedFunction("permhost_abi").Call(ctx)
	if err := w.Stop(); err != nil || callErr == nil {
		t.Errorf("permhost_abi: call %v, Stop %v; want the trap and no stop", callErr, err)
	}
}

// TestBulkAndHostWorkStopAtDeadline: work charged by its length (table.fill
// of the whole table, random_get of 8 MiB, fd_write) past an expired
// deadline stops at the first check: the call fails and Stop says
// ErrTimeout. (With a deadline already passed, this is order, not timing:
// nothing may run to completion.)
func TestBulkAndHostWorkStopAtDeadline(t *testing.T) {
	ctx := context.Background()
	mod := growModule(t, Limits{MemoryBytes: 16 << 20, MaxTableEntries: 200_000})
	call(t, mod, "table_grow", 100_000)
	call(t, mod, "memory_grow", 200) // 201 pages, 12.6 MiB
	for _, tc := range []struct {
		fn   string
		args []uint64
	}{
		{"table_fill", []uint64{1 << 30}},
		{"random_get", []uint64{65536, 8 << 20}},
		{"random_loop", []uint64{65536, 8 << 20}},
		{"fd_write", []uint64{1, 1}},
	} {
		// For fd_write: one iovec of 8 MiB at 64 KiB.
		binary.LittleEndian.PutUint32(memBytes(t, mod, 1024, 8), 65536)
		binary.LittleEndian.PutUint32(memBytes(t, mod, 1028, 4), 8<<20)
		w := Watch(ctx, mod, 0)
		_, callErr := mod.ExportedFunction(tc.fn).Call(ctx, tc.args...)
		if err := w.Stop(); !errors.Is(err, ErrTimeout) || callErr == nil {
			t.Errorf("%s past its deadline: call %v, Stop %v; want a failed call and ErrTimeout", tc.fn, callErr, err)
		}
	}
	// Under a live deadline random_get fills its buffer.
	buf := memBytes(t, mod, 65536, 8<<20)
	clear(buf)
	if errno := i32(call(t, mod, "random_get", 65536, 8<<20)); errno != 0 {
		t.Fatalf("random_get errno %d", errno)
	}
	if bytes.Count(buf[len(buf)-4096:], []byte{0}) > 100 {
		t.Error("random_get left its buffer's end unfilled")
	}
	// A cancelled context stops host work the same way, as a cancellation.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	w := Watch(cctx, mod, time.Minute)
	_, callErr := mod.ExportedFunction("random_get").Call(cctx, 65536, 8<<20)
	if err := w.Stop(); !errors.Is(err, context.Canceled) || callErr == nil {
		t.Errorf("cancelled: call %v, Stop %v; want a failed call and context.Canceled", callErr, err)
	}
}

func memBytes(t *testing.T, mod api.Module, off, n uint32) []byte {
	t.Helper()
	b, ok := mod.Memory().Read(off, n)
	if !ok {
		t.Fatalf("memory [%d, +%d) out of range", off, n)
	}
	return b
}

// TestBoundedWASI: what the sandbox's fd_write, fd_read, random_get and
// poll_oneoff answer, and that stdout reaches the writer of the call's
// context.
func TestBoundedWASI(t *testing.T) {
	mod := growModule(t, Limits{MemoryBytes: 8 << 20})
	call(t, mod, "memory_grow", 40) // 41 pages
	ctx := context.Background()
	var out bytes.Buffer
	sctx := WithStdio(ctx, &out, nil)
	callIn := func(fn string, args ...uint64) int32 {
		t.Helper()
		w := Watch(sctx, mod, 10*time.Second)
		res, err := mod.ExportedFunction(fn).Call(sctx, args...)
		if stopErr := w.Stop(); err != nil || stopErr != nil {
			t.Fatalf("%s: %v, %v", fn, err, stopErr)
		}
		return i32(res)
	}
	le := binary.LittleEndian
	setIovec := func(i int, off, n uint32) {
		le.PutUint32(memBytes(t, mod, uint32(1024+8*i), 8), off)
		le.PutUint32(memBytes(t, mod, uint32(1028+8*i), 4), n)
	}
	written := func() uint32 { return le.Uint32(memBytes(t, mod, 16, 4)) }

	copy(memBytes(t, mod, 8192, 11), "hello world")
	setIovec(0, 8192, 5)
	setIovec(1, 8197, 6)
	if errno := callIn("fd_write", 1, 2); errno != 0 || written() != 11 || out.String() != "hello world" {
		t.Errorf("fd_write of two iovecs: errno %d, nwritten %d, stdout %q", errno, written(), out.String())
	}
	if errno := callIn("fd_write", 2, 2); errno != 0 || written() != 11 || out.Len() != 11 {
		t.Errorf("fd_write to a nil stderr: errno %d, nwritten %d (want 0, 11, discarded)", errno, written())
	}
	if errno := callIn("fd_write", 1, maxIovecs+1); errno != errnoInval {
		t.Errorf("fd_write of %d iovecs: errno %d, want EINVAL", maxIovecs+1, errno)
	}
	if errno := callIn("fd_write", 3, 1); errno != errnoBadf {
		t.Errorf("fd_write to fd 3: errno %d, want EBADF", errno)
	}
	out.Reset()
	setIovec(0, 65536, 2<<20)
	if errno := callIn("fd_write", 1, 1); errno != 0 || written() != maxWriteBytes || out.Len() != maxWriteBytes {
		t.Errorf("fd_write of 2 MiB: errno %d, nwritten %d, %d bytes out; want a short write of %d", errno, written(), out.Len(), maxWriteBytes)
	}
	setIovec(0, 8<<20, 16) // past the memory
	if errno := callIn("fd_write", 1, 1); errno != errnoFault {
		t.Errorf("fd_write outside memory: errno %d, want EFAULT", errno)
	}

	le.PutUint32(memBytes(t, mod, 16, 4), 99)
	if errno := callIn("fd_read", 0, 1); errno != 0 || written() != 0 {
		t.Errorf("fd_read of stdin: errno %d, nread %d; want 0, 0 (empty)", errno, written())
	}
	if errno := callIn("fd_read", 1, 1); errno != errnoBadf {
		t.Errorf("fd_read of stdout: errno %d, want EBADF", errno)
	}

	// poll_oneoff: a relative clock, a read of stdin, a read of fd 7.
	subs := memBytes(t, mod, 1024, 3*48)
	clear(subs)
	for i, sub := range []struct {
		userdata uint64
		kind     byte
		fd       uint32
	}{{11, 0, 0}, {22, 1, 0}, {33, 1, 7}} {
		s := subs[48*i:]
		le.PutUint64(s, sub.userdata)
		s[8] = sub.kind
		if sub.kind == 0 {
			le.PutUint64(s[24:], uint64(time.Hour)) // does not wait: sleeping is not real
		} else {
			le.PutUint32(s[16:], sub.fd)
		}
	}
	if errno := callIn("poll_oneoff", 3); errno != 0 || written() != 3 {
		t.Fatalf("poll_oneoff: errno %d, nevents %d", errno, written())
	}
	events := memBytes(t, mod, 32768, 3*32)
	for i, want := range []struct {
		userdata uint64
		errno    uint16
		kind     byte
	}{{11, 0, 0}, {22, 0, 1}, {33, errnoBadf, 1}} {
		e := events[32*i:]
		if le.Uint64(e) != want.userdata || le.Uint16(e[8:]) != want.errno || e[10] != want.kind {
			t.Errorf("event %d: userdata %d errno %d type %d; want %+v", i, le.Uint64(e), le.Uint16(e[8:]), e[10], want)
		}
	}
	if errno := callIn("poll_oneoff", maxSubscriptions+1); errno != errnoInval {
		t.Errorf("poll_oneoff of %d subscriptions: errno %d, want EINVAL", maxSubscriptions+1, errno)
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	return readTestdata(t, "../../testdata/wasm/"+name+".wasm")
}
