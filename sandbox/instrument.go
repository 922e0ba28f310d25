package sandbox

import (
	"bytes"
	"fmt"
)

// Names of the globals Instrument adds and exports.
const (
	// StopGlobal (mutable i32) holds why the guest stopped: 0 running, 1
	// deadline, 2 context done.
	StopGlobal = "permhost_stop"
	// DeadlineGlobal (mutable i64) holds the deadline of the current call on
	// this package's monotonic clock, 0 for none. Watch sets it.
	DeadlineGlobal = "permhost_deadline"
)

// budgetRefill is how many instruction units a guest runs between polls. A
// unit is about one instruction, a few nanoseconds at most, so a guest polls
// every few tens of microseconds; a poll costs about a hundred nanoseconds.
const budgetRefill = 1 << 15

// maxCharge caps the cost one check charges, so the constant stays a short
// LEB128; a larger charge would poll at every check anyway.
const maxCharge = budgetRefill

// Section ids, in the order the binary format requires.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// sectionRank orders non-custom sections; 0 means unknown.
var sectionRank = [...]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secTag: 6, secGlobal: 7, secExport: 8, secStart: 9, secElement: 10,
	secDataCount: 11, secCode: 12, secData: 13,
}

// Custom sections that hold code offsets or function indices we cannot
// rewrite; they are dropped rather than left wrong.
var droppedCustomPrefixes = []string{".debug_", "reloc.", "linking", "metadata.code.", "sourceMappingURL", "external_debug_info", "dylink"}

var wasmHeader = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

type section struct {
	id      byte
	content []byte
}

// rewriter holds what Instrument learns about a module in its first pass.
type rewriter struct {
	types, importedFuncs, definedFuncs, importedGlobals, definedGlobals uint32
	// indices of what we add
	voidType, pollType, pollFunc, slowFunc, budget, stop, deadline uint32
}

// Instrument returns a copy of the WebAssembly binary wasm rewritten so that
// the guest can be stopped at its deadline whatever it does:
//
//   - every function entry and every loop header subtracts from a budget
//     global the number of instructions it guards (those it runs before the
//     next check), and when the budget falls below zero calls a new function
//     that calls HostModule.PollFunction (an import added after the existing
//     ones; defined functions shift up by one) with DeadlineGlobal, stores the
//     answer in StopGlobal, executes unreachable if it is not zero, and
//     refills the budget;
//   - StopGlobal and DeadlineGlobal are exported, for Watch.
//
// Custom sections are kept except those holding code offsets or relocations
// (DWARF, linking, source maps), which would be wrong afterwards; the name
// section is renumbered, or dropped if it cannot be parsed. The output is
// deterministic. Malformed or unsupported input (including a module that
// already imports from HostModule or exports the names above) gives an error
// wrapping ErrInstrument.
func Instrument(wasm []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, ok := p.(malformed)
			if !ok {
				panic(p)
			}
			out, err = nil, fmt.Errorf("%w: %s", ErrInstrument, m.msg)
		}
	}()
	return instrument(wasm), nil
}

func instrument(wasm []byte) []byte {
	if len(wasm) < 8 || !bytes.Equal(wasm[:8], wasmHeader) {
		fail("not a WebAssembly 1.0 binary module")
	}
	r := &reader{b: wasm, off: 8}
	var sections []section
	present := map[byte]bool{}
	lastRank := 0
	for !r.eof() {
		id := r.byte()
		content := r.bytes(r.u32())
		if id != secCustom {
			if int(id) >= len(sectionRank) || sectionRank[id] == 0 {
				fail("unknown section id %d", id)
			}
			if sectionRank[id] <= lastRank {
				fail("section %d out of order or repeated", id)
			}
			lastRank = sectionRank[id]
			present[id] = true
		}
		sections = append(sections, section{id, content})
	}

	var rw rewriter
	for _, s := range sections {
		rw.survey(s)
	}
	rw.voidType = rw.types
	rw.pollType = rw.types + 1
	rw.pollFunc = rw.importedFuncs
	rw.slowFunc = rw.importedFuncs + 1 + rw.definedFuncs
	rw.budget = rw.importedGlobals + rw.definedGlobals
	rw.stop = rw.budget + 1
	rw.deadline = rw.budget + 2

	// Sections we must extend are created empty when absent, before the
	// first section of a higher rank.
	for _, id := range []byte{secType, secImport, secFunction, secGlobal, secExport, secCode} {
		if present[id] {
			continue
		}
		pos := len(sections)
		for i, s := range sections {
			if s.id != secCustom && sectionRank[s.id] > sectionRank[id] {
				pos = i
				break
			}
		}
		sections = append(sections[:pos], append([]section{{id: id, content: []byte{0}}}, sections[pos:]...)...)
	}

	out := make([]byte, 0, len(wasm)+len(wasm)/4+256)
	out = append(out, wasmHeader...)
	for _, s := range sections {
		if content := rw.rewrite(s); content != nil {
			out = appendSection(out, s.id, content)
		}
	}
	return out
}
