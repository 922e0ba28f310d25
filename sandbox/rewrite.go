package sandbox

import (
	"math"
	"strings"
)

// survey records the counts the index arithmetic needs and refuses modules
// that already carry our names.
func (rw *rewriter) survey(s section) {
	r := &reader{b: s.content}
	switch s.id {
	case secType:
		n := r.count()
		for i := uint32(0); i < n; i++ {
			if f := r.byte(); f != 0x60 {
				fail("type form 0x%x is not supported (only function types)", f)
			}
			params := r.count()
			for m := params; m > 0; m-- {
				r.valtype()
			}
			results := r.count()
			start := r.off
			for m := results; m > 0; m-- {
				r.valtype()
			}
			rw.typeParams = append(rw.typeParams, params)
			rw.typeResults = append(rw.typeResults, r.b[start:r.off])
			rw.resultCount = append(rw.resultCount, results)
		}
		rw.types = n
	case secImport:
		for n := r.count(); n > 0; n-- {
			mod, name := r.name(), r.name()
			if mod == hostModule || mod == limitsModule {
				fail("module already imports %s.%s", mod, name)
			}
			switch kind := r.byte(); kind {
			case 0x00:
				r.u32()
				rw.importedFuncs++
			case 0x01:
				r.valtype()
				rw.table(r)
			case 0x02:
				rw.memory(r)
			case 0x03:
				r.valtype()
				r.byte()
				rw.importedGlobals++
			case 0x04:
				r.byte()
				r.u32()
			default:
				fail("unknown import kind 0x%x", kind)
			}
		}
	case secFunction:
		rw.definedFuncs = r.count()
		for i := rw.definedFuncs; i > 0; i-- {
			t := r.u32()
			if t >= rw.types {
				fail("function type %d out of range", t)
			}
			rw.funcTypes = append(rw.funcTypes, t)
		}
	case secTable:
		for n := r.count(); n > 0; n-- {
			init := !r.eof() && r.b[r.off] == 0x40 // table type with an initializer
			if init {
				r.off++
				if r.byte() != 0 {
					fail("bad table initializer prefix")
				}
			}
			r.valtype()
			rw.table(r)
			if init {
				skipExpr(r) // renumbered by rewrite
			}
		}
	case secMemory:
		for n := r.count(); n > 0; n-- {
			rw.memory(r)
		}
	case secGlobal:
		rw.definedGlobals = r.count()
		return // parsed by rewrite, once the index arithmetic is known
	case secExport:
		for n := r.count(); n > 0; n-- {
			if name := r.name(); isAddedExport(name) {
				fail("module already exports %q (instrumented twice?)", name)
			}
			r.byte()
			r.u32()
		}
	default:
		return
	}
	if !r.eof() {
		fail("section %d has %d trailing bytes", s.id, len(r.b)-r.off)
	}
}

// addedExports are the names of the globals Instrument exports.
var addedExports = []string{stopGlobal, deadlineGlobal, depthGlobal, budgetGlobal, tableEntriesGlobal, hostBytesGlobal}

func isAddedExport(name string) bool {
	for _, n := range addedExports {
		if name == n {
			return true
		}
	}
	return false
}

// table reads a table's limits. 64-bit tables and memories are refused:
// wazero does not run them, and the checks Instrument adds are for 32-bit
// lengths.
func (rw *rewriter) table(r *reader) {
	is64, min, _, _ := r.limitsOf()
	if is64 {
		fail("64-bit tables are not supported")
	}
	rw.tables++
	rw.tableMin += min
}

func (rw *rewriter) memory(r *reader) {
	if is64, _, _, _ := r.limitsOf(); is64 {
		fail("64-bit memories are not supported")
	}
	rw.hasMemory = true
}

// planBlockTypes adds a type [] -> results for each distinct result list of
// more than one value, for the block Instrument wraps function bodies in.
func (rw *rewriter) planBlockTypes() {
	for _, t := range rw.funcTypes {
		if rw.resultCount[t] < 2 {
			continue
		}
		key := string(rw.typeResults[t])
		if _, ok := rw.blockTypes[key]; ok {
			continue
		}
		if rw.blockTypes == nil {
			rw.blockTypes = map[string]uint32{}
		}
		rw.blockTypes[key] = rw.types + addedTypes + uint32(len(rw.newBlockTypes))
		rw.newBlockTypes = append(rw.newBlockTypes, rw.typeResults[t])
		rw.newBlockCounts = append(rw.newBlockCounts, rw.resultCount[t])
	}
}

