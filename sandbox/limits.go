package sandbox

import (
	"errors"
	"fmt"
	"time"
)

// Errors of this package. Callers test them with errors.Is.
var (
	// ErrBadLimits: a Limits field is out of range.
	ErrBadLimits = errors.New("sandbox: bad limits")
	// ErrForbiddenImport: a module imports something outside the allow-list.
	ErrForbiddenImport = errors.New("sandbox: forbidden import")
	// ErrTimeout: a call ran past its deadline (and was stopped if it was
	// still running).
	ErrTimeout = errors.New("sandbox: deadline exceeded")
	// ErrInstrument: a module could not be instrumented (malformed, uses an
	// unsupported encoding, or is already instrumented), or a module given to
	// Watch was not instrumented.
	ErrInstrument = errors.New("sandbox: cannot instrument module")
	// ErrCallDepth: a guest's calls nested deeper than Limits.MaxCallDepth.
	// The call fails with an error wrapping it (a trap: the instance must be
	// discarded).
	ErrCallDepth = errors.New("sandbox: call depth exceeded")
	// ErrLimit: a module is over one of the load-time limits; Verify's
	// *LimitError says which.
	ErrLimit = errors.New("sandbox: module over a limit")
)

// WasmPageSize is the size of a WebAssembly memory page.
const WasmPageSize = 64 << 10

// Defaults of Limits.
const (
	DefaultMemoryBytes = 32 << 20
	DefaultTimeout     = 100 * time.Millisecond
	DefaultMaxOutput   = 1 << 20
	DefaultMaxInput    = 4 << 20
	DefaultMaxLogBytes = 64 << 10
	// DefaultMaxCallDepth is deep enough for any plugin that is not
	// recursing without end (Go's encoding/json refuses input nested
	// deeper than 10,000 levels long before its decoder gets there) and keeps
	// wazero's call stack to a few megabytes.
	DefaultMaxCallDepth = 10_000
	// DefaultCompileTimeout leaves a cold compile of a standard Go plugin
	// (~3 s of CPU, several times that under -race or on a loaded machine)
	// plenty of room.
	DefaultCompileTimeout = 2 * time.Minute
	// DefaultMinInitTimeout is the least InitTimeout defaults to.
	DefaultMinInitTimeout = 5 * time.Second
)

// Defaults of the load-time limits, measured on the example plugins (the
// largest, team-rules, a standard Go plugin, is 3.9 MB: 2,403 functions,
// 6,499 table entries, 41,743 data segments of 1 MB, blocks nested 549
// deep, a br_table of 964 targets; see RATIONALE.md) and set well above
// them.
const (
	DefaultMaxModuleBytes     = 32 << 20
	DefaultMaxFunctions       = 100_000
	DefaultMaxTypes           = 10_000
	DefaultMaxGlobals         = 10_000
	DefaultMaxImports         = 1_000
	DefaultMaxExports         = 10_000
	DefaultMaxTables          = 16
	DefaultMaxTableEntries    = 250_000
	DefaultMaxElementSegments = 1_000
	DefaultMaxElementEntries  = 250_000
	DefaultMaxDataSegments    = 500_000
	DefaultMaxDataBytes       = 16 << 20
	DefaultMaxLocals          = 10_000
	DefaultMaxFunctionBytes   = 1 << 20
	DefaultMaxBrTableTargets  = 10_000
	DefaultMaxBlockDepth      = 10_000
	DefaultMaxCustomBytes     = 16 << 20
)

// Upper bounds accepted by Validate. They catch typos (a timeout in seconds
// given as minutes), not legitimate configurations.
const (
	maxMemoryBytes = 4 << 30 // wasm32 address space
	maxTimeout     = 10 * time.Minute
	maxSize        = 1 << 30
	maxCallDepth   = 1_000_000 // wazero's own stack ceiling (400 MB) is near
	maxCount       = 1 << 30
)

