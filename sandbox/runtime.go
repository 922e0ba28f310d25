package sandbox

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// What an instrumented module imports: the host function it calls to check
// its deadline, the one it calls when its calls nest too deeply, and the
// bounds. NewRuntime provides them; Instrument refuses modules that import
// from hostModule or limitsModule themselves.
const (
	hostModule        = "permhost:sandbox"
	pollFunction      = "poll"
	callDepthFunction = "call_depth_exceeded"
	// limitsModule is a separate (WebAssembly) module because wazero's host
	// modules export functions only. Its globals hold the limits, so that
	// an instrumented module, and the compile cache keyed by it, do not
	// depend on them.
	limitsModule          = "permhost:sandbox/limits"
	maxCallDepthGlobal    = "max_call_depth"    // i32
	maxTableEntriesGlobal = "max_table_entries" // i64
	memoryBytesGlobal     = "memory_bytes"      // i64
)

// allowedImportModules are the only modules a plugin may import from
// (besides hostModule, whose functions Instrument adds).
var allowedImportModules = []string{
	"extism:host/env",
	"extism:host/user",
	"permhost:host/env",
	wasi_snapshot_preview1.ModuleName,
}

// Stop reasons a poll records in StopGlobal.
const (
	reasonNone     = 0
	reasonTimeout  = 1
	reasonCanceled = 2
)

// epoch anchors the monotonic clock the deadline global is measured on.
var epoch = time.Now()

// monotonicNow is nanoseconds since epoch; never 0 after init, which leaves 0
// free to mean "no deadline".
func monotonicNow() int64 { return int64(time.Since(epoch)) + 1 }

// poll is HostModule.PollFunction: (deadline i64) -> (reason i32). The call is
// also what makes the guest reach a Go safe point regularly.
func poll(ctx context.Context, stack []uint64) {
	stack[0] = uint64(pollReason(ctx, int64(stack[0])))
}

func pollReason(ctx context.Context, deadline int64) int {
	if deadline != 0 && monotonicNow() >= deadline {
		return reasonTimeout
	}
	if ctx.Err() != nil {
		return reasonCanceled
	}
	// A context's own deadline is checked against the clock rather than
	// waiting for its timer, which can fire milliseconds late.
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return reasonCanceled
	}
	return reasonNone
}

// NewRuntime returns a runtime for plugins under l: wazero's compiler where the
// platform supports it, memory capped at l.MemoryPages(), compiled code kept
// in cache (may be nil), WASI, HostModule and LimitsModule (with
// l.MaxCallDepth) instantiated.
//
// It deliberately does not use WithCloseOnContextDone: instrumentation checks
// the deadline and the context at every function entry and loop header, which
// wazero's check cannot (it misses loop-free call trees) and at a fraction of
// its cost on Go plugins. The caller closes the runtime.
func NewRuntime(ctx context.Context, l Limits, cache wazero.CompilationCache) (wazero.Runtime, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l = l.WithDefaults()
	cfg := wazero.NewRuntimeConfig().
		WithCoreFeatures(api.CoreFeaturesV2).
		WithMemoryLimitPages(l.MemoryPages()).
		WithCloseOnContextDone(false)
	if cache != nil {
		cfg = cfg.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	if err := instantiateHostModules(ctx, r, l); err != nil {
		r.Close(ctx)
		return nil, err
	}
	return r, nil
}

// instantiateHostModules adds WASI (with the functions whose work grows
// with their arguments replaced by bounded ones, see wasi.go), hostModule
// and limitsModule (with l's bounds) to r.
func instantiateHostModules(ctx context.Context, r wazero.Runtime, l Limits) error {
	l = l.WithDefaults()
	w := r.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(w)
	exportBoundedWASI(w) // later exports replace earlier ones
	if _, err := w.Instantiate(ctx); err != nil {
		return fmt.Errorf("sandbox: instantiating WASI: %w", err)
	}
	// Made once: the guest calls it only to fail, and then from a stack
	// thousands of frames deep, where allocating is no help.
	tooDeep := fmt.Errorf("%w: stack overflow, calls nested deeper than Limits.MaxCallDepth (%d)", ErrCallDepth, l.MaxCallDepth)
	b := r.NewHostModuleBuilder(hostModule)
	b.NewFunctionBuilder().
		WithGoFunction(api.GoFunc(poll), []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI32}).
		WithName(pollFunction).
		Export(pollFunction)
	b.NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) { panic(tooDeep) }), nil, nil).
		WithName(callDepthFunction).
		Export(callDepthFunction)
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("sandbox: instantiating %s: %w", hostModule, err)
	}
	_, err := r.InstantiateWithConfig(ctx, limitsModuleBinary(l), wazero.NewModuleConfig().WithName(limitsModule))
	if err != nil {
		return fmt.Errorf("sandbox: instantiating %s: %w", limitsModule, err)
	}
	return nil
}

