package bench

import (
	"time"

	"github.com/permhost/permhost/sandbox"
)

// LoadFailures are the hostile modules refused or failing at load, for
// BenchmarkLoadFailure and permhost-bench's table: the committed fixtures
// by name, the generated ones by their wasmgen name, and a module whose
// compile outlasts its budget.
var LoadFailures = []struct {
	Name   string
	Ends   string
	Limits sandbox.Limits
}{
	{"table_grow_start", "load: the start function's table.grow refused, it traps", sandbox.Limits{}},
	{"start_loop", "load: the start function stopped at the init budget (100 ms here)", sandbox.Limits{InitTimeout: 100 * time.Millisecond}},
	{"memoryless", "trap in permhost_abi, no linear memory", sandbox.Limits{}},
	{"huge_tables", "load: refused, MaxTables", sandbox.Limits{}},
	{"huge_table", "load: refused, MaxTableEntries", sandbox.Limits{}},
	{"million_passive_elements", "load: refused, MaxElementEntries", sandbox.Limits{}},
	{"million_globals", "load: refused, MaxGlobals", sandbox.Limits{}},
	{"million_types", "load: refused, MaxTypes", sandbox.Limits{}},
	{"huge_br_table", "load: refused, MaxBrTableTargets", sandbox.Limits{}},
	{"huge_module", "load: refused, MaxModuleBytes", sandbox.Limits{}},
	{"slow_compile", "load: a br_table of 50,000 targets (MaxBrTableTargets raised; ~0.7 s to compile) abandoned at a 100 ms CompileTimeout", sandbox.Limits{MaxBrTableTargets: 50_000, CompileTimeout: 100 * time.Millisecond}},
}
