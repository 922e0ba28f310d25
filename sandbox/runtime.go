package sandbox

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// What an instrumented module imports: the host function it calls to check
// its deadline, the one it calls when its calls nest too deeply, and the
// depth bound. NewRuntime provides them; Instrument refuses modules that
// import from HostModule or LimitsModule themselves.
const (
	HostModule        = "permhost:sandbox"
	PollFunction      = "poll"
	CallDepthFunction = "call_depth_exceeded"
	// LimitsModule is a separate (WebAssembly) module because wazero's host
	// modules export functions only.
	LimitsModule       = "permhost:sandbox/limits"
	MaxCallDepthGlobal = "max_call_depth"
)

// AllowedImportModules are the only modules a plugin may import from (besides
// HostModule.PollFunction, which Instrument adds).
var AllowedImportModules = []string{
	"extism:host/env",
	"extism:host/user",
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
	if err := instantiateHostModules(ctx, r, l.MaxCallDepth); err != nil {
		r.Close(ctx)
		return nil, err
	}
	return r, nil
}

// instantiateHostModules adds WASI, HostModule and LimitsModule (with the
// bound maxCallDepth) to r.
func instantiateHostModules(ctx context.Context, r wazero.Runtime, maxCallDepth int) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return fmt.Errorf("sandbox: instantiating WASI: %w", err)
	}
	// Made once: the guest calls it only to fail, and then from a stack
	// thousands of frames deep, where allocating is no help.
	tooDeep := fmt.Errorf("%w: stack overflow, calls nested deeper than Limits.MaxCallDepth (%d)", ErrCallDepth, maxCallDepth)
	b := r.NewHostModuleBuilder(HostModule)
	b.NewFunctionBuilder().
		WithGoFunction(api.GoFunc(poll), []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI32}).
		WithName(PollFunction).
		Export(PollFunction)
	b.NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) { panic(tooDeep) }), nil, nil).
		WithName(CallDepthFunction).
		Export(CallDepthFunction)
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("sandbox: instantiating %s: %w", HostModule, err)
	}
	_, err := r.InstantiateWithConfig(ctx, limitsModule(maxCallDepth), wazero.NewModuleConfig().WithName(LimitsModule))
	if err != nil {
		return fmt.Errorf("sandbox: instantiating %s: %w", LimitsModule, err)
	}
	return nil
}

// limitsModule is a module exporting only the immutable i32 global
// MaxCallDepthGlobal = maxCallDepth.
func limitsModule(maxCallDepth int) []byte {
	global := []byte{1, 0x7f, 0x00, 0x41}
	global = appendS64(global, int64(maxCallDepth))
	global = append(global, 0x0b)
	export := appendName([]byte{1}, MaxCallDepthGlobal)
	export = append(export, 0x03, 0)
	b := appendSection(append([]byte(nil), wasmHeader...), secGlobal, global)
	return appendSection(b, secExport, export)
}

// ModuleConfig is the configuration of every plugin instance: no arguments,
// no environment, no file system, an empty stdin, stdout and stderr to the
// given writers (which should be bounded, see LimitedWriter), the real clocks
// and crypto/rand (Go's runtime needs them). Sleeping is not real: wazero's
// default nanosleep returns at once, so a guest that sleeps spins through its
// checks instead of blocking the host inside a WASI call where no check can
// run. The module name is empty so that any number of instances coexist, and
// no start function runs: the host calls _initialize itself, under a
// deadline.
func ModuleConfig(stdout, stderr io.Writer) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithStdout(stdout).
		WithStderr(stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithStartFunctions()
}

// CheckImports returns an error wrapping ErrForbiddenImport, naming the first
// import of m that is neither from AllowedImportModules nor one of the
// functions Instrument adds.
func CheckImports(m wazero.CompiledModule) error {
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod == HostModule {
			params, results := []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI32}
			switch name {
			case PollFunction:
			case CallDepthFunction:
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
	for _, a := range AllowedImportModules {
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
