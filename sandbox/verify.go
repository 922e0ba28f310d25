package sandbox

import (
	"bytes"
	"fmt"
)

// Shape is what the load-time verifier counts in a module: the sizes that
// decide how much memory and time wazero needs to decode, validate, compile
// and instantiate it. [Measure] returns it, [Limits.Check] compares it with
// the limits; a host may keep it beside its compile cache so that a later
// load of the same module need not read it again.
type Shape struct {
	ModuleBytes     uint64 // the whole binary
	Functions       uint64 // defined functions
	Types           uint64
	Globals         uint64 // defined and imported
	Imports         uint64
	Exports         uint64
	Tables          uint64 // defined and imported
	TableEntries    uint64 // the sum of the tables' declared minimums
	TableMax        uint64 // the largest declared maximum (0: none declared)
	ElementSegments uint64
	ElementEntries  uint64 // over all segments
	DataSegments    uint64
	DataBytes       uint64 // over all segments
	Locals          uint64 // the most of one function, its parameters included
	FunctionBytes   uint64 // the largest function body
	BrTableTargets  uint64 // the most of one br_table
	BlockDepth      uint64 // the deepest nesting of blocks, loops, ifs and trys
	CustomBytes     uint64 // over all custom sections
	MemoryMinPages  uint64 // the largest declared minimum of a memory
}

// LimitError is the error of a module over one of the Limits: Limit names
// the field of Limits, Value is what the module has and Max what the limit
// allows. It wraps ErrLimit.
type LimitError struct {
	Limit string
	What  string // what was counted, in words
	Value uint64
	Max   uint64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s: %d, more than Limits.%s (%d)", ErrLimit, e.What, e.Value, e.Limit, e.Max)
}

func (e *LimitError) Unwrap() error { return ErrLimit }

// Measure is the load-time verifier: it counts what Limits bound in the
// WebAssembly binary wasm, without compiling it, reading every instruction
// once (~30 ms for a 4 MB Go plugin). A module over one of l's limits is
// refused with a *LimitError as soon as the count passes it, so that a
// module declaring millions of items is refused without reading them; a
// malformed module gives an error wrapping ErrInstrument. Run it before
// compiling: wazero's decoder, validator and compiler have no limits of
// their own.
func Measure(wasm []byte, l Limits) (s Shape, err error) {
	defer func() {
		if p := recover(); p != nil {
			switch v := p.(type) {
			case malformed:
				err = fmt.Errorf("%w: %s", ErrInstrument, v.msg)
			case *LimitError:
				err = v
			default:
				panic(p)
			}
		}
	}()
	l = l.WithDefaults()
	m := measurer{l: l}
	m.measure(wasm)
	return m.s, nil
}

// measurer counts a module, failing (by panicking a *LimitError) as soon
// as a count passes its limit, so that the work done on a hostile module is
// bounded by the limits rather than by what it declares.
type measurer struct {
	l          Limits
	s          Shape
	typeParams []uint32
	funcTypes  []uint32
	imported   uint32 // imported functions
}

// count reads a vector's length and adds it to *total, refusing a total
// over max (a *LimitError naming limit) before checking that the vector can
// fit in what is left of the input: a hostile count is refused by the
// limit it breaks, whatever it claims.
func count(r *reader, total *uint64, limit, what string, max int) uint32 {
	n := r.u32()
	*total += uint64(n)
	over(limit, what, *total, uint64(max))
	if uint64(n) > uint64(len(r.b)-r.off) {
		fail("vector of %d elements cannot fit in %d bytes", n, len(r.b)-r.off)
	}
	return n
}

// over panics a *LimitError when v > max.
func over(limit, what string, v, max uint64) {
	if v > max {
		panic(&LimitError{Limit: limit, What: what, Value: v, Max: max})
	}
}

func (m *measurer) measure(wasm []byte) {
	l := m.l
	m.s.ModuleBytes = uint64(len(wasm))
	over("MaxModuleBytes", "module bytes", m.s.ModuleBytes, uint64(l.MaxModuleBytes))
	if len(wasm) < 8 || !bytes.Equal(wasm[:8], wasmHeader) {
		fail("not a WebAssembly 1.0 binary module")
	}
	r := &reader{b: wasm, off: 8}
	for !r.eof() {
		id := r.byte()
		sec := &reader{b: r.bytes(r.u32())}
		m.section(id, sec)
	}
}