// funcIndex renumbers a function index: defined functions move up past the
// imported functions Instrument adds.
func (rw *rewriter) funcIndex(idx uint32) uint32 {
	if idx >= rw.importedFuncs+rw.definedFuncs {
		fail("function index %d out of range", idx)
	}
	if idx >= rw.importedFuncs {
		return idx + addedImportedFuncs
	}
	return idx
}

// globalIndex renumbers a global index: defined globals move up past the
// imported globals Instrument adds. Out-of-range indices would otherwise
// reach the globals we add.
func (rw *rewriter) globalIndex(idx uint32) uint32 {
	if idx >= rw.importedGlobals+rw.definedGlobals {
		fail("global index %d out of range", idx)
	}
	if idx >= rw.importedGlobals {
		return idx + addedImportedGlobals
	}
	return idx
}

// rewrite returns the new content of s, or nil to drop it.
func (rw *rewriter) rewrite(s section) []byte {
	r := &reader{b: s.content}
	var out []byte
	switch s.id {
	case secCustom:
		name := r.name()
		if name == "name" {
			return rw.names(s.content, r.off)
		}
		for _, p := range droppedCustomPrefixes {
			if strings.HasPrefix(name, p) {
				return nil
			}
		}
		return s.content
	case secType:
		out = appendU32(out, r.count()+addedTypes+uint32(len(rw.newBlockTypes)))
		out = append(out, s.content[r.off:]...)
		out = append(out, 0x60, 0x00, 0x00)             // voidType: [] -> []
		out = append(out, 0x60, 0x01, 0x7e, 0x01, 0x7f) // pollType: [i64] -> [i32]
		out = append(out, 0x60, 0x01, 0x7f, 0x01, 0x7f) // deltaType: [i32] -> [i32]
		for i, results := range rw.newBlockTypes {
			out = append(out, 0x60, 0x00)
			out = appendU32(out, rw.newBlockCounts[i])
			out = append(out, results...)
		}
		return out
	case secImport:
		out = appendU32(out, r.count()+addedImportedFuncs+addedImportedGlobals)
		out = append(out, s.content[r.off:]...)
		out = appendName(out, hostModule)
		out = appendName(out, pollFunction)
		out = append(out, 0x00)
		out = appendU32(out, rw.pollType)
		out = appendName(out, hostModule)
		out = appendName(out, callDepthFunction)
		out = append(out, 0x00)
		out = appendU32(out, rw.voidType)
		out = appendName(out, limitsModule)
		out = appendName(out, maxCallDepthGlobal)
		out = append(out, 0x03, 0x7f, 0x00) // immutable i32
		out = appendName(out, limitsModule)
		out = appendName(out, maxTableEntriesGlobal)
		out = append(out, 0x03, 0x7e, 0x00) // immutable i64
		out = appendName(out, limitsModule)
		out = appendName(out, memoryBytesGlobal)
		return append(out, 0x03, 0x7e, 0x00) // immutable i64
	case secFunction:
		out = appendU32(out, r.count()+addedFuncs)
		out = append(out, s.content[r.off:]...)
		out = appendU32(out, rw.voidType)   // slow
		out = appendU32(out, rw.deltaType)  // table delta
		out = appendU32(out, rw.deltaType)  // table grown
		return appendU32(out, rw.deltaType) // memory delta
	case secTable:
		n := r.count()
		out = appendU32(out, n)
		for ; n > 0; n-- {
			start := r.off
			if !r.eof() && r.b[r.off] == 0x40 { // table type with an initializer
				r.byte()
				if r.byte() != 0 {
					fail("bad table initializer prefix")
				}
				r.valtype()
				r.limits()
				out = append(out, s.content[start:r.off]...)
				out = rw.expr(out, r)
				continue
			}
			r.valtype()
			r.limits()
			out = append(out, s.content[start:r.off]...)
		}
	case secGlobal:
		n := r.count()
		out = appendU32(out, n+addedGlobals)
		for ; n > 0; n-- {
			start := r.off
			r.valtype()
			r.byte()
			out = append(out, s.content[start:r.off]...)
			out = rw.expr(out, r)
		}
		out = append(out, 0x7f, 0x01, 0x41) // budget
		out = appendS64(out, budgetRefill)
		out = append(out, 0x0b)
		out = append(out, 0x7f, 0x01, 0x41, 0x00, 0x0b) // stop
		out = append(out, 0x7e, 0x01, 0x42, 0x00, 0x0b) // deadline
		out = append(out, 0x7f, 0x01, 0x41, 0x00, 0x0b) // depth
		out = append(out, 0x7e, 0x01, 0x42)             // table entries: the tables' minimums
		out = appendS64(out, int64(min(rw.tableMin, math.MaxInt64)))
		out = append(out, 0x0b)
		out = append(out, 0x7e, 0x01, 0x42, 0x00, 0x0b) // host bytes
	case secExport:
		n := r.count()
		out = appendU32(out, n+uint32(len(addedExports)))
		for ; n > 0; n-- {
			out = appendName(out, r.name())
			kind := r.byte()
			idx := r.u32()
			switch kind {
			case 0x00:
				idx = rw.funcIndex(idx)
			case 0x03:
				idx = rw.globalIndex(idx)
			}
			out = append(out, kind)
			out = appendU32(out, idx)
		}
		for i, g := range []uint32{rw.stop, rw.deadline, rw.depth, rw.budget, rw.tableEntries, rw.hostBytes} {
			out = appendName(out, addedExports[i])
			out = append(out, 0x03)
			out = appendU32(out, g)
		}
	case secStart:
		out = appendU32(out, rw.funcIndex(r.u32()))
	case secElement:
		out = rw.elements(r)
	case secCode:
		out = rw.code(r)
	case secData:
		n := r.count()
		out = appendU32(out, n)
		for ; n > 0; n-- {
			flags := r.u32()
			out = appendU32(out, flags)
			switch flags {
			case 0:
				out = rw.expr(out, r)
			case 1:
			case 2:
				out = appendU32(out, r.u32())
				out = rw.expr(out, r)
			default:
				fail("bad data segment flags %d", flags)
			}
			data := r.bytes(r.u32())
			out = appendU32(out, uint32(len(data)))
			out = append(out, data...)
		}
	default: // memory, tag, data count: no function or global indices
		return s.content
	}
	if !r.eof() {
		fail("section %d has %d trailing bytes", s.id, len(r.b)-r.off)
	}
	return out
}

