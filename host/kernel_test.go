package host

import (
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/permhost/permhost/sandbox"
)

// noMemory is a module without linear memory: the arena alone counts
// against the memory limit.
type noMemory struct{ api.Module }

func (noMemory) Memory() api.Memory { return nil }

// ExportedGlobal: the module is not instrumented, so the sandbox's
// accounting and deadline checks find none of their globals.
func (noMemory) ExportedGlobal(string) api.Global { return nil }

// kernelHarness calls the kernel functions as a guest would, on one
// instance, outside wazero.
type kernelHarness struct {
	t    *testing.T
	inst *instance
	ctx  *callCtx
}

func newKernelHarness(t *testing.T, input string, config map[string]string) *kernelHarness {
	p := &Plugin{name: "k", limits: sandbox.Limits{MemoryBytes: 1 << 20}.WithDefaults(), configStrings: config}
	inst := &instance{plugin: p, mod: noMemory{}}
	inst.begin(true)
	inst.input = []byte(input)
	return &kernelHarness{t: t, inst: inst, ctx: &callCtx{Context: context.Background(), inst: inst}}
}

// call runs the kernel function name with args and returns its result (0
// when it has none) or the fault it raised.
func (h *kernelHarness) call(name string, args ...uint64) (res uint64, fault *kernelFault) {
	h.t.Helper()
	for _, f := range kernelFunctions {
		if f.name != name {
			continue
		}
		if len(args) != len(f.params) {
			h.t.Fatalf("%s takes %d arguments, got %d", name, len(f.params), len(args))
		}
		stack := make([]uint64, max(len(f.params), len(f.results), 1))
		copy(stack, args)
		defer func() {
			if r := recover(); r != nil {
				kf, ok := r.(*kernelFault)
				if !ok {
					panic(r)
				}
				fault = kf
			}
		}()
		f.fn(h.ctx, h.inst.mod, stack)
		if len(f.results) == 0 {
			return 0, nil
		}
		return stack[0], nil
	}
	h.t.Fatalf("no kernel function %s", name)
	return 0, nil
}

// ok calls name and fails the test on a fault.
func (h *kernelHarness) ok(name string, args ...uint64) uint64 {
	h.t.Helper()
	r, f := h.call(name, args...)
	if f != nil {
		h.t.Fatalf("%s%v: %v", name, args, f)
	}
	return r
}

// block stores s in a new block.
func (h *kernelHarness) block(s string) uint64 {
	h.t.Helper()
	off := h.ok("alloc", uint64(len(s)))
	for i := range len(s) {
		h.ok("store_u8", off+uint64(i), uint64(s[i]))
	}
	return off
}

// read returns the block at off as a string.
func (h *kernelHarness) read(off uint64) string {
	h.t.Helper()
	n := h.ok("length", off)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(h.ok("load_u8", off+uint64(i)))
	}
	return string(b)
}