func (m *measurer) section(id byte, r *reader) {
	l, s := m.l, &m.s
	switch id {
	case secCustom:
		s.CustomBytes += uint64(len(r.b))
		over("MaxCustomBytes", "custom section bytes", s.CustomBytes, uint64(l.MaxCustomBytes))
		return
	case secType:
		for n := count(r, &s.Types, "MaxTypes", "types", l.MaxTypes); n > 0; n-- {
			if f := r.byte(); f != 0x60 {
				fail("type form 0x%x is not supported (only function types)", f)
			}
			params := r.count()
			for k := params; k > 0; k-- {
				r.valtype()
			}
			for k := r.count(); k > 0; k-- {
				r.valtype()
			}
			m.typeParams = append(m.typeParams, params)
		}
	case secImport:
		for n := count(r, &s.Imports, "MaxImports", "imports", l.MaxImports); n > 0; n-- {
			r.name()
			r.name()
			switch kind := r.byte(); kind {
			case 0x00:
				r.u32()
				m.imported++
			case 0x01:
				r.valtype()
				m.table(r)
			case 0x02:
				m.memory(r)
			case 0x03:
				r.valtype()
				r.byte()
				s.Globals++
				over("MaxGlobals", "globals", s.Globals, uint64(l.MaxGlobals))
			case 0x04:
				r.byte()
				r.u32()
			default:
				fail("unknown import kind 0x%x", kind)
			}
		}
	case secFunction:
		for n := count(r, &s.Functions, "MaxFunctions", "functions", l.MaxFunctions); n > 0; n-- {
			m.funcTypes = append(m.funcTypes, r.u32())
		}
	case secTable:
		tables := s.Tables
		n := count(r, &tables, "MaxTables", "tables", l.MaxTables)
		for ; n > 0; n-- {
			if !r.eof() && r.b[r.off] == 0x40 { // a table type with an initializer
				r.off++
				if r.byte() != 0 {
					fail("bad table initializer prefix")
				}
				r.valtype()
				m.table(r)
				skipExpr(r)
				continue
			}
			r.valtype()
			m.table(r)
		}
	case secMemory:
		for n := r.count(); n > 0; n-- {
			m.memory(r)
		}
	case secGlobal:
		count(r, &s.Globals, "MaxGlobals", "globals", l.MaxGlobals)
		// Each global is a type, a mutability and a constant expression;
		// wazero decodes them, so the count is what costs.
	case secExport:
		count(r, &s.Exports, "MaxExports", "exports", l.MaxExports)
	case secElement:
		m.elements(r)
	case secData:
		for n := count(r, &s.DataSegments, "MaxDataSegments", "data segments", l.MaxDataSegments); n > 0; n-- {
			switch flags := r.u32(); flags {
			case 0:
				skipExpr(r)
			case 1:
			case 2:
				r.u32()
				skipExpr(r)
			default:
				fail("bad data segment flags %d", flags)
			}
			s.DataBytes += uint64(len(r.bytes(r.u32())))
			over("MaxDataBytes", "data bytes", s.DataBytes, uint64(l.MaxDataBytes))
		}
	case secCode:
		var bodies uint64
		n := count(r, &bodies, "MaxFunctions", "function bodies", l.MaxFunctions)
		for i := uint32(0); i < n; i++ {
			body := r.bytes(r.u32())
			var params uint32
			if int(i) < len(m.funcTypes) && int(m.funcTypes[i]) < len(m.typeParams) {
				params = m.typeParams[m.funcTypes[i]]
			}
			m.body(body, params)
		}
	}
}

// table reads a table's limits.
func (m *measurer) table(r *reader) {
	l, s := m.l, &m.s
	s.Tables++
	over("MaxTables", "tables", s.Tables, uint64(l.MaxTables))
	min, max, hasMax := r.limitValues()
	s.TableEntries += min
	over("MaxTableEntries", "table entries (declared minimums)", s.TableEntries, uint64(l.MaxTableEntries))
	if hasMax {
		s.TableMax = maxU64(s.TableMax, max)
		over("MaxTableEntries", "table entries (a declared maximum)", max, uint64(l.MaxTableEntries))
	}
}

// memory reads a memory's limits.
func (m *measurer) memory(r *reader) {
	min, _, _ := r.limitValues()
	m.s.MemoryMinPages = maxU64(m.s.MemoryMinPages, min)
	over("MemoryBytes", "memory pages (a declared minimum)", min, uint64(m.l.MemoryPages()))
}

func (m *measurer) elements(r *reader) {
	l, s := m.l, &m.s
	n := count(r, &s.ElementSegments, "MaxElementSegments", "element segments", l.MaxElementSegments)
	entries := func(exprs bool) {
		for k := count(r, &s.ElementEntries, "MaxElementEntries", "element entries", l.MaxElementEntries); k > 0; k-- {
			if exprs {
				skipExpr(r)
			} else {
				r.u32()
			}
		}
	}
	for ; n > 0; n-- {
		switch flags := r.u32(); flags {
		case 0:
			skipExpr(r)
			entries(false)
		case 1, 3:
			r.byte()
			entries(false)
		case 2:
			r.u32()
			skipExpr(r)
			r.byte()
			entries(false)
		case 4:
			skipExpr(r)
			entries(true)
		case 5, 7:
			r.valtype()
			entries(true)
		case 6:
			r.u32()
			skipExpr(r)
			r.valtype()
			entries(true)
		default:
			fail("bad element segment flags %d", flags)
		}
	}
}

