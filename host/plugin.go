package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/digest"
	"github.com/permhost/permhost/internal/jsontext"
	"github.com/permhost/permhost/sandbox"
)

// Options configure [Load].
type Options struct {
	// Name is used in messages; default: the file's base name without
	// ".wasm", or "plugin" for a module given as bytes.
	Name string
	// Path is the module file; give either Path or Wasm.
	Path string
	// Wasm is the module itself.
	Wasm []byte
	// SHA256 optionally pins the module (hex); a mismatch is a load error
	// naming both hashes.
	SHA256 string
	// Config is handed to the plugin as Request.Config on every call. It
	// must be a JSON object. When nil, each request's own Config is passed
	// through. Its top-level values are also what Extism's config_get
	// returns (strings as themselves, other values as JSON text).
	Config json.RawMessage
	// Limits are the sandbox limits; zero fields take the defaults.
	Limits sandbox.Limits
	// CacheDir is the compile cache directory: "" for the default
	// (os.UserCacheDir()/permhost/wasm), "off" for none. Loads of one module
	// at once, in one process or several, share its entry: one writes it,
	// the others wait for it (within half of Limits.CompileTimeout, at most
	// 30 s; then they compile without the cache) and read it.
	CacheDir string
	// PoolSize is how many idle instances are kept for calls at once,
	// besides one spare made ahead of need; default GOMAXPROCS.
	PoolSize int
	// Logger optionally receives the plugin's logs (at debug level) and
	// the host's notes about it (cache repairs).
	Logger *slog.Logger
	// Trusted says the module is the embedder's own code (permhost's
	// standard plugins), or that the caller enforces the deadline itself
	// (the process wall's child, whose parent answers at the deadline and
	// kills it after a grace): its calls run on the caller's goroutine. A call
	// still stops at its deadline (the instrumented guest checks it, and
	// so does every host function that works in proportion to its
	// arguments), but a guest inside one such function or inside wazero
	// is waited for; an untrusted module runs on its instance's own
	// goroutine, so that the caller gets the fallback at the deadline
	// whatever the guest is doing, which costs two goroutine wake-ups per
	// call (RATIONALE.md, "Trusted modules on the caller's goroutine").
	Trusted bool
}

// Plugin is a loaded plugin. Its methods are safe for concurrent use.
type Plugin struct {
	name     string
	sha      string
	limits   sandbox.Limits
	config   json.RawMessage
	poolSize int
	logger   *slog.Logger
	info     abi.Info
	// configProblems is what permhost_check_config found in config;
	// checksConfig whether the module exports it.
	configProblems []abi.ConfigProblem
	checksConfig   bool
	abiVersion     abi.Version

	// configStrings answers Extism's config_get.
	configStrings map[string]string

	rt       wazero.Runtime
	compiled wazero.CompiledModule
	cache    wazero.CompilationCache
	entry    *compileCache // nil without a compile cache

	// maxIdle bounds the idle instances (PoolSize plus the spare), maxLive
	// all of them.
	maxIdle, maxLive int
	// lifetime ends at Close; instances are made under it.
	lifetime    context.Context
	endLifetime context.CancelFunc

	mu      sync.Mutex
	idle    []*instance
	busy    map[*instance]struct{}
	waiters []chan handoff // calls waiting for an instance, oldest first
	live    int            // instances not closed yet, including one being made
	filling bool           // the filler goroutine runs
	// onCallersGoroutine runs guests on the caller's goroutine, without the
	// hard deadline (a guest stuck in a host function or in wazero delays
	// the caller): Options.Trusted (the standard plugins, and the process
	// wall's child, whose parent enforces the hard deadline itself), and
	// benchmarks that measure what the hand-off costs (see RATIONALE.md).
	onCallersGoroutine bool
	// noWarmup is set once the plugin failed its warm-up call.
	noWarmup atomic.Bool
	// cold is Load's instance while it may still be warmed up.
	cold *instance
	// compileAbandoned: Load gave up on the compile, whose goroutine now
	// owns the runtime.
	compileAbandoned bool
	closed           bool
	released         chan struct{} // closed once the runtime is closed
}

// Result is the outcome of one [Plugin.Call].
type Result struct {
	Decision abi.Decision
	// Err is nil or an [*Error].
	Err error
	// Logs are what the plugin logged and wrote to stdout and stderr,
	// bounded by Limits.MaxLogBytes.
	Logs []Log
	// Duration is the wall time of the call, waiting for an instance
	// included.
	Duration time.Duration
}