// limitsModuleBinary is a module exporting only immutable globals: the
// i32 maxCallDepthGlobal and the i64 maxTableEntriesGlobal and
// memoryBytesGlobal, from l.
func limitsModuleBinary(l Limits) []byte {
	global := []byte{3, 0x7f, 0x00, 0x41}
	global = appendS64(global, int64(l.MaxCallDepth))
	global = append(global, 0x0b, 0x7e, 0x00, 0x42)
	global = appendS64(global, int64(l.MaxTableEntries))
	global = append(global, 0x0b, 0x7e, 0x00, 0x42)
	global = appendS64(global, int64(l.MemoryBytes))
	global = append(global, 0x0b)
	export := []byte{3}
	for i, name := range []string{maxCallDepthGlobal, maxTableEntriesGlobal, memoryBytesGlobal} {
		export = appendName(export, name)
		export = append(export, 0x03, byte(i))
	}
	b := appendSection(append([]byte(nil), wasmHeader...), secGlobal, global)
	return appendSection(b, secExport, export)
}

// ModuleConfig is the configuration of every plugin instance: no arguments,
// no environment, no file system, an empty stdin, the real clocks and
// crypto/rand (Go's runtime needs them). What the guest writes to stdout
// and stderr goes to the writers of the call's context (see WithStdio), or
// nowhere. Sleeping is not real: wazero's default nanosleep returns at
// once, so a guest that sleeps spins through its checks instead of blocking
// the host inside a WASI call where no check can run. The module name is
// empty so that any number of instances coexist, and no exported start
// function (_start) runs: the host calls _initialize itself, under a
// deadline. The module's start section does run, inside instantiation: it
// is instrumented like any function, so pass InstantiateModule a context
// with a deadline.
func ModuleConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithStartFunctions()
}

// CheckImports returns an error wrapping ErrForbiddenImport, naming the first
// import of m that is neither from the allowed modules (the Extism host
// modules and WASI) nor one of the functions Instrument adds.
func CheckImports(m wazero.CompiledModule) error {
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod == hostModule {
			params, results := []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI32}
			switch name {
			case pollFunction:
			case callDepthFunction:
				params, results = nil, nil
			default:
				return fmt.Errorf("%w: %s.%s", ErrForbiddenImport, mod, name)
			}
			if !sameTypes(f.ParamTypes(), params) || !sameTypes(f.ResultTypes(), results) {
				return fmt.Errorf("%w: %s.%s has the wrong signature", ErrForbiddenImport, mod, name)
			}
			continue
		}
		if !allowedModule(mod) {
			return fmt.Errorf("%w: %s.%s", ErrForbiddenImport, mod, name)
		}
	}
	for _, mem := range m.ImportedMemories() {
		if mod, name, _ := mem.Import(); !allowedModule(mod) {
			return fmt.Errorf("%w: memory %s.%s", ErrForbiddenImport, mod, name)
		}
	}
	return nil
}

func allowedModule(mod string) bool {
	for _, a := range allowedImportModules {
		if mod == a {
			return true
		}
	}
	return false
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// CompileModule is r.CompileModule that turns a panic inside wazero into an
// error: wazero v1.12's validator panics on some malformed modules (found by
// FuzzInstrument; see testdata/fuzz), and a plugin file is untrusted input.
func CompileModule(ctx context.Context, r wazero.Runtime, bin []byte) (cm wazero.CompiledModule, err error) {
	defer func() {
		if p := recover(); p != nil {
			cm, err = nil, fmt.Errorf("sandbox: wazero panicked compiling the module: %v", p)
		}
	}()
	return r.CompileModule(ctx, bin)
}