func (rw *rewriter) elements(r *reader) []byte {
	n := r.count()
	out := appendU32(nil, n)
	funcs := func() {
		m := r.count()
		out = appendU32(out, m)
		for ; m > 0; m-- {
			out = appendU32(out, rw.funcIndex(r.u32()))
		}
	}
	exprs := func() {
		m := r.count()
		out = appendU32(out, m)
		for ; m > 0; m-- {
			out = rw.expr(out, r)
		}
	}
	for ; n > 0; n-- {
		flags := r.u32()
		out = appendU32(out, flags)
		switch flags {
		case 0:
			out = rw.expr(out, r)
			funcs()
		case 1, 3:
			out = append(out, r.byte()) // elemkind
			funcs()
		case 2:
			out = appendU32(out, r.u32())
			out = rw.expr(out, r)
			out = append(out, r.byte())
			funcs()
		case 4:
			out = rw.expr(out, r)
			exprs()
		case 5, 7:
			start := r.off
			r.valtype()
			out = append(out, r.b[start:r.off]...)
			exprs()
		case 6:
			out = appendU32(out, r.u32())
			out = rw.expr(out, r)
			start := r.off
			r.valtype()
			out = append(out, r.b[start:r.off]...)
			exprs()
		default:
			fail("bad element segment flags %d", flags)
		}
	}
	return out
}

