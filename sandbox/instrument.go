package sandbox

import (
	"bytes"
	"fmt"
)

// Names of the globals Instrument adds and exports.
const (
	// stopGlobal (mutable i32) holds why the guest stopped: 0 running, 1
	// deadline, 2 context done.
	stopGlobal = "permhost_stop"
	// deadlineGlobal (mutable i64) holds the deadline of the current call
	// on this package's monotonic clock, 0 for none. Watch sets it.
	deadlineGlobal = "permhost_deadline"
	// depthGlobal (mutable i32) is the depth of the guest's calls, in the
	// units of Limits.MaxCallDepth: 0 whenever no call is running. Watch
	// resets it.
	depthGlobal = "permhost_depth"
	// budgetGlobal (mutable i32) is what the guest may run before its next
	// poll, in instruction units; Charge subtracts host work from it.
	budgetGlobal = "permhost_budget"
	// tableEntriesGlobal (mutable i64) is the number of entries of all the
	// instance's tables.
	tableEntriesGlobal = "permhost_table_entries"
	// hostBytesGlobal (mutable i64) is what the host keeps for the
	// instance in its memory budget; SetHostBytes sets it.
	hostBytesGlobal = "permhost_host_bytes"
)

// InstrumentVersion names the rewrite Instrument makes. Its output is a
// function of its input and this version only, so a cache may keep the
// output under (input, InstrumentVersion). A test pins the output of the
// fixtures: any change to the rewrite must change the version.
const InstrumentVersion = "2"

// budgetRefill is how many instruction units a guest runs between polls. A
// unit is about one instruction, a few nanoseconds at most, so a guest polls
// every few tens of microseconds; a poll costs about a hundred nanoseconds.
const budgetRefill = 1 << 15

// maxCharge caps the cost one check charges, so the constant stays a short
// LEB128; a larger charge would poll at every check anyway.
const maxCharge = budgetRefill

// hostCallCost is what a call to an imported (host) function charges: a
// round trip into Go costs tens of nanoseconds, a few dozen instructions'
// worth, so a loop of cheap host calls polls every thousand calls or so.
// Host functions whose work grows with their arguments charge it
// themselves (see Charge).
const hostCallCost = 64

// Bulk memory and table instructions take time in proportion to their
// length, which is on top of the stack when they run: they charge the budget
// one unit per 1<<memoryBulkShift bytes (about what a nanosecond copies) or
// per 1<<tableBulkShift table elements.
const (
	memoryBulkShift = 4
	tableBulkShift  = 1
)

// slotsPerFrame is how many parameters and locals make a frame count as one
// more toward Limits.MaxCallDepth: wazero keeps them on its call stack.
const slotsPerFrame = 32

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
	types, importedFuncs, definedFuncs uint32
	importedGlobals, definedGlobals    uint32

	typeParams  []uint32 // per type: how many parameters
	typeResults [][]byte // per type: the encoded result types
	resultCount []uint32 // per type: how many results
	funcTypes   []uint32 // per defined function: its type
	// tables counts the tables, imported ones included; tableMin is the
	// sum of their declared minimums (the entries they start with).
	tables   uint32
	tableMin uint64
	// hasMemory: the module defines or imports a memory.
	hasMemory bool

	// indices of what we add
	voidType, pollType, deltaType uint32
	blockTypes                    map[string]uint32 // results -> type [] -> results, for multi-value functions
	newBlockTypes                 [][]byte          // their result encodings, in index order
	newBlockCounts                []uint32
	pollFunc                      uint32
	depthFunc                     uint32
	slowFunc                      uint32 // polls and refills the budget
	tableDeltaFunc                uint32 // before table.grow: refuses growth past the limits
	tableGrownFunc                uint32 // after table.grow: recounts the entries and polls
	memoryDeltaFunc               uint32 // before memory.grow: refuses growth past the budget
	maxDepth                      uint32 // the imported bounds
	maxEntries, memoryBytes       uint32
	budget, stop                  uint32
	deadline, depth               uint32
	tableEntries, hostBytes       uint32
}

// Functions and globals Instrument adds.
const (
	addedImportedFuncs   = 2 // poll, call_depth_exceeded
	addedImportedGlobals = 3 // max_call_depth, max_table_entries, memory_bytes
	addedTypes           = 3 // void, poll, delta
	addedGlobals         = 6 // budget, stop, deadline, depth, table entries, host bytes
	addedFuncs           = 4 // slow, table delta, table grown, memory delta
)

// Instrument returns a copy of the WebAssembly binary wasm rewritten so that
// the guest can be stopped at its deadline whatever it does:
//
//   - every function entry and every loop header subtracts from a budget
//     global the number of instructions it guards (those it runs before the
//     next check), and when the budget falls below zero calls a new function
//     that calls HostModule.PollFunction with DeadlineGlobal, stores the
//     answer in StopGlobal, executes unreachable if it is not zero, and
//     refills the budget;
//   - memory.grow and table.grow poll right after they return, and bulk
//     memory and table instructions charge the budget by their length and
//     poll if it ran out: their cost is not one instruction's; a call to an
//     imported (host) function charges hostCallCost;
//   - memory.grow and table.grow first pass their delta through a function
//     that replaces it by 0xffffffff, which makes the grow fail with -1
//     (as the wasm semantics of a refused grow) without wazero allocating
//     anything, when the instance's linear memory, its table entries at 8
//     bytes each and the bytes its host keeps for it (SetHostBytes) would
//     exceed LimitsModule.memory_bytes, or its table entries
//     LimitsModule.max_table_entries; table entries are recounted after
//     every table.grow;
//   - every function that calls the module's functions (leaves cannot nest
//     further) adds its frame's weight (see Limits.MaxCallDepth) to
//     DepthGlobal on entry and calls HostModule.CallDepthFunction if the
//     depth exceeds LimitsModule.MaxCallDepthGlobal; it subtracts the weight
//     again on every way out: its body is wrapped in a block, so that the
//     end of the body and every branch to the function's label land on the
//     subtraction, and return and tail calls subtract first. Functions that
//     catch exceptions keep their depth in a local and restore it where a
//     handler or a branch from one can land, since an exception skips the
//     frames it unwinds;
//   - the stop reason, deadline, depth, budget, table entries and host
//     bytes are exported globals, for Watch, Charge and MemoryInUse.
//
// The five imports are added after the existing ones, so defined functions
// shift up by two and defined globals by three.
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
	rw.deltaType = rw.types + 2
	rw.planBlockTypes()
	rw.pollFunc = rw.importedFuncs
	rw.depthFunc = rw.importedFuncs + 1
	rw.slowFunc = rw.importedFuncs + addedImportedFuncs + rw.definedFuncs
	rw.tableDeltaFunc = rw.slowFunc + 1
	rw.tableGrownFunc = rw.slowFunc + 2
	rw.memoryDeltaFunc = rw.slowFunc + 3
	rw.maxDepth = rw.importedGlobals
	rw.maxEntries = rw.importedGlobals + 1
	rw.memoryBytes = rw.importedGlobals + 2
	rw.budget = rw.importedGlobals + addedImportedGlobals + rw.definedGlobals
	rw.stop = rw.budget + 1
	rw.deadline = rw.budget + 2
	rw.depth = rw.budget + 3
	rw.tableEntries = rw.budget + 4
	rw.hostBytes = rw.budget + 5

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