// The semantics docs/abi.md gives each kernel function, out-of-range
// offsets included: a misuse is a trap of the call, a limit its own kind.
func TestKernelSemantics(t *testing.T) {
	type fault struct {
		kind Kind
		msg  string
	}
	tests := []struct {
		name string
		run  func(h *kernelHarness) (uint64, *kernelFault)
		want uint64
		// fault is the failure expected instead of a result.
		fault *fault
	}{
		{"input_length", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("input_length") }, 10, nil},
		{"input_load_u8 of the last byte", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("input_load_u8", 9) }, '9', nil},
		{"input_load_u8 past the input", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("input_load_u8", 10) }, 0,
			&fault{KindTrap, "input_load_u8: offset 10 past the input's 10 bytes"}},
		{"input_load_u64, little-endian", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("input_load_u64", 2) }, 0x3938373635343332, nil},
		{"input_load_u64 with fewer than 8 bytes left", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("input_load_u64", 3) }, 0,
			&fault{KindTrap, "input_load_u64: offset 3 past the input's 10 bytes"}},
		{"input_offset is a block of the input", func(h *kernelHarness) (uint64, *kernelFault) {
			off := h.ok("input_offset")
			if h.read(off) != "0123456789" || h.ok("input_offset") != off {
				return 1, nil
			}
			return 0, nil
		}, 0, nil},
		{"alloc of 0 bytes is no block", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("alloc", 0) }, 0, nil},
		{"blocks start at 8, 8-aligned, zeroed", func(h *kernelHarness) (uint64, *kernelFault) {
			a, b := h.ok("alloc", 3), h.ok("alloc", 5)
			return a<<32 | b<<16 | h.ok("load_u8", b+4), nil
		}, 8<<32 | 16<<16, nil},
		{"alloc past the memory limit", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("alloc", 2<<20) }, 0,
			&fault{KindMemory, "alloc of 2097152 bytes exceeds the memory limit"}},
		{"length of an offset that starts no block", func(h *kernelHarness) (uint64, *kernelFault) {
			off := h.ok("alloc", 16)
			return h.call("length", off+1)
		}, 0, nil},
		{"length_unsafe is length", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("length_unsafe", h.ok("alloc", 16)) }, 16, nil},
		{"free, then the block is gone", func(h *kernelHarness) (uint64, *kernelFault) {
			off := h.ok("alloc", 16)
			h.ok("free", off)
			h.ok("free", 12345) // not a block: ignored
			return h.call("length", off)
		}, 0, nil},
		{"load_u8 below 8", func(h *kernelHarness) (uint64, *kernelFault) { h.ok("alloc", 16); return h.call("load_u8", 7) }, 0,
			&fault{KindTrap, "load_u8: 1 bytes at offset 7 lie outside the allocated memory"}},
		{"load_u8 past the newest block", func(h *kernelHarness) (uint64, *kernelFault) { h.ok("alloc", 16); return h.call("load_u8", 24) }, 0,
			&fault{KindTrap, "load_u8: 1 bytes at offset 24 lie outside the allocated memory"}},
		{"load_u64 across the end", func(h *kernelHarness) (uint64, *kernelFault) { h.ok("alloc", 16); return h.call("load_u64", 17) }, 0,
			&fault{KindTrap, "load_u64: 8 bytes at offset 17 lie outside the allocated memory"}},
		{"store_u64 then load_u64, little-endian", func(h *kernelHarness) (uint64, *kernelFault) {
			off := h.ok("alloc", 8)
			h.ok("store_u64", off, 0x0102030405060708)
			return h.ok("load_u8", off)<<8 | h.ok("load_u8", off+7), nil
		}, 0x0801, nil},
		{"store_u8 outside", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("store_u8", 8, 1) }, 0,
			&fault{KindTrap, "store_u8: 1 bytes at offset 8 lie outside the allocated memory"}},
		{"store_u64 outside", func(h *kernelHarness) (uint64, *kernelFault) { h.ok("alloc", 4); return h.call("store_u64", 8, 1) }, 0,
			&fault{KindTrap, "store_u64: 8 bytes at offset 8 lie outside the allocated memory"}},
		{"output_set outside", func(h *kernelHarness) (uint64, *kernelFault) {
			off := h.ok("alloc", 4)
			return h.call("output_set", off, 5)
		}, 0,
			&fault{KindTrap, "output_set: 5 bytes at offset 8 lie outside the allocated memory"}},
		{"output_set past the output limit", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("output_set", 8, 1<<20+1) }, 0,
			&fault{KindOutputTooLarge, "output of 1048577 bytes exceeds the limit of 1048576"}},
		{"output_set of nothing", func(h *kernelHarness) (uint64, *kernelFault) {
			_, f := h.call("output_set", 0, 0)
			if !h.inst.outSet {
				return 1, f
			}
			return 0, f
		}, 0, nil},
		{"error_set of no block", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("error_set", 8) }, 0,
			&fault{KindTrap, "error_set: offset 8 is not an allocated block"}},
		{"error_set 0 clears", func(h *kernelHarness) (uint64, *kernelFault) {
			h.ok("error_set", h.block("bad"))
			set := h.inst.errSet && string(h.inst.errMsg) == "bad"
			h.ok("error_set", 0)
			if !set || h.inst.errSet {
				return 1, nil
			}
			return 0, nil
		}, 0, nil},
		{"config_get of a string and of JSON text", func(h *kernelHarness) (uint64, *kernelFault) {
			if h.read(h.ok("config_get", h.block("mode"))) != "plan" || h.read(h.ok("config_get", h.block("n"))) != "3" {
				return 1, nil
			}
			return h.call("config_get", h.block("absent"))
		}, 0, nil},
		{"config_get of no block", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("config_get", 0) }, 0,
			&fault{KindTrap, "config_get: offset 0 is not an allocated block"}},
		{"var_set, var_get, var_set 0 removes", func(h *kernelHarness) (uint64, *kernelFault) {
			h.ok("var_set", h.block("k"), h.block("v"))
			got := h.read(h.ok("var_get", h.block("k")))
			h.ok("var_set", h.block("k"), 0)
			if got != "v" {
				return 1, nil
			}
			return h.call("var_get", h.block("k"))
		}, 0, nil},
		{"var_set past 64 KiB", func(h *kernelHarness) (uint64, *kernelFault) {
			return h.call("var_set", h.block("k"), h.block(strings.Repeat("x", 64<<10)))
		}, 0, &fault{KindMemory, "var_set: vars exceed 65536 bytes"}},
		{"var_get of no block", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("var_get", 99) }, 0,
			&fault{KindTrap, "var_get: offset 99 is not an allocated block"}},
		{"get_log_level is trace", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("get_log_level") }, 0, nil},
		{"log_info logs and frees its block; no block logs nothing", func(h *kernelHarness) (uint64, *kernelFault) {
			off := h.block("hello")
			h.ok("log_info", off)
			h.ok("log_warn", 4096)
			if len(h.inst.logs) != 1 || h.inst.logs[0] != (Log{"info", "hello"}) {
				return 1, nil
			}
			return h.call("length", off)
		}, 0, nil},
		{"http_request", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("http_request", 0, 0) }, 0,
			&fault{KindTrap, "http_request: " + ErrNetwork.Error()}},
		{"http_status_code", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("http_status_code") }, 0, nil},
		{"http_headers", func(h *kernelHarness) (uint64, *kernelFault) { return h.call("http_headers") }, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newKernelHarness(t, "0123456789", map[string]string{"mode": "plan", "n": "3"})
			got, f := tt.run(h)
			switch {
			case tt.fault == nil && f != nil:
				t.Fatalf("fault %v, want %#x", f, tt.want)
			case tt.fault == nil && got != tt.want:
				t.Fatalf("got %#x, want %#x", got, tt.want)
			case tt.fault != nil && f == nil:
				t.Fatalf("got %#x, want a %s fault", got, tt.fault.kind)
			case tt.fault != nil && (f.kind != tt.fault.kind || f.Error() != tt.fault.msg):
				t.Fatalf("fault %s %q, want %s %q", f.kind, f, tt.fault.kind, tt.fault.msg)
			}
		})
	}
}

// The kernel memory is emptied at the start of every call.
func TestKernelMemoryLastsOneCall(t *testing.T) {
	h := newKernelHarness(t, "", nil)
	off := h.block("kept?")
	h.ok("var_set", h.block("k"), h.block("v"))
	h.inst.begin(true)
	if n := h.ok("length", off); n != 0 {
		t.Errorf("a block of the last call is still there (%d bytes)", n)
	}
	if v := h.ok("var_get", h.block("k")); v != 0 {
		t.Errorf("a variable of the last call is still set")
	}
}