// Log is one message of a plugin.
type Log struct {
	// Level is "stdout", "stderr", "debug", "info", "warn", "error" or
	// "trace".
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Load reads, verifies, compiles and instantiates a plugin. It refuses a
// module whose pin or imports are wrong or that is over one of the
// load-time limits of sandbox.Limits (KindLoad, naming the limit), one
// whose ABI version is wrong or that does not export permhost_decide and
// permhost_abi (KindABI). Every phase has a deadline: compiling
// Limits.CompileTimeout (a compile past it is abandoned, never waited for),
// making the first instance ready (instantiation with the module's start
// function, its _initialize) and the permhost_abi and permhost_describe
// calls Limits.InitTimeout each. The warm-up decision of a module with a
// runtime to start runs on the instances made afterwards, in the
// background, under the plugin's own Limits.Timeout: no decision waits for
// one. A panic inside Load is a KindLoad error. The returned plugin must be
// closed.
func Load(ctx context.Context, opts Options) (p *Plugin, err error) {
	defer func() {
		if r := recover(); r != nil {
			name := opts.Name
			if p != nil {
				name = p.name
			}
			p, err = nil, &Error{Kind: KindLoad, Plugin: name, Err: fmt.Errorf("%w: %v", errPanic, r)}
		}
	}()
	p, wasm, err := newPlugin(opts)
	if err != nil {
		return nil, err
	}
	p.lifetime, p.endLifetime = context.WithCancel(context.Background())
	if err := p.compile(ctx, wasm, opts.CacheDir); err != nil {
		p.endLifetime()
		if !p.compileAbandoned {
			p.releaseRuntime()
		}
		return nil, err
	}
	if err := p.handshake(ctx); err != nil {
		return nil, err
	}
	if p.entry != nil {
		if err := p.entry.keepInfo(p.info); err != nil && p.logger != nil {
			p.logger.Warn("compile cache: plugin description not kept", "plugin", p.name, "err", err)
		}
		if err := p.entry.keepCheck(p.checksConfig, p.config, p.configProblems); err != nil && p.logger != nil {
			p.logger.Warn("compile cache: plugin configuration check not kept", "plugin", p.name, "err", err)
		}
	}
	return p, nil
}

// newPlugin validates opts and reads the module.
func newPlugin(opts Options) (*Plugin, []byte, error) {
	name := opts.Name
	if name == "" {
		name = "plugin"
		if opts.Path != "" {
			name = strings.TrimSuffix(filepath.Base(opts.Path), ".wasm")
		}
	}
	p := &Plugin{name: name, busy: map[*instance]struct{}{}, released: make(chan struct{}), logger: opts.Logger,
		onCallersGoroutine: opts.Trusted}
	bad := func(format string, args ...any) error {
		return p.fail(KindLoad, fmt.Errorf("%w: %s", ErrBadOptions, fmt.Sprintf(format, args...)))
	}
	if (opts.Path == "") == (opts.Wasm == nil) {
		return nil, nil, bad("give exactly one of Path and Wasm")
	}
	p.limits = opts.Limits.WithDefaults()
	if err := p.limits.Validate(); err != nil {
		return nil, nil, p.fail(KindLoad, err)
	}
	p.poolSize = opts.PoolSize
	switch {
	case p.poolSize < 0:
		return nil, nil, bad("PoolSize %d is negative", opts.PoolSize)
	case p.poolSize == 0:
		p.poolSize = runtime.GOMAXPROCS(0)
	}
	p.maxIdle = p.poolSize + 1
	p.maxLive = maxLiveInstances(p.poolSize)
	if opts.Config != nil {
		cfg, strs, err := parseConfig(opts.Config)
		if err != nil {
			return nil, nil, bad("Config: %v", err)
		}
		p.config, p.configStrings = cfg, strs
	}
	var want string
	if opts.SHA256 != "" {
		want = strings.ToLower(strings.TrimSpace(opts.SHA256))
		if b, err := hex.DecodeString(want); err != nil || len(b) != sha256.Size {
			return nil, nil, bad("SHA256 %q is not a hex sha256", opts.SHA256)
		}
	}
	wasm := opts.Wasm
	if opts.Path != "" {
		var err error
		if wasm, err = readModule(opts.Path, p.limits.MaxModuleBytes); err != nil {
			return nil, nil, p.fail(KindLoad, err)
		}
	}
	p.sha = digest.Bytes(wasm)
	if want != "" && want != p.sha {
		return nil, nil, p.fail(KindLoad, fmt.Errorf("%w: pinned %s, module is %s", ErrPinMismatch, want, p.sha))
	}
	return p, wasm, nil
}

// readModule reads the module at path, refusing one larger than limit
// bytes (Limits.MaxModuleBytes) without reading it all.
func readModule(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(n int64) error {
		return fmt.Errorf("%s: %w", path, &sandbox.LimitError{Limit: "MaxModuleBytes", What: "module bytes", Value: uint64(n), Max: uint64(limit)})
	}
	// Sized from the file, so that the bytes are read once into one buffer:
	// fresh memory is slow to touch, and growing a buffer touches it twice.
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if fi.Size() > int64(limit) {
			return nil, tooLarge(fi.Size())
		}
		size = int(fi.Size()) + 1
	}
	b := make([]byte, 0, size)
	for {
		if len(b) > limit {
			return nil, tooLarge(int64(len(b)))
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// parseConfig checks that raw is one JSON object and returns it compacted,
// with its top-level values as config_get strings.
func parseConfig(raw json.RawMessage) (json.RawMessage, map[string]string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, nil, fmt.Errorf("not a JSON object: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, nil, err
	}
	strs := make(map[string]string, len(fields))
	for k, v := range fields {
		var s string
		if json.Unmarshal(v, &s) == nil {
			strs[k] = s
		} else {
			strs[k] = string(v)
		}
	}
	return buf.Bytes(), strs, nil
}

// compile verifies, instruments, compiles (through the cache) and checks
// the module.
func (p *Plugin) compile(ctx context.Context, wasm []byte, cacheDir string) error {
	// Waiting for another load of the module to finish its entry is part
	// of compiling: at most half the budget (and maxCacheWait), then the
	// module is compiled without the cache in what is left.
	opened := time.Now()
	cache, err := openCache(ctx, cacheDir, p.sha, min(p.limits.CompileTimeout/2, maxCacheWait), p.logger)
	if err != nil {
		if ctx.Err() != nil {
			return p.fail(KindCancelled, fmt.Errorf("compile cache: %w", err))
		}
		return p.fail(KindLoad, err)
	}
	budget := p.limits.CompileTimeout - time.Since(opened)
	if cache != nil {
		defer func() {
			if !p.compileAbandoned {
				cache.release()
			}
		}()
	}
	// The load-time limits, before anything else reads the module: a
	// cached entry keeps the module's shape, so that a warm load need not
	// read every instruction again (~30 ms for a 4 MB Go plugin).
	if cache != nil && cache.shape != nil {
		err = p.limits.Check(*cache.shape)
	} else {
		var shape sandbox.Shape
		if shape, err = sandbox.Measure(wasm, p.limits); err == nil && cache != nil {
			if err := cache.keepShape(shape); err != nil && p.logger != nil {
				p.logger.Warn("compile cache: module shape not kept", "plugin", p.name, "err", err)
			}
		}
	}
	if err != nil {
		if cache != nil {
			_ = cache.wazero.Close(ctx)
		}
		return p.fail(KindLoad, err)
	}
	var wcache wazero.CompilationCache
	var instrumented []byte
	if cache != nil {
		wcache, instrumented = cache.wazero, cache.instrumented
	}
	p.cache, p.entry = wcache, cache
	if instrumented == nil {
		if instrumented, err = sandbox.Instrument(wasm); err != nil {
			return p.fail(KindLoad, err)
		}
		if cache != nil {
			if err := cache.keepInstrumented(instrumented); err != nil && p.logger != nil {
				p.logger.Warn("compile cache: instrumented module not kept", "plugin", p.name, "err", err)
			}
		}
	}
	if p.rt, err = sandbox.NewRuntime(ctx, p.limits, wcache); err != nil {
		return p.fail(KindLoad, err)
	}
	if err := instantiateHostModule(ctx, p.rt, extismModule, kernelFunctions); err != nil {
		return p.fail(KindLoad, fmt.Errorf("extism kernel: %w", err))
	}
	if err := instantiateHostModule(ctx, p.rt, hostEnvModule, hostEnvFunctions); err != nil {
		return p.fail(KindLoad, fmt.Errorf("%s: %w", hostEnvModule, err))
	}
	if p.compiled, err = p.compileAbandonable(ctx, instrumented, budget); err != nil {
		return err
	}
	if cache != nil {
		if err := cache.seal(); err != nil && p.logger != nil {
			// The next load recompiles; nothing unverified is ever used.
			p.logger.Warn("compile cache not sealed", "plugin", p.name, "err", err)
		}
	}
	if err := sandbox.CheckImports(p.compiled); err != nil {
		return p.fail(KindForbiddenImport, err)
	}
	return nil
}

// maxCacheWait bounds how long a load waits for the compile cache entry of
// its module while another load reads or writes it (a writer compiles; a
// load that compiles without the cache costs CPU but is never wrong). A
// variable for tests.
var maxCacheWait = 30 * time.Second

// abandonedCompiles counts compiles Load gave up on that are still
// running, for tests that check nothing is left behind.
var abandonedCompiles sync.WaitGroup

// compileResult is what a compile goroutine hands back.
type compileResult struct {
	cm  wazero.CompiledModule
	err error
}

// compileAbandonable compiles bin on its own goroutine and waits for it at
// most Limits.CompileTimeout, or until ctx ends. wazero's compiler does not
// look at a context inside a function (and a single function can take
// minutes: its compile time grows with the square of a br_table's
// targets), so a compile past its budget is abandoned rather than waited
// for: its goroutine frees the runtime when it finishes, and nothing, not
// Close and not the process's exit, waits for it. With two compile workers
// wazero checks the context between functions, so that an abandoned
// compile of a large module stops soon.
func (p *Plugin) compileAbandonable(ctx context.Context, bin []byte, budget time.Duration) (wazero.CompiledModule, error) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if runtime.GOMAXPROCS(0) > 1 {
		cctx = experimental.WithCompilationWorkers(cctx, 2)
	}
	done := make(chan compileResult, 1)
	go func() {
		var r compileResult
		defer func() {
			if e := recover(); e != nil {
				r = compileResult{err: fmt.Errorf("%w: %v", errPanic, e)}
			}
			done <- r
		}()
		r.cm, r.err = sandbox.CompileModule(cctx, p.rt, bin)
	}()
	timer := time.NewTimer(budget)
	defer timer.Stop()
	var e *Error
	select {
	case r := <-done:
		cancel()
		if r.err != nil {
			return nil, p.fail(KindLoad, fmt.Errorf("compile: %w", r.err))
		}
		return r.cm, nil
	case <-timer.C:
		e = p.fail(KindLoad, fmt.Errorf("%w: compiling took longer than Limits.CompileTimeout (%v)", ErrCompileTimeout, p.limits.CompileTimeout))
	case <-ctx.Done():
		e = p.fail(KindCancelled, fmt.Errorf("compile: %w", ctx.Err()))
	}
	cancel()
	p.compileAbandoned = true
	rt, cache, entry := p.rt, p.cache, p.entry
	abandonedCompiles.Add(1)
	go func() {
		defer abandonedCompiles.Done()
		if r := <-done; r.cm != nil {
			_ = r.cm.Close(context.Background())
		}
		_ = rt.Close(context.Background())
		if cache != nil {
			_ = cache.Close(context.Background())
		}
		if entry != nil {
			entry.release() // unsealed: the next load rebuilds it
		}
	}()
	return nil, e
}

// handshake makes the first instance ready, checks permhost_abi and reads
// permhost_describe; the instance then joins the pool and the filler makes
// a spare. On failure the plugin is closed.
func (p *Plugin) handshake(ctx context.Context) *Error {
	p.live = 1
	inst, e := p.newInitializedInstance(ctx)
	if e == nil {
		e = p.askABI(ctx, inst)
	}
	if e != nil {
		p.mu.Lock()
		p.closed = true
		if inst == nil {
			p.live--
		}
		none := p.live == 0
		p.mu.Unlock()
		p.endLifetime()
		if inst != nil {
			p.discard(inst) // frees the runtime once the instance is closed
		} else if none {
			p.releaseRuntime()
		}
		return e
	}
	// The first instance is not warmed up: a decision that comes at once
	// takes it as it is rather than wait for a warm-up; the filler makes a
	// warmed spare, which the next decisions take first (the pool is
	// last-in, first-out), and then warms this one up if it is still idle.
	p.mu.Lock()
	p.idle = append(p.idle, inst)
	if inst.initialize != nil {
		p.cold = inst
	}
	p.fillLocked()
	p.mu.Unlock()
	return nil
}

// askABI runs permhost_abi and permhost_describe on inst.
func (p *Plugin) askABI(ctx context.Context, inst *instance) *Error {
	inst.input = inst.input[:0]
	inst.begin(false)
	out, e := inst.run(ctx, inst.abiFn, p.limits.InitTimeout)
	if e != nil {
		e.Err = fmt.Errorf("%s: %w", abi.ExportABI, e.Err)
		return e
	}
	var v struct {
		Major *int `json:"major"`
		Minor *int `json:"minor"`
	}
	if err := decodeStrict(out, &v); err != nil || v.Major == nil || v.Minor == nil {
		return p.fail(KindABI, fmt.Errorf("%s: output %.200q is not {\"major\":N,\"minor\":N}", abi.ExportABI, out))
	}
	p.abiVersion = abi.Version{Major: *v.Major, Minor: *v.Minor}
	if !p.abiVersion.Compatible(abi.Current) {
		return p.fail(KindABI, fmt.Errorf("%w: plugin %q speaks ABI %s, this host speaks %s (same major and a minor up to %d)",
			ErrIncompatibleABI, p.name, p.abiVersion, abi.Current, abi.Current.Minor))
	}
	if inst.describe != nil {
		inst.begin(false)
		out, e := inst.run(ctx, inst.describe, p.limits.InitTimeout)
		if e != nil {
			e.Err = fmt.Errorf("%s: %w", abi.ExportDescribe, e.Err)
			return e
		}
		if err := decodeStrict(out, &p.info); err != nil {
			return p.fail(KindABI, fmt.Errorf("%s: output is not an Info: %v", abi.ExportDescribe, err))
		}
	}
	p.checksConfig = inst.checkConfig != nil
	if inst.checkConfig != nil && p.config != nil {
		inst.input = append(inst.input[:0], p.config...)
		inst.begin(false)
		out, e := inst.run(ctx, inst.checkConfig, p.limits.InitTimeout)
		inst.input = inst.input[:0]
		if e != nil {
			e.Err = fmt.Errorf("%s: %w", abi.ExportCheckConfig, e.Err)
			return e
		}
		var c struct {
			Problems *[]abi.ConfigProblem `json:"problems"`
		}
		if err := decodeStrict(out, &c); err != nil || c.Problems == nil {
			return p.fail(KindABI, fmt.Errorf("%s: output %.200q is not {\"problems\":[...]}", abi.ExportCheckConfig, out))
		}
		p.configProblems = cleanProblems(*c.Problems)
	}
	return nil
}

// MaxConfigProblems bounds the problems kept of one permhost_check_config
// answer: the plugin is untrusted, and a person fixes a few at a time.
const MaxConfigProblems = 50

// cleanProblems bounds what a plugin said about its configuration before
// it reaches a terminal: at most MaxConfigProblems, each text cleaned.
func cleanProblems(in []abi.ConfigProblem) []abi.ConfigProblem {
	out := make([]abi.ConfigProblem, 0, min(len(in), MaxConfigProblems))
	for _, pr := range in[:min(len(in), MaxConfigProblems)] {
		out = append(out, abi.ConfigProblem{Key: cleanText(pr.Key, 200), Message: cleanText(pr.Message, 500), Suggestion: cleanText(pr.Suggestion, 200)})
	}
	return out
}

func (p *Plugin) fail(kind Kind, err error) *Error {
	return &Error{Kind: kind, Plugin: p.name, Err: err}
}

// Decide runs one decision. The error is nil or an [*Error]. It returns by
// the plugin's deadline (Limits.Timeout, from the call), waiting for a free
// instance included.
func (p *Plugin) Decide(ctx context.Context, req abi.Request) (abi.Decision, error) {
	start := time.Now()
	r := newEncodedRequest(req)
	d, e := p.call(ctx, start, r, nil)
	r.release()
	if e != nil {
		return abi.Decision{}, e
	}
	return d, nil
}

// Call runs one decision like [Plugin.Decide] and returns what a log or an
// evaluation needs besides it.
func (p *Plugin) Call(ctx context.Context, req abi.Request) Result {
	start := time.Now()
	var logs []Log
	enc := newEncodedRequest(req)
	d, e := p.call(ctx, start, enc, &logs)
	enc.release()
	r := Result{Decision: d, Logs: logs, Duration: time.Since(start)}
	if e != nil {
		r.Err = e
	}
	return r
}

// call runs one decision on an encoded request (request.go); when logs is
// not nil the plugin's logs are copied into it. A request too large for
// this plugin fails before an instance is taken.
func (p *Plugin) call(ctx context.Context, start time.Time, r *encodedRequest, logs *[]Log) (abi.Decision, *Error) {
	if e := p.checkInput(r); e != nil {
		return abi.Decision{}, e
	}
	deadline := start.Add(p.limits.Timeout)
	inst, e := p.acquire(ctx, deadline)
	if e != nil {
		return abi.Decision{}, e
	}
	budget := time.Until(deadline)
	if budget <= 0 {
		p.release(inst, true) // not run: still good
		return abi.Decision{}, p.fail(KindTimeout, fmt.Errorf("no instance was ready within the %v deadline", p.limits.Timeout))
	}
	d, e := p.decideOn(ctx, inst, r, logs, budget)
	// An instance is replaced after any failure of the plugin.
	p.release(inst, e == nil)
	return d, e
}

func (p *Plugin) decideOn(ctx context.Context, inst *instance, r *encodedRequest, logs *[]Log, budget time.Duration) (abi.Decision, *Error) {
	config, _ := r.forPlugin(p)
	own := inst.input
	shared := r.setInput(inst, config)
	inst.begin(logs != nil)
	out, e := inst.run(ctx, inst.decide, budget)
	if logs != nil && len(inst.logs) > 0 {
		*logs = append([]Log(nil), inst.logs...)
	}
	if e != nil {
		// The instance is discarded; a guest that has not stopped yet may
		// still read its input, which is left as it is (and, when shared,
		// never reused).
		r.abandoned = r.abandoned || shared
		return abi.Decision{}, e
	}
	if shared {
		inst.input = own[:0]
	}
	d, err := decodeDecision(out, r.req.Options)
	if err != nil {
		return abi.Decision{}, p.fail(KindBadOutput, err)
	}
	return d, nil
}

// decodeDecision parses a plugin's output and checks it against the offered
// options. Unknown fields are ignored, so that a plugin built for a newer
// minor of the Decision can still be read; duplicate keys (in any case, at
// any depth: Go's encoding/json would keep the last, matching keys
// case-insensitively), wrongly typed fields, trailing data and unknown
// outcomes are errors.
func decodeDecision(out []byte, options []abi.Option) (abi.Decision, error) {
	// The common shape is read by hand (decode.go); what is read so would
	// pass jsontext.Check.
	var d abi.Decision
	if !decodeDecisionChecked(out, &d) {
		if err := jsontext.Check(out); err != nil {
			return abi.Decision{}, fmt.Errorf("output %.120q: %v", out, err)
		}
		if d = (abi.Decision{}); !decodeDecisionFast(out, &d) {
			d = abi.Decision{}
			if err := json.Unmarshal(out, &d); err != nil {
				return abi.Decision{}, fmt.Errorf("output %.120q: %v", out, err)
			}
		}
	}
	if err := d.Validate(options); err != nil {
		return abi.Decision{}, err
	}
	return d, nil
}

// decodeStrict decodes a plugin's output into v after checking it with
// internal/jsontext: one JSON value, valid UTF-8, no duplicate keys in any
// case at any depth.
func decodeStrict(out []byte, v any) error {
	if err := jsontext.Check(out); err != nil {
		return err
	}
	return json.Unmarshal(out, v)
}

// stop makes the running call stop at its next deadline check, through
// callCtx.Err.
func (inst *instance) stop() {
	inst.stopping.Store(true)
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return p.name }

// SHA256 returns the hex sha256 of the module as given (before
// instrumentation).
func (p *Plugin) SHA256() string { return p.sha }

// Info returns what permhost_describe said, or the zero Info.
func (p *Plugin) Info() abi.Info { return p.info }

// ConfigProblems returns what the plugin's permhost_check_config found
// wrong with Options.Config at load; nil when the plugin has no such
// export, was given no configuration, or found nothing.
func (p *Plugin) ConfigProblems() []abi.ConfigProblem {
	if len(p.configProblems) == 0 {
		return nil
	}
	return slices.Clone(p.configProblems)
}

// ABI returns the version permhost_abi reported.
func (p *Plugin) ABI() abi.Version { return p.abiVersion }

// Limits returns the limits in force, defaults filled in.
func (p *Plugin) Limits() sandbox.Limits { return p.limits }

// cleanText keeps s printable on a terminal: invalid UTF-8 and control
// characters become spaces, and it is cut to at most n runes.
func cleanText(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if n == 0 {
			b.WriteString("…")
			break
		}
		n--
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			r = ' '
		}
		b.WriteRune(r)
	}
	return b.String()
}