// skipExpr skips a constant expression.
func skipExpr(r *reader) {
	for depth := 0; depth >= 0; {
		switch kind, _ := decodeInstr(r); kind {
		case kindOpen, kindLoop:
			depth++
		case kindClose:
			depth--
		}
	}
}

// expr copies a constant expression, renumbering function and global
// indices.
func (rw *rewriter) expr(out []byte, r *reader) []byte {
	depth := 0
	for {
		start := r.off
		kind, idx := decodeInstr(r)
		switch kind {
		case kindFunc:
			out = append(out, r.b[start])
			out = appendU32(out, rw.funcIndex(idx))
			continue
		case kindGlobal:
			out = append(out, r.b[start])
			out = appendU32(out, rw.globalIndex(idx))
			continue
		case kindOpen, kindLoop:
			depth++
		case kindClose:
			depth--
		}
		out = append(out, r.b[start:r.off]...)
		if depth < 0 {
			return out
		}
	}
}

func (rw *rewriter) code(r *reader) []byte {
	n := r.count()
	if n != rw.definedFuncs {
		fail("code section has %d bodies for %d functions", n, rw.definedFuncs)
	}
	out := appendU32(nil, n+addedFuncs)
	var body []byte
	var weights []int
	for i := uint32(0); i < n; i++ {
		b := r.bytes(r.u32())
		body, weights = rw.body(body[:0], weights[:0], b, rw.funcTypes[i])
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	for _, b := range [][]byte{rw.slowBody(), rw.tableDeltaBody(), rw.tableGrownBody(), rw.memoryDeltaBody()} {
		out = appendU32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// What the rewriter does around an instruction besides renumbering.
type special uint8

const (
	opOther     special = iota
	opReturn            // return, return_call*: leaves the function
	opGrow              // memory.grow, table.grow: slow, poll after
	opMemBulk           // memory.init/copy/fill: length in bytes on top
	opTableBulk         // table.init/copy/fill: length in elements on top
	opTry               // try, try_table: exceptions may be caught here
	opCatch             // catch, catch_all: a legacy handler starts
)

// classify tells what in is, b being an instruction decodeInstr accepted.
func classify(b []byte) special {
	switch b[0] {
	case 0x0f, 0x12, 0x13, 0x15:
		return opReturn
	case 0x40:
		return opGrow
	case 0x06, 0x1f:
		return opTry
	case 0x07, 0x19:
		return opCatch
	case 0xfc:
		switch sub := (&reader{b: b[1:]}).u32(); sub {
		case 8, 10, 11:
			return opMemBulk
		case 12, 14, 17:
			return opTableBulk
		case 15:
			return opGrow
		}
	}
	return opOther
}

// body rewrites one function body of type typ:
//
//	locals (+ a scratch i32 if it has bulk instructions, + the saved depth
//	        if it has try blocks)
//	depth += frame weight; if depth > max: call $call_depth_exceeded
//	(saved = depth)
//	budget check for the function's straight-line code
//	block (result ...)
//	  the original code, with a budget check after every loop header, and
//	  the depth restored after every catch and end if it has try blocks
//	end
//	depth -= frame weight (depth = saved - weight)
//	end
//
// Each check charges the instructions of its region (the function, or one
// iteration of the loop, minus nested loops). Leaf functions, which call
// none of the module's functions, keep only the budget checks: they cannot
// nest deeper.
func (rw *rewriter) body(out []byte, weights []int, b []byte, typ uint32) ([]byte, []int) {
	r := &reader{b: b}
	groups := r.count()
	var locals uint64
	for n := groups; n > 0; n-- {
		locals += uint64(r.u32())
		r.valtype()
	}
	if locals+2 > math.MaxUint32 {
		fail("function declares %d locals", locals)
	}
	code := r.off

	// Pass 1: the cost of each region, and what the function needs. Region
	// 0 is the function; loops are numbered in order of appearance.
	weights = append(weights, 0)
	var frames []int // the region each open frame belongs to
	cur := 0
	var hasBulk, hasTry, calls bool
	for {
		start := r.off
		kind, idx := decodeInstr(r)
		weights[cur]++
		switch classify(b[start:r.off]) {
		case opMemBulk, opTableBulk:
			hasBulk = true
		case opTry:
			hasTry = true
		}
		switch b[start] {
		case 0x10, 0x12: // call, return_call: host functions never call back
			calls = calls || idx >= rw.importedFuncs
			if idx < rw.importedFuncs {
				weights[cur] += hostCallCost - 1
			}
		case 0x11, 0x13, 0x14, 0x15: // indirect and by reference: may be ours
			calls = true
		}
		switch kind {
		case kindOpen:
			frames = append(frames, cur)
		case kindLoop:
			cur = len(weights)
			weights = append(weights, 0)
			frames = append(frames, cur)
		case kindClose:
			if len(frames) == 0 {
				if !r.eof() {
					fail("function body has %d bytes after its end", len(b)-r.off)
				}
				goto emit
			}
			frames = frames[:len(frames)-1]
			cur = 0
			if len(frames) > 0 {
				cur = frames[len(frames)-1]
			}
		case kindFunc:
			rw.funcIndex(idx)
		case kindGlobal:
			rw.globalIndex(idx)
		}
	}

emit:
	// Pass 2: copy, renumber, insert.
	next := uint64(rw.typeParams[typ]) + locals // index of the first added local
	// A leaf function (one that calls none of the module's functions) is
	// not counted: it cannot nest further, so it adds one frame at most.
	f := frameCode{rw: rw, counted: calls, weight: uint32(min(1+next/slotsPerFrame, maxCallDepth+1))}
	extra := uint32(0)
	if hasBulk {
		f.scratch, extra = uint32(next), extra+1
	}
	if hasTry && calls {
		f.saved, f.restores, extra = uint32(next)+extra, true, extra+1
	}
	out = appendU32(out, groups+extra)
	out = append(out, b[(&reader{b: b}).skipCount():code]...)
	for ; extra > 0; extra-- {
		out = append(out, 1, 0x7f)
	}

	out = f.enter(out)
	out = rw.appendCheck(out, weights[0])
	if f.counted {
		out = append(out, 0x02)
		out = rw.appendBlockType(out, typ)
	}
	region := 1
	r.off = code
	for !r.eof() {
		start := r.off
		kind, idx := decodeInstr(r)
		op := classify(b[start:r.off])
		switch op {
		case opReturn:
			out = f.leave(out)
		case opGrow:
			out = append(out, 0x10)
			out = appendU32(out, rw.growDeltaFunc(b[start]))
		case opMemBulk:
			out = f.chargeBulk(out, memoryBulkShift)
		case opTableBulk:
			out = f.chargeBulk(out, tableBulkShift)
		}
		switch kind {
		case kindFunc:
			out = append(out, b[start])
			out = appendU32(out, rw.funcIndex(idx))
		case kindGlobal:
			out = append(out, b[start])
			out = appendU32(out, rw.globalIndex(idx))
		default:
			out = append(out, b[start:r.off]...)
		}
		switch {
		case kind == kindLoop:
			// A try_table may branch to a loop from a handler.
			out = f.restore(out)
			out = rw.appendCheck(out, weights[region])
			region++
		case kind == kindClose && r.eof() && f.counted: // the end of the body closes the block
			out = f.leave(out)
			out = append(out, 0x0b)
		case kind == kindClose, op == opCatch:
			out = f.restore(out)
		case op == opGrow:
			out = append(out, 0x10)
			out = appendU32(out, rw.grownFunc(b[start]))
		case op == opMemBulk, op == opTableBulk:
			out = f.afterBulk(out)
		}
	}
	return out, weights
}

// skipCount skips a vector length and returns the offset after it.
func (r *reader) skipCount() int {
	r.u32()
	return r.off
}

// appendBlockType appends the type of a block with the results of typ.
func (rw *rewriter) appendBlockType(out []byte, typ uint32) []byte {
	switch rw.resultCount[typ] {
	case 0:
		return append(out, 0x40)
	case 1:
		return append(out, rw.typeResults[typ]...)
	}
	return appendS64(out, int64(rw.blockTypes[string(rw.typeResults[typ])]))
}

// frameCode emits the depth and bulk-charging code of one function.
type frameCode struct {
	rw       *rewriter
	counted  bool   // the function counts toward the depth (it is not a leaf)
	weight   uint32 // what a frame of this function adds to the depth
	scratch  uint32 // an i32 local for bulk lengths, in functions that have them
	saved    uint32 // an i32 local holding the depth inside this call
	restores bool   // the function catches exceptions: saved is used
}

// enter appends
//
//	global.get $depth; i32.const weight; i32.add; global.set $depth
//	global.get $depth; global.get $max; i32.gt_u; if; call $call_depth_exceeded; end
//	(global.get $depth; local.set $saved)
func (f *frameCode) enter(out []byte) []byte {
	if !f.counted {
		return out
	}
	rw := f.rw
	out = append(out, 0x23)
	out = appendU32(out, rw.depth)
	out = append(out, 0x41)
	out = appendS64(out, int64(f.weight))
	out = append(out, 0x6a, 0x24)
	out = appendU32(out, rw.depth)
	out = append(out, 0x23)
	out = appendU32(out, rw.depth)
	out = append(out, 0x23)
	out = appendU32(out, rw.maxDepth)
	out = append(out, 0x4b, 0x04, 0x40, 0x10)
	out = appendU32(out, rw.depthFunc)
	out = append(out, 0x0b)
	if f.restores {
		out = append(out, 0x23)
		out = appendU32(out, rw.depth)
		out = append(out, 0x21)
		out = appendU32(out, f.saved)
	}
	return out
}

// leave appends global.get $depth (local.get $saved); i32.const weight;
// i32.sub; global.set $depth.
func (f *frameCode) leave(out []byte) []byte {
	if !f.counted {
		return out
	}
	if f.restores {
		out = append(out, 0x20)
		out = appendU32(out, f.saved)
	} else {
		out = append(out, 0x23)
		out = appendU32(out, f.rw.depth)
	}
	out = append(out, 0x41)
	out = appendS64(out, int64(f.weight))
	out = append(out, 0x6b, 0x24)
	return appendU32(out, f.rw.depth)
}

// restore appends local.get $saved; global.set $depth where control may
// arrive from a handler, in functions that catch exceptions.
func (f *frameCode) restore(out []byte) []byte {
	if !f.restores {
		return out
	}
	out = append(out, 0x20)
	out = appendU32(out, f.saved)
	out = append(out, 0x24)
	return appendU32(out, f.rw.depth)
}

// chargeBulk appends, before a bulk instruction whose i32 length is on top
// of the stack,
//
//	local.tee $scratch; global.get $budget; local.get $scratch
//	i32.const shift; i32.shr_u; i32.sub; global.set $budget
//
// The shift keeps the charge positive for any length.
func (f *frameCode) chargeBulk(out []byte, shift int) []byte {
	rw := f.rw
	out = append(out, 0x22)
	out = appendU32(out, f.scratch)
	out = append(out, 0x23)
	out = appendU32(out, rw.budget)
	out = append(out, 0x20)
	out = appendU32(out, f.scratch)
	out = append(out, 0x41)
	out = appendS64(out, int64(shift))
	out = append(out, 0x76, 0x6b, 0x24)
	return appendU32(out, rw.budget)
}

// afterBulk appends, after a bulk instruction, the second half of a check:
// global.get $budget; i32.const 0; i32.lt_s; if; call $slow; end.
func (f *frameCode) afterBulk(out []byte) []byte {
	return f.rw.appendSlowIfSpent(out)
}

// appendSlowIfSpent appends
//
//	global.get $budget; i32.const 0; i32.lt_s; if; call $slow; end
func (rw *rewriter) appendSlowIfSpent(out []byte) []byte {
	out = append(out, 0x23)
	out = appendU32(out, rw.budget)
	out = append(out, 0x41, 0x00, 0x48, 0x04, 0x40, 0x10)
	out = appendU32(out, rw.slowFunc)
	return append(out, 0x0b)
}

// appendCheck appends
//
//	global.get $budget; i32.const w; i32.sub; global.set $budget
//	global.get $budget; i32.const 0; i32.lt_s; if; call $slow; end
func (rw *rewriter) appendCheck(out []byte, w int) []byte {
	w = max(1, min(w, maxCharge))
	out = append(out, 0x23)
	out = appendU32(out, rw.budget)
	out = append(out, 0x41)
	out = appendS64(out, int64(w))
	out = append(out, 0x6b, 0x24)
	out = appendU32(out, rw.budget)
	return rw.appendSlowIfSpent(out)
}

// slowBody is the function the checks call when the budget runs out:
//
//	global.get $deadline; call $poll; global.set $stop
//	global.get $stop; if; unreachable; end
//	i32.const refill; global.set $budget
func (rw *rewriter) slowBody() []byte {
	out := []byte{0x00, 0x23}
	out = appendU32(out, rw.deadline)
	out = append(out, 0x10)
	out = appendU32(out, rw.pollFunc)
	out = append(out, 0x24)
	out = appendU32(out, rw.stop)
	out = append(out, 0x23)
	out = appendU32(out, rw.stop)
	out = append(out, 0x04, 0x40, 0x00, 0x0b, 0x41)
	out = appendS64(out, budgetRefill)
	out = append(out, 0x24)
	out = appendU32(out, rw.budget)
	return append(out, 0x0b)
}

// growDeltaFunc is the function a grow whose opcode starts with op passes
// its delta through first: 0x40 memory.grow, 0xfc table.grow.
func (rw *rewriter) growDeltaFunc(op byte) uint32 {
	if op == 0x40 {
		return rw.memoryDeltaFunc
	}
	return rw.tableDeltaFunc
}

// grownFunc is the function called on a grow's result.
func (rw *rewriter) grownFunc(op byte) uint32 {
	if op == 0x40 {
		return rw.slowFunc
	}
	return rw.tableGrownFunc
}

// appendBudgetBytes appends the bytes counted against the memory budget
// besides the linear memory, as an i64: the table entries at 8 bytes each
// and the host's bytes.
//
//	global.get $table_entries; i64.const 3; i64.shl
//	global.get $host_bytes; i64.add
func (rw *rewriter) appendBudgetBytes(out []byte) []byte {
	out = append(out, 0x23)
	out = appendU32(out, rw.tableEntries)
	out = append(out, 0x42, 3, 0x86, 0x23)
	out = appendU32(out, rw.hostBytes)
	return append(out, 0x7c)
}

// appendRefuseIfOver appends, with an i64 of bytes or entries below an
// i64 bound on the stack,
//
//	i64.gt_u; if; i32.const -1; return; end
//
// -1 (0xffffffff) as a grow's delta makes it fail without allocating.
func appendRefuseIfOver(out []byte) []byte {
	return append(out, 0x56, 0x04, 0x40, 0x41, 0x7f, 0x0f, 0x0b)
}

// appendZeroDelta appends local.get 0; i32.eqz; if; i32.const 0; return;
// end: growing by 0 always succeeds.
func appendZeroDelta(out []byte) []byte {
	return append(out, 0x20, 0, 0x45, 0x04, 0x40, 0x41, 0, 0x0f, 0x0b)
}

// tableDeltaBody is the function table.grow passes its delta (param 0)
// through: it returns the delta, or 0xffffffff when the new total of table
// entries would exceed $max_table_entries or, with the linear memory and the
// host's bytes, the memory budget.
//
//	(local $total i64)
//	local.get 0; i64.extend_i32_u; global.get $table_entries; i64.add
//	local.tee $total; global.get $max_table_entries; refuse if over
//	local.get $total; i64.const 3; i64.shl
//	(memory.size; i64.extend_i32_u; i64.const 16; i64.shl; i64.add)
//	global.get $host_bytes; i64.add; global.get $memory_bytes; refuse if over
//	local.get 0
func (rw *rewriter) tableDeltaBody() []byte {
	out := []byte{1, 1, 0x7e} // one i64 local
	out = appendZeroDelta(out)
	out = append(out, 0x20, 0, 0xad, 0x23)
	out = appendU32(out, rw.tableEntries)
	out = append(out, 0x7c, 0x22, 1, 0x23)
	out = appendU32(out, rw.maxEntries)
	out = appendRefuseIfOver(out)
	out = append(out, 0x20, 1, 0x42, 3, 0x86)
	if rw.hasMemory {
		out = append(out, 0x3f, 0, 0xad, 0x42, 16, 0x86, 0x7c)
	}
	out = append(out, 0x23)
	out = appendU32(out, rw.hostBytes)
	out = append(out, 0x7c, 0x23)
	out = appendU32(out, rw.memoryBytes)
	out = appendRefuseIfOver(out)
	return append(out, 0x20, 0, 0x0b)
}

// tableGrownBody is called with table.grow's result (param 0), which it
// returns: it recounts the entries of every table, then polls.
//
//	i64.const 0; (table.size t; i64.extend_i32_u; i64.add)*
//	global.set $table_entries; call $slow; local.get 0
func (rw *rewriter) tableGrownBody() []byte {
	out := []byte{0, 0x42, 0}
	for t := uint32(0); t < rw.tables; t++ {
		out = append(out, 0xfc, 16)
		out = appendU32(out, t)
		out = append(out, 0xad, 0x7c)
	}
	out = append(out, 0x24)
	out = appendU32(out, rw.tableEntries)
	out = append(out, 0x10)
	out = appendU32(out, rw.slowFunc)
	return append(out, 0x20, 0, 0x0b)
}

// memoryDeltaBody is the function memory.grow passes its delta (param 0, in
// pages) through: it returns the delta, or 0xffffffff when the grown memory
// with the tables and the host's bytes would exceed the memory budget.
//
//	memory.size; i64.extend_i32_u; local.get 0; i64.extend_i32_u; i64.add
//	i64.const 16; i64.shl; (table and host bytes); i64.add
//	global.get $memory_bytes; refuse if over; local.get 0
func (rw *rewriter) memoryDeltaBody() []byte {
	out := []byte{0}
	if !rw.hasMemory { // no memory.grow can validate: any body will do
		return append(out, 0x20, 0, 0x0b)
	}
	out = appendZeroDelta(out)
	out = append(out, 0x3f, 0, 0xad, 0x20, 0, 0xad, 0x7c, 0x42, 16, 0x86)
	out = rw.appendBudgetBytes(out)
	out = append(out, 0x7c, 0x23)
	out = appendU32(out, rw.memoryBytes)
	out = appendRefuseIfOver(out)
	return append(out, 0x20, 0, 0x0b)
}

// names renumbers the function and global indices of the name section
// (function, local and global names), drops label names, and returns nil to
// drop a section it cannot parse.
func (rw *rewriter) names(content []byte, off int) (out []byte) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(malformed); !ok {
				panic(p)
			}
			out = nil
		}
	}()
	r := &reader{b: content, off: off}
	out = append(out, content[:off]...)
	for !r.eof() {
		id := r.byte()
		sub := &reader{b: r.bytes(r.u32())}
		var o []byte
		switch id {
		case 1: // function names
			n := sub.count()
			o = appendU32(o, n)
			for ; n > 0; n-- {
				o = appendU32(o, rw.funcIndex(sub.u32()))
				o = appendName(o, sub.name())
			}
		case 3:
			// Label names count the blocks of a function in order; the
			// checks add blocks among them, so the names would be wrong.
			continue
		case 7: // global names
			n := sub.count()
			o = appendU32(o, n)
			for ; n > 0; n-- {
				o = appendU32(o, rw.globalIndex(sub.u32()))
				o = appendName(o, sub.name())
			}
		case 2: // local names, per function (added locals come last)
			n := sub.count()
			o = appendU32(o, n)
			for ; n > 0; n-- {
				o = appendU32(o, rw.funcIndex(sub.u32()))
				start := sub.off
				for m := sub.count(); m > 0; m-- {
					sub.u32()
					sub.name()
				}
				o = append(o, sub.b[start:sub.off]...)
			}
		default:
			o = sub.b
			sub.off = len(sub.b)
		}
		if !sub.eof() {
			fail("name subsection %d has trailing bytes", id)
		}
		out = appendSection(out, id, o)
	}
	return out
}
