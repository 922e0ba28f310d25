package sandbox

import "strings"

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
			for m := r.count(); m > 0; m-- {
				r.valtype()
			}
			for m := r.count(); m > 0; m-- {
				r.valtype()
			}
		}
		rw.types = n
	case secImport:
		for n := r.count(); n > 0; n-- {
			mod, name := r.name(), r.name()
			if mod == HostModule {
				fail("module already imports %s.%s", mod, name)
			}
			switch kind := r.byte(); kind {
			case 0x00:
				r.u32()
				rw.importedFuncs++
			case 0x01:
				r.valtype()
				r.limits()
			case 0x02:
				r.limits()
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
			r.u32()
		}
	case secGlobal:
		rw.definedGlobals = r.count()
		return // parsed by rewrite, once the index arithmetic is known
	case secExport:
		for n := r.count(); n > 0; n-- {
			if name := r.name(); name == StopGlobal || name == DeadlineGlobal {
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

func (rw *rewriter) funcIndex(idx uint32) uint32 {
	if idx >= rw.importedFuncs+rw.definedFuncs {
		fail("function index %d out of range", idx)
	}
	if idx >= rw.importedFuncs {
		return idx + 1
	}
	return idx
}

func (rw *rewriter) checkGlobal(idx uint32) {
	// Out-of-range indices would otherwise reach the globals we add.
	if idx >= rw.importedGlobals+rw.definedGlobals {
		fail("global index %d out of range", idx)
	}
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
		out = appendU32(out, r.count()+2)
		out = append(out, s.content[r.off:]...)
		out = append(out, 0x60, 0x00, 0x00) // voidType: [] -> []
		return append(out, 0x60, 0x01, 0x7e, 0x01, 0x7f)
	case secImport:
		out = appendU32(out, r.count()+1)
		out = append(out, s.content[r.off:]...)
		out = appendName(out, HostModule)
		out = appendName(out, PollFunction)
		out = append(out, 0x00)
		return appendU32(out, rw.pollType)
	case secFunction:
		out = appendU32(out, r.count()+1)
		out = append(out, s.content[r.off:]...)
		return appendU32(out, rw.voidType)
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
		out = appendU32(out, n+3)
		for ; n > 0; n-- {
			start := r.off
			r.valtype()
			r.byte()
			out = append(out, s.content[start:r.off]...)
			out = rw.expr(out, r)
		}
		out = append(out, 0x7f, 0x01, 0x41)
		out = appendS64(out, budgetRefill)
		out = append(out, 0x0b)
		out = append(out, 0x7f, 0x01, 0x41, 0x00, 0x0b)
		out = append(out, 0x7e, 0x01, 0x42, 0x00, 0x0b)
	case secExport:
		n := r.count()
		out = appendU32(out, n+2)
		for ; n > 0; n-- {
			out = appendName(out, r.name())
			kind := r.byte()
			idx := r.u32()
			switch kind {
			case 0x00:
				idx = rw.funcIndex(idx)
			case 0x03:
				rw.checkGlobal(idx)
			}
			out = append(out, kind)
			out = appendU32(out, idx)
		}
		out = appendName(out, StopGlobal)
		out = append(out, 0x03)
		out = appendU32(out, rw.stop)
		out = appendName(out, DeadlineGlobal)
		out = append(out, 0x03)
		out = appendU32(out, rw.deadline)
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

// expr copies a constant expression, renumbering function indices.
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
			rw.checkGlobal(idx)
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
	out := appendU32(nil, n+1)
	var body []byte
	var weights []int
	for ; n > 0; n-- {
		b := r.bytes(r.u32())
		body, weights = rw.body(body[:0], weights[:0], b)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	slow := rw.slowBody()
	out = appendU32(out, uint32(len(slow)))
	return append(out, slow...)
}

// body rewrites one function body: a check at entry and after every loop
// header, each charging the instructions of its region (the function, or one
// iteration of the loop, minus nested loops).
func (rw *rewriter) body(out []byte, weights []int, b []byte) ([]byte, []int) {
	r := &reader{b: b}
	for n := r.count(); n > 0; n-- {
		r.u32()
		r.valtype()
	}
	code := r.off

	// Pass 1: the cost of each region. Region 0 is the function; loops are
	// numbered in order of appearance.
	weights = append(weights, 0)
	var frames []int // the region each open frame belongs to
	cur := 0
	for {
		kind, idx := decodeInstr(r)
		weights[cur]++
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
			rw.checkGlobal(idx)
		}
	}

emit:
	// Pass 2: copy, renumber function indices, insert the checks.
	out = append(out, b[:code]...)
	out = rw.appendCheck(out, weights[0])
	region := 1
	r.off = code
	for !r.eof() {
		start := r.off
		kind, idx := decodeInstr(r)
		if kind == kindFunc {
			out = append(out, b[start])
			out = appendU32(out, rw.funcIndex(idx))
			continue
		}
		out = append(out, b[start:r.off]...)
		if kind == kindLoop {
			out = rw.appendCheck(out, weights[region])
			region++
		}
	}
	return out, weights
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
	out = append(out, 0x23)
	out = appendU32(out, rw.budget)
	out = append(out, 0x41, 0x00, 0x48, 0x04, 0x40, 0x10)
	out = appendU32(out, rw.slowFunc)
	return append(out, 0x0b)
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

// names renumbers the function indices of the name section (function, local
// and label names), or returns nil to drop a section it cannot parse.
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
		case 2, 3: // local and label names, per function
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