// Limits bound one plugin. A zero field means "the default"; see WithDefaults.
type Limits struct {
	// MemoryBytes caps a plugin's memory: its linear memory, its tables
	// (8 bytes an entry) and whatever the host keeps for it (the Extism
	// kernel's blocks) together; rounded down to whole 64 KiB pages for the
	// linear memory. Default 32 MiB.
	MemoryBytes uint64
	// Timeout is the deadline of one call. Default 100 ms.
	Timeout time.Duration
	// MaxOutput bounds the bytes a plugin may return. Default 1 MiB.
	MaxOutput int
	// MaxInput bounds the request JSON given to a plugin. Default 4 MiB.
	MaxInput int
	// MaxLogBytes bounds what is kept of stdout, stderr and log calls per
	// call, together; each entry counts 32 bytes besides its message, so
	// that empty ones are bounded too. Default 64 KiB.
	MaxLogBytes int
	// MaxCallDepth bounds how deeply a guest's calls may nest. A frame
	// counts as 1 + (parameters+locals)/32, so that functions with
	// thousands of locals cannot turn the bound into hundreds of megabytes
	// of wazero's call stack, which lies outside MemoryBytes and grows by
	// copying; a leaf function (one that calls none of the module's
	// functions) does not count, as it cannot nest further. Deeper calls
	// fail with ErrCallDepth. Default 10,000.
	MaxCallDepth int

	// CompileTimeout bounds compiling the module. wazero's compiler cannot
	// be interrupted inside a function, so a host runs it where it can be
	// abandoned. Default 2 minutes.
	CompileTimeout time.Duration
	// InitTimeout bounds making an instance ready: instantiation (with the
	// module's start function), _initialize, and the load-time calls
	// permhost_abi and permhost_describe. Default max(10×Timeout, 5 s).
	InitTimeout time.Duration

	// The load-time limits: Verify refuses a module over any of them
	// before it is compiled. They bound what wazero allocates and how long
	// it takes to decode, compile and instantiate a module, which no
	// deadline check inside the guest can (a single br_table of 400,000
	// targets took 21 s to compile, a module of a million passive elements
	// gigabytes to instantiate).

	// MaxModuleBytes bounds the module's size. Default 32 MiB.
	MaxModuleBytes int
	// MaxFunctions bounds the functions a module defines. Default 100,000.
	MaxFunctions int
	// MaxTypes bounds the function types. Default 10,000.
	MaxTypes int
	// MaxGlobals bounds the globals, imported ones included. Default 10,000.
	MaxGlobals int
	// MaxImports bounds the imports. Default 1,000.
	MaxImports int
	// MaxExports bounds the exports. Default 10,000.
	MaxExports int
	// MaxTables bounds the tables. Default 16.
	MaxTables int
	// MaxTableEntries bounds the entries of all of a module's tables
	// together: their declared minimums at load, each declared maximum, and
	// at run time table.grow, which returns -1 past it (as past a table's own
	// maximum). Default 250,000.
	MaxTableEntries int
	// MaxElementSegments bounds the element segments. Default 1,000.
	MaxElementSegments int
	// MaxElementEntries bounds the entries of all element segments
	// together. Default 250,000.
	MaxElementEntries int
	// MaxDataSegments bounds the data segments. Default 500,000.
	MaxDataSegments int
	// MaxDataBytes bounds the bytes of all data segments together.
	// Default 16 MiB.
	MaxDataBytes int
	// MaxLocals bounds the parameters and locals of one function.
	// Default 10,000.
	MaxLocals int
	// MaxFunctionBytes bounds the size of one function body. Default 1 MiB.
	MaxFunctionBytes int
	// MaxBrTableTargets bounds the targets of one br_table (wazero's
	// compile time grows with their square). Default 10,000.
	MaxBrTableTargets int
	// MaxBlockDepth bounds how deeply blocks, loops, ifs and trys nest in
	// one function. Default 10,000.
	MaxBlockDepth int
	// MaxCustomBytes bounds the bytes of all custom sections (names,
	// producers, debug information) together. Default 16 MiB.
	MaxCustomBytes int
}

// intLimit is one of the int fields of Limits, for the code that treats
// them alike.
type intLimit struct {
	name string
	v    *int
	def  int
	max  int
}

