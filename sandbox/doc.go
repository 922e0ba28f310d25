// Package sandbox holds the limits a permhost plugin runs under and enforces
// them: a memory cap, a hard per-call deadline, bounded output and logs, an
// import allow-list, and WASI with nothing granted.
//
// # API
//
//	type Limits struct{ MemoryBytes uint64; Timeout time.Duration; MaxOutput, MaxInput, MaxLogBytes, MaxCallDepth int }
//	func DefaultLimits() Limits
//	func (l Limits) WithDefaults() Limits  // zero fields take the defaults
//	func (l Limits) Validate() error       // wraps ErrBadLimits, names the field
//	func (l Limits) MemoryPages() uint32   // MemoryBytes in 64 KiB pages, rounded down
//
//	func NewRuntime(ctx context.Context, l Limits, cache wazero.CompilationCache) (wazero.Runtime, error) // WASI, HostModule, LimitsModule
//	func ModuleConfig(stdout, stderr io.Writer) wazero.ModuleConfig
//	func CompileModule(ctx, r wazero.Runtime, bin []byte) (wazero.CompiledModule, error) // r.CompileModule, wazero panics become errors
//	func CheckImports(m wazero.CompiledModule) error     // wraps ErrForbiddenImport
//	func Instrument(wasm []byte) ([]byte, error)         // wraps ErrInstrument
//	func Watch(ctx context.Context, mod api.Module, timeout time.Duration) Watcher
//	func (w Watcher) Stop() error                         // nil, ErrTimeout or the ctx's error
//	type LimitedWriter; func NewLimitedWriter(limit int) *LimitedWriter
//
// # How the deadline is enforced
//
// A guest running in wazero's compiler cannot be preempted by Go, and wazero's
// own cancellation does not stop loop-free call trees; worse, a guest that
// never returns to Go can freeze the whole process during a garbage collection
// (see RATIONALE.md). So every module is rewritten at load time by
// [Instrument]: each function entry and each loop header subtracts a static
// cost estimate (the number of instructions it guards) from a budget global,
// and when the budget runs out the guest calls the host function
// HostModule.PollFunction with the deadline global as argument. That call is a
// Go safe point and reads the clock and the caller's context; if the deadline
// has passed or the context is done it records the reason in StopGlobal and
// the guest executes `unreachable`. The budget is refilled with about 32k
// instruction units, so a guest polls every few microseconds: the deadline is
// met within microseconds, without timers and without any goroutine touching
// the guest from outside.
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
// A host therefore:
//
//	r, _ := sandbox.NewRuntime(ctx, limits, cache)        // registers WASI and the poll function
//	bin, _ := sandbox.Instrument(original)                // once per module; cache the result
//	cm, _ := r.CompileModule(ctx, bin)
//	if err := sandbox.CheckImports(cm); err != nil { ... }
//	mod, _ := r.InstantiateModule(ctx, cm, sandbox.ModuleConfig(logs, logs))
//	w := sandbox.Watch(ctx, mod, limits.Timeout)          // allocation-free
//	res, callErr := mod.ExportedFunction("permhost_decide").Call(ctx)  // the SAME ctx
//	if err := w.Stop(); err != nil { /* ErrTimeout or ctx.Err(): discard mod */ }
//
// Calls made without Watch (instantiation, _initialize) are bounded only by
// their context's deadline and cancellation, which the poll function also
// checks: pass a context with a deadline.
package sandbox
