// Package sandbox holds the limits a permhost plugin runs under and enforces
// them: load-time limits on the module's shape, a memory budget, a hard
// per-call deadline, bounded host calls, an import allow-list, and WASI with
// nothing granted.
//
// Only packages abi and plugins/pdk promise compatibility; this package's
// API may change with permhost.
//
// # API
//
//	type Limits struct{ MemoryBytes uint64; Timeout, CompileTimeout, InitTimeout time.Duration; MaxOutput, MaxInput, ... int }
//	func DefaultLimits() Limits
//	func (l Limits) WithDefaults() Limits  // zero fields take the defaults
//	func (l Limits) Validate() error       // wraps ErrBadLimits, names the field
//	func (l Limits) MemoryPages() uint32   // MemoryBytes in 64 KiB pages, rounded down
//
//	func Measure(wasm []byte, l Limits) (Shape, error) // the load-time verifier; *LimitError wraps ErrLimit
//	func (l Limits) Check(s Shape) error               // a Shape kept from an earlier Measure
//	func Instrument(wasm []byte) ([]byte, error)       // wraps ErrInstrument
//	func NewRuntime(ctx, l Limits, cache wazero.CompilationCache) (wazero.Runtime, error)
//	func CompileModule(ctx, r wazero.Runtime, bin []byte) (wazero.CompiledModule, error) // wazero panics become errors
//	func CheckImports(m wazero.CompiledModule) error   // wraps ErrForbiddenImport
//	func ModuleConfig() wazero.ModuleConfig
//	func WithStdio(ctx, stdout, stderr io.Writer) context.Context
//	func Watch(ctx, mod api.Module, timeout time.Duration) Watcher
//	func (w Watcher) Stop() error                      // nil, ErrTimeout or the ctx's error
//	func Charge(ctx, mod api.Module, units uint64) error // for host functions
//	func MemoryInUse(mod api.Module) uint64
//	func SetHostBytes(mod api.Module, n uint64)
//
// # Load time
//
// wazero's decoder, validator and compiler have no limits of their own: a
// module of a few hundred bytes can declare tables of billions of entries,
// a few megabytes can hold millions of passive elements, and wazero's
// compile time grows with the square of a br_table's targets. [Measure]
// reads the module once, before anything else does, and refuses one over
// any of the load-time limits of [Limits] with a [*LimitError] naming the
// limit and the value. Compiling is still the slowest phase (seconds for a
// Go plugin) and cannot be interrupted inside a function, so a host runs it
// where it can abandon it (Limits.CompileTimeout).
//
// # How the deadline is enforced
//
// A guest running in wazero's compiler cannot be preempted by Go, and wazero's
// own cancellation does not stop loop-free call trees; worse, a guest that
// never returns to Go can freeze the whole process during a garbage collection
// (see RATIONALE.md). So every module is rewritten at load time by
// [Instrument]: each function entry and each loop header subtracts a static
// cost estimate (the number of instructions it guards, a call to a host
// function a few dozen) from a budget global, and when the budget runs out
// the guest calls a host function that reads the clock and the caller's
// context; if the deadline has passed or the context is done it records the
// reason and the guest executes `unreachable`. The budget is refilled with
// about 32k instruction units, so a guest polls every few microseconds: the
// deadline is met within microseconds, without timers and without any
// goroutine touching the guest from outside. The start function is
// instrumented like any other; it runs inside instantiation, where only the
// context bounds it.
//
// Some instructions cost far more than one unit: memory.grow and table.grow
// (wazero may copy the whole memory) poll as soon as they return, and bulk
// memory and table instructions charge the budget by their length.
//
// Recursion is bounded separately, because wazero's call stack grows by
// copying, outside Limits.MemoryBytes, up to 400 MB: every function adds its
// frame's weight to a depth global on entry and subtracts it on every way out,
// and a call past Limits.MaxCallDepth fails with ErrCallDepth.
//
// # Memory
//
// Limits.MemoryBytes is one budget for the linear memory, the tables (8
// bytes an entry, as wazero stores them) and what the host keeps for the
// instance ([SetHostBytes]): memory.grow and table.grow are rewritten to
// fail with -1 (the wasm result of a refused grow) rather than take them
// past it, or the tables past Limits.MaxTableEntries, before wazero
// allocates anything.
//
// # Host calls
//
// Time spent in a host function is Go's, where no check runs. The WASI
// functions whose work grows with their arguments (fd_write, fd_read,
// random_get, poll_oneoff) are replaced by bounded ones that check the
// deadline before and during their work and charge it to the budget; a
// host's own functions do the same with [Charge].
//
// A host therefore:
//
//	if _, err := sandbox.Measure(original, limits); err != nil { ... }
//	r, _ := sandbox.NewRuntime(ctx, limits, cache)        // WASI, the poll function, the limits
//	bin, _ := sandbox.Instrument(original)                // once per module; cache the result
//	cm, _ := sandbox.CompileModule(ctx, r, bin)           // where it can be abandoned
//	if err := sandbox.CheckImports(cm); err != nil { ... }
//	ctx = sandbox.WithStdio(ctx, logs, logs)
//	mod, _ := r.InstantiateModule(ctxWithDeadline, cm, sandbox.ModuleConfig())
//	w := sandbox.Watch(ctx, mod, limits.Timeout)          // allocation-free
//	res, callErr := mod.ExportedFunction("permhost_decide").Call(ctx)  // the SAME ctx
//	if err := w.Stop(); err != nil { /* ErrTimeout or ctx.Err(): discard mod */ }
package sandbox