// intLimits lists l's int fields with their defaults and the largest value
// Validate accepts.
func (l *Limits) intLimits() []intLimit {
	return []intLimit{
		{"MaxOutput", &l.MaxOutput, DefaultMaxOutput, maxSize},
		{"MaxInput", &l.MaxInput, DefaultMaxInput, maxSize},
		{"MaxLogBytes", &l.MaxLogBytes, DefaultMaxLogBytes, maxSize},
		{"MaxCallDepth", &l.MaxCallDepth, DefaultMaxCallDepth, maxCallDepth},
		{"MaxModuleBytes", &l.MaxModuleBytes, DefaultMaxModuleBytes, maxSize},
		{"MaxFunctions", &l.MaxFunctions, DefaultMaxFunctions, maxCount},
		{"MaxTypes", &l.MaxTypes, DefaultMaxTypes, maxCount},
		{"MaxGlobals", &l.MaxGlobals, DefaultMaxGlobals, maxCount},
		{"MaxImports", &l.MaxImports, DefaultMaxImports, maxCount},
		{"MaxExports", &l.MaxExports, DefaultMaxExports, maxCount},
		{"MaxTables", &l.MaxTables, DefaultMaxTables, maxCount},
		// wazero's tables and table.grow stop short of 2^32 entries.
		{"MaxTableEntries", &l.MaxTableEntries, DefaultMaxTableEntries, maxCount},
		{"MaxElementSegments", &l.MaxElementSegments, DefaultMaxElementSegments, maxCount},
		{"MaxElementEntries", &l.MaxElementEntries, DefaultMaxElementEntries, maxCount},
		{"MaxDataSegments", &l.MaxDataSegments, DefaultMaxDataSegments, maxCount},
		{"MaxDataBytes", &l.MaxDataBytes, DefaultMaxDataBytes, maxSize},
		{"MaxLocals", &l.MaxLocals, DefaultMaxLocals, maxCount},
		{"MaxFunctionBytes", &l.MaxFunctionBytes, DefaultMaxFunctionBytes, maxSize},
		{"MaxBrTableTargets", &l.MaxBrTableTargets, DefaultMaxBrTableTargets, maxCount},
		{"MaxBlockDepth", &l.MaxBlockDepth, DefaultMaxBlockDepth, maxCount},
		{"MaxCustomBytes", &l.MaxCustomBytes, DefaultMaxCustomBytes, maxSize},
	}
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{}.WithDefaults()
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
	if l.CompileTimeout == 0 {
		l.CompileTimeout = DefaultCompileTimeout
	}
	if l.InitTimeout == 0 {
		l.InitTimeout = max(10*l.Timeout, DefaultMinInitTimeout)
	}
	for _, f := range l.intLimits() {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	return l
}

// Validate reports the first out-of-range field, wrapping ErrBadLimits. Zero
// fields are valid: they mean the default.
func (l Limits) Validate() error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", ErrBadLimits, field, fmt.Sprintf(format, args...))
	}
	switch {
	case l.MemoryBytes != 0 && l.MemoryBytes < WasmPageSize:
		return bad("MemoryBytes", "is %d, less than one 64 KiB page", l.MemoryBytes)
	case l.MemoryBytes > maxMemoryBytes:
		return bad("MemoryBytes", "is %d, more than the 4 GiB a 32-bit module can address", l.MemoryBytes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Timeout", l.Timeout}, {"CompileTimeout", l.CompileTimeout}, {"InitTimeout", l.InitTimeout}} {
		if d.v < 0 {
			return bad(d.name, "is negative (%v)", d.v)
		}
		if d.v > maxTimeout {
			return bad(d.name, "is %v, more than %v", d.v, maxTimeout)
		}
	}
	for _, f := range l.intLimits() {
		if *f.v < 0 {
			return bad(f.name, "is negative (%d)", *f.v)
		}
		if *f.v > f.max {
			return bad(f.name, "is %d, more than %d", *f.v, f.max)
		}
	}
	return nil
}

// MemoryPages is MemoryBytes (or its default) in 64 KiB pages, rounded down.
func (l Limits) MemoryPages() uint32 {
	b := l.MemoryBytes
	if b == 0 {
		b = DefaultMemoryBytes
	}
	return uint32(b / WasmPageSize)
}
