package sandbox

// What the rewriter needs to know about one instruction.
type instrKind uint8

const (
	kindPlain   instrKind = iota
	kindOpen              // block, if, try, try_table: opens a frame
	kindLoop              // loop: opens a frame whose start is a back-edge target
	kindClose             // end, delegate: closes a frame
	kindFunc              // call, return_call, ref.func: a function index follows the 1-byte opcode
	kindGlobal            // global.get, global.set
	kindBrTable           // br_table: the number of its targets (the default excluded) is returned
)

// decodeInstr reads one instruction and reports its kind and, for kindFunc
// and kindGlobal, its index (for kindBrTable, its number of targets). It knows every encoding wazero accepts (MVP,
// sign extension, 0xFC saturating truncation, bulk memory and tables, 0xFD
// SIMD, 0xFE atomics, reference types, typed function references, tail
// calls, both exception-handling encodings); anything else is malformed.
func decodeInstr(r *reader) (instrKind, uint32) {
	op := r.byte()
	switch {
	case op == 0x02 || op == 0x04 || op == 0x06: // block, if, try
		r.blocktype()
		return kindOpen, 0
	case op == 0x03:
		r.blocktype()
		return kindLoop, 0
	case op == 0x0b || op == 0x18: // end; delegate also ends its try
		if op == 0x18 {
			r.u32()
		}
		return kindClose, 0
	case op == 0x1f: // try_table
		r.blocktype()
		for n := r.count(); n > 0; n-- {
			switch k := r.byte(); k {
			case 0x00, 0x01: // catch, catch_ref: tag, label
				r.u32()
				r.u32()
			case 0x02, 0x03: // catch_all, catch_all_ref: label
				r.u32()
			default:
				fail("bad catch kind 0x%x", k)
			}
		}
		return kindOpen, 0
	case op == 0x10 || op == 0x12 || op == 0xd2: // call, return_call, ref.func
		return kindFunc, r.u32()
	case op == 0x23 || op == 0x24:
		return kindGlobal, r.u32()
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0a || op == 0x0f ||
		op == 0x19 || op == 0x1a || op == 0x1b || op == 0xd1 || op == 0xd3 || op == 0xd4:
		// unreachable nop else throw_ref return catch_all drop select
		// ref.is_null ref.eq ref.as_non_null
	case op == 0x07 || op == 0x08 || op == 0x09 || op == 0x0c || op == 0x0d ||
		(op >= 0x14 && op <= 0x15) || (op >= 0x20 && op <= 0x22) || op == 0x25 || op == 0x26 ||
		op == 0xd5 || op == 0xd6:
		// catch throw rethrow br br_if call_ref return_call_ref local.*
		// table.get table.set br_on_null br_on_non_null: one index
		r.u32()
	case op == 0x0e: // br_table
		n := r.count()
		for i := n; i > 0; i-- {
			r.u32()
		}
		r.u32()
		return kindBrTable, n
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select t*
		for n := r.count(); n > 0; n-- {
			r.valtype()
		}
	case op >= 0x28 && op <= 0x3e: // loads and stores
		r.memarg()
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		r.u32()
	case op == 0x41:
		r.sleb(32)
	case op == 0x42:
		r.sleb(64)
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op >= 0x45 && op <= 0xc4: // numeric, sign extension
	case op == 0xd0: // ref.null ht
		r.sleb(33)
	case op == 0xfc:
		decodeFC(r)
	case op == 0xfd:
		decodeFD(r)
	case op == 0xfe:
		decodeFE(r)
	default:
		fail("unknown opcode 0x%x at offset %d", op, r.off-1)
	}
	return kindPlain, 0
}

func decodeFC(r *reader) {
	switch sub := r.u32(); {
	case sub <= 7: // saturating truncation
	case sub == 8: // memory.init data mem
		r.u32()
		r.u32()
	case sub == 9: // data.drop
		r.u32()
	case sub == 10: // memory.copy mem mem
		r.u32()
		r.u32()
	case sub == 11: // memory.fill mem
		r.u32()
	case sub == 12 || sub == 14: // table.init elem table; table.copy table table
		r.u32()
		r.u32()
	case sub == 13 || sub == 15 || sub == 16 || sub == 17: // elem.drop, table.grow/size/fill
		r.u32()
	default:
		fail("unknown 0xfc opcode %d", sub)
	}
}

func decodeFD(r *reader) {
	switch sub := r.u32(); {
	case sub <= 11 || sub == 92 || sub == 93: // loads, store, load_zero
		r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract/replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load/store lane
		r.memarg()
		r.byte()
	case sub <= 0x113: // everything else has no immediate (incl. relaxed SIMD)
	default:
		fail("unknown 0xfd opcode %d", sub)
	}
}

func decodeFE(r *reader) {
	switch sub := r.u32(); {
	case sub == 3: // atomic.fence
		r.byte()
	case sub <= 2 || (sub >= 0x10 && sub <= 0x4e):
		r.memarg()
	default:
		fail("unknown 0xfe opcode %d", sub)
	}
}
