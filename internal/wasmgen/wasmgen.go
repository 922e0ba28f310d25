// Package wasmgen builds WebAssembly modules too large to commit, for the
// tests and benchmarks of the sandbox's load-time limits: a valid permhost
// plugin shell (exporting permhost_abi and permhost_decide, which trap)
// with chosen dimensions blown up, such as a million passive element
// entries, a million globals or a br_table of a million targets.
package wasmgen

// Shape is what to put into a module; zero fields give the smallest shell.
type Shape struct {
	Functions       int // trivial functions besides the shell's
	Types           int // function types besides the shell's
	Globals         int
	Imports         int // imports besides the shell's one
	Exports         int // exports besides the shell's three
	Tables          int
	TableMin        int // declared minimum entries of each table
	ElementSegments int // passive segments; the first holds the entries
	ElementEntries  int
	DataSegments    int // passive segments; the first holds the bytes
	DataBytes       int
	// The big function, present when any of these is set: Locals
	// parameters and locals, BlockDepth nested blocks around a br_table of
	// BrTableTargets targets, padded with nops to FunctionBytes.
	Locals         int
	BlockDepth     int
	BrTableTargets int
	FunctionBytes  int
	CustomBytes    int // one custom section of this size
	ModuleBytes    int // padded with a custom section to at least this size
}

// Module returns a module of shape s.
func Module(s Shape) []byte {
	const (
		typeResult = 0 // () -> (i32): the exports
		typeVoid   = 1 // () -> ()
		typeOutput = 2 // (i64, i64) -> (): extism output_set
		typeBig    = 3 // (i32) -> ()
	)
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

	types := vec(4+s.Types, func(b []byte, i int) []byte {
		switch i {
		case typeResult:
			return append(b, 0x60, 0, 1, 0x7f)
		case typeOutput:
			return append(b, 0x60, 2, 0x7e, 0x7e, 0)
		case typeBig:
			return append(b, 0x60, 1, 0x7f, 0)
		}
		return append(b, 0x60, 0, 0)
	})
	out = section(out, 1, types)

	imports := vec(1+s.Imports, func(b []byte, _ int) []byte {
		b = name(b, "extism:host/env")
		b = name(b, "output_set")
		return append(b, 0x00, typeOutput)
	})
	out = section(out, 2, imports)

	big := s.Locals > 0 || s.BlockDepth > 0 || s.BrTableTargets > 0 || s.FunctionBytes > 0
	nfuncs := 2 + s.Functions
	if big {
		nfuncs++
	}
	funcs := vec(nfuncs, func(b []byte, i int) []byte {
		switch {
		case i < 2:
			return append(b, typeResult)
		case big && i == nfuncs-1:
			return append(b, typeBig)
		}
		return append(b, typeVoid)
	})
	out = section(out, 3, funcs)

	if s.Tables > 0 {
		out = section(out, 4, vec(s.Tables, func(b []byte, _ int) []byte {
			return u32(append(b, 0x70, 0x00), uint32(s.TableMin))
		}))
	}
	out = section(out, 5, []byte{1, 0x00, 1}) // one page
	if s.Globals > 0 {
		out = section(out, 6, vec(s.Globals, func(b []byte, _ int) []byte {
			return append(b, 0x7f, 0x00, 0x41, 0x00, 0x0b)
		}))
	}

	first := uint32(1 + s.Imports) // the first defined function
	exports := vec(3+s.Exports, func(b []byte, i int) []byte {
		switch i {
		case 0:
			return u32(append(name(b, "permhost_abi"), 0x00), first)
		case 1:
			return u32(append(name(b, "permhost_decide"), 0x00), first+1)
		case 2:
			return append(name(b, "memory"), 0x02, 0)
		}
		return u32(append(name(b, "e"+itoa(i)), 0x00), first)
	})
	out = section(out, 7, exports)

	if s.ElementSegments > 0 || s.ElementEntries > 0 {
		segs := max(s.ElementSegments, 1)
		out = section(out, 9, vec(segs, func(b []byte, i int) []byte {
			n := 0
			if i == 0 {
				n = s.ElementEntries
			}
			b = append(b, 0x01, 0x00) // passive, funcref by index
			return vec1(b, n, func(b []byte, _ int) []byte { return u32(b, first) })
		}))
	}

	code := vec(nfuncs, func(b []byte, i int) []byte {
		var body []byte
		switch {
		case i < 2:
			body = []byte{0, 0x00, 0x0b} // unreachable
		case big && i == nfuncs-1:
			body = bigBody(s)
		default:
			body = []byte{0, 0x0b}
		}
		return append(u32(b, uint32(len(body))), body...)
	})
	out = section(out, 10, code)

	if s.DataSegments > 0 || s.DataBytes > 0 {
		segs := max(s.DataSegments, 1)
		out = section(out, 11, vec(segs, func(b []byte, i int) []byte {
			n := 0
			if i == 0 {
				n = s.DataBytes
			}
			b = u32(append(b, 0x01), uint32(n)) // passive
			return append(b, make([]byte, n)...)
		}))
	}

	if s.CustomBytes > 0 {
		out = custom(out, s.CustomBytes)
	}
	if pad := s.ModuleBytes - len(out); pad > 0 {
		out = custom(out, max(pad-16, 1))
	}
	return out
}