// body measures one function body.
func (m *measurer) body(b []byte, params uint32) {
	l, s := m.l, &m.s
	s.FunctionBytes = maxU64(s.FunctionBytes, uint64(len(b)))
	over("MaxFunctionBytes", "bytes of one function body", uint64(len(b)), uint64(l.MaxFunctionBytes))
	r := &reader{b: b}
	locals := uint64(params)
	var groups uint64
	for n := count(r, &groups, "MaxLocals", "local declarations of one function", l.MaxLocals); n > 0; n-- {
		locals += uint64(r.u32())
		r.valtype()
		over("MaxLocals", "locals of one function", locals, uint64(l.MaxLocals))
	}
	s.Locals = maxU64(s.Locals, locals)
	depth := uint64(0)
	maxDepth, maxDepthLimit := s.BlockDepth, uint64(l.MaxBlockDepth)
	maxTargets, maxTargetsLimit := s.BrTableTargets, uint64(l.MaxBrTableTargets)
	for !r.eof() {
		switch kind, n := decodeInstr(r); kind {
		case kindOpen, kindLoop:
			depth++
			if depth > maxDepth {
				maxDepth = depth
				over("MaxBlockDepth", "nested blocks in one function", depth, maxDepthLimit)
			}
		case kindClose:
			if depth == 0 && !r.eof() {
				fail("function body has %d bytes after its end", len(b)-r.off)
			}
			depth--
		case kindBrTable:
			if uint64(n) > maxTargets {
				maxTargets = uint64(n)
				over("MaxBrTableTargets", "targets of one br_table", maxTargets, maxTargetsLimit)
			}
		}
	}
	s.BlockDepth, s.BrTableTargets = maxDepth, maxTargets
}

func maxU64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// Check reports the first limit s is over, as a *LimitError; nil when s
// fits l (zero fields of l take their defaults). A Shape that Measure
// returned under l always fits it.
func (l Limits) Check(s Shape) error {
	l = l.WithDefaults()
	for _, c := range []struct {
		limit, what string
		v, max      uint64
	}{
		{"MaxModuleBytes", "module bytes", s.ModuleBytes, uint64(l.MaxModuleBytes)},
		{"MaxFunctions", "functions", s.Functions, uint64(l.MaxFunctions)},
		{"MaxTypes", "types", s.Types, uint64(l.MaxTypes)},
		{"MaxGlobals", "globals", s.Globals, uint64(l.MaxGlobals)},
		{"MaxImports", "imports", s.Imports, uint64(l.MaxImports)},
		{"MaxExports", "exports", s.Exports, uint64(l.MaxExports)},
		{"MaxTables", "tables", s.Tables, uint64(l.MaxTables)},
		{"MaxTableEntries", "table entries (declared minimums)", s.TableEntries, uint64(l.MaxTableEntries)},
		{"MaxTableEntries", "table entries (a declared maximum)", s.TableMax, uint64(l.MaxTableEntries)},
		{"MaxElementSegments", "element segments", s.ElementSegments, uint64(l.MaxElementSegments)},
		{"MaxElementEntries", "element entries", s.ElementEntries, uint64(l.MaxElementEntries)},
		{"MaxDataSegments", "data segments", s.DataSegments, uint64(l.MaxDataSegments)},
		{"MaxDataBytes", "data bytes", s.DataBytes, uint64(l.MaxDataBytes)},
		{"MaxLocals", "locals of one function", s.Locals, uint64(l.MaxLocals)},
		{"MaxFunctionBytes", "bytes of one function body", s.FunctionBytes, uint64(l.MaxFunctionBytes)},
		{"MaxBrTableTargets", "targets of one br_table", s.BrTableTargets, uint64(l.MaxBrTableTargets)},
		{"MaxBlockDepth", "nested blocks in one function", s.BlockDepth, uint64(l.MaxBlockDepth)},
		{"MaxCustomBytes", "custom section bytes", s.CustomBytes, uint64(l.MaxCustomBytes)},
		{"MemoryBytes", "memory pages (a declared minimum)", s.MemoryMinPages, uint64(l.MemoryPages())},
	} {
		if c.v > c.max {
			return &LimitError{Limit: c.limit, What: c.what, Value: c.v, Max: c.max}
		}
	}
	return nil
}