// bigBody is the body of the big function (type (i32) -> ()).
func bigBody(s Shape) []byte {
	var b []byte
	if extra := s.Locals - 1; extra > 0 {
		b = u32(append(b, 1), uint32(extra))
		b = append(b, 0x7f)
	} else {
		b = append(b, 0)
	}
	for range s.BlockDepth {
		b = append(b, 0x02, 0x40)
	}
	if s.BrTableTargets > 0 {
		b = append(b, 0x02, 0x40, 0x20, 0x00, 0x0e) // block; local.get 0; br_table
		b = u32(b, uint32(s.BrTableTargets))
		for range s.BrTableTargets {
			b = append(b, 0)
		}
		b = append(b, 0, 0x0b) // default; end
	}
	for range s.BlockDepth {
		b = append(b, 0x0b)
	}
	for len(b)+1 < s.FunctionBytes {
		b = append(b, 0x01) // nop
	}
	return append(b, 0x0b)
}

func custom(out []byte, size int) []byte {
	content := name(nil, "wasmgen-padding")
	content = append(content, make([]byte, max(size-len(content), 0))...)
	return section(out, 0, content)
}

func section(out []byte, id byte, content []byte) []byte {
	out = append(out, id)
	out = u32(out, uint32(len(content)))
	return append(out, content...)
}

func vec(n int, item func([]byte, int) []byte) []byte { return vec1(nil, n, item) }

func vec1(b []byte, n int, item func([]byte, int) []byte) []byte {
	b = u32(b, uint32(n))
	for i := range n {
		b = item(b, i)
	}
	return b
}

func name(b []byte, s string) []byte { return append(u32(b, uint32(len(s))), s...) }

func u32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

// Named is a generated module of the hostile suite.
type Named struct {
	Name  string
	Shape Shape
	// Limit is the field of sandbox.Limits that refuses it at its default.
	Limit string
}

// Hostile are the generated modules of the hostile suite: each one of a
// class that took permhost to gigabytes of memory, or minutes of compiling,
// before the load-time limits (see testdata/wasm/README.md).
var Hostile = []Named{
	{"million_passive_elements", Shape{ElementEntries: 1_000_000}, "MaxElementEntries"},
	{"million_globals", Shape{Globals: 1_000_000}, "MaxGlobals"},
	{"million_types", Shape{Types: 1_000_000}, "MaxTypes"},
	{"huge_br_table", Shape{BrTableTargets: 1_000_000}, "MaxBrTableTargets"},
	{"huge_module", Shape{ModuleBytes: 40 << 20}, "MaxModuleBytes"},
}
