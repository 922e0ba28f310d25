package worker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/sandbox"
)

// Timing of the wall.
const (
	// deadlineGrace is how far past the plugin's timeout the parent waits
	// for the answer, as the in-process host does for its guest (1 ms):
	// an answer the child sends at its own deadline is then seen.
	deadlineGrace = time.Millisecond
	// stuckGrace is how long after the deadline a child may still answer
	// the call before it is taken for stuck and killed. The child's own
	// deadline stops a runaway guest within milliseconds (tens on a loaded
	// machine; 98 of 100 infinite loops were answered by the child before
	// the parent's deadline), so a child still silent after this is one the
	// in-process wall could not stop. Killing a healthy child costs a
	// respawn during which calls fail fast, and a 2-core machine at load 7
	// left a healthy child silent for 350 ms once in 200 calls
	// (BENCHMARKS.md's run): the grace errs on the long side.
	stuckGrace = 500 * time.Millisecond
	// closeGrace is how long Close lets a child end on its own (EOF on its
	// stdin) before killing it.
	closeGrace = 500 * time.Millisecond
	// cpuHardMargin is the CPU time between the soft RLIMIT_CPU, where the
	// child asks to be replaced, and the hard one, where the kernel kills
	// it: time for the replacement to load while the old one serves.
	cpuHardMargin = 30 * time.Second
	// DefaultCPUTime is the soft RLIMIT_CPU of a child: a backstop for a
	// parent that cannot kill it (stopped, frozen), not a per-decision
	// bound (the deadline is). Ten minutes of CPU is thousands of slow
	// decisions; reaching it replaces the child without failing a call.
	DefaultCPUTime = 10 * time.Minute
	// DefaultLoadTimeout bounds starting a child: its handshake, the
	// plugin's compile (from the cache, or cold) and initialization.
	DefaultLoadTimeout = 2 * time.Minute
	// maxBackoff bounds the wait between restarts of a child that keeps
	// dying before it answers anything.
	maxBackoff = 30 * time.Second
)

// Address-space budget of a child beyond its idle footprint, which the
// parent measures (VmSize) when the child says hello, before it reads the
// plugin: ~1.5 GiB for permhost, nearly all of it the Go runtime's and
// wazero's reservations. On top: every instance the host may keep maps its
// whole memory limit; compiling takes Go heap and wazero's machine code in
// proportion to the module (compileFactor times its size); and a fixed
// headroom covers the host's heap, goroutine stacks and the Go runtime's
// arena granularity (64 MiB). Measured above the idle footprint (VmPeak,
// three instances of 32 MiB live): good.wasm 272 MiB; the 3.7 MB
// team-rules Go plugin 361 MiB compiling cold, 361 MiB from the cache.
// The budget is 608 MiB and 844 MiB for them. RATIONALE.md has the rest.
const (
	compileFactor = 64
	fixedHeadroom = 384 << 20
)

// childProcs is the child's GOMAXPROCS (see newPlugin).
const childProcs = 1

// Options configure [Load].
type Options struct {
	// Plugin is what the child loads, as package host would. Its Logger
	// stays with the parent: it receives the child's diagnostics (bounded)
	// and the plugin's logs at debug level, as for an in-process plugin.
	Plugin host.Options
	// Executable is the binary started as the child, with the argument
	// [Command]; "" means this process's own binary.
	Executable string
	// AddressSpace is the child's RLIMIT_AS in bytes; 0 sizes it from the
	// plugin's limits and module on top of the child's idle footprint.
	AddressSpace uint64
	// CPUTime is the child's soft RLIMIT_CPU; 0 means DefaultCPUTime.
	CPUTime time.Duration
	// LoadTimeout bounds starting a child and loading the plugin in it;
	// 0 means DefaultLoadTimeout.
	LoadTimeout time.Duration
	// PollFor is how long each side, waiting for the other's next frame,
	// polls the pipe before it parks: 0 means DefaultPollFor, a negative
	// value parks at once, and at most 1 ms. Machines with one CPU never
	// poll.
	PollFor time.Duration
}

// Plugin is a plugin loaded in a child process. Its methods are safe for
// concurrent use.
type Plugin struct {
	name string
	sha  string
	info abi.Info
	// configProblems is what permhost_check_config found, in the child.
	configProblems []abi.ConfigProblem
	abiVersion     abi.Version
	limits         sandbox.Limits
	hasConfig      bool
	logger         *slog.Logger

	exe           string
	env           []string
	loadMsg       loadMsg
	addressSpace  uint64 // fixed RLIMIT_AS, or 0 to measure
	addressBudget uint64 // added to the measured footprint
	cpuTime       time.Duration
	loadBudget    time.Duration
	pollFor       time.Duration // 0: park at once

	lifetime    context.Context
	endLifetime context.CancelFunc

	mu        sync.Mutex
	cur       *proc              // serving; nil while it is replaced
	procs     map[*proc]struct{} // every child not yet reaped
	replacing bool               // a replacement is being started
	crashes   int                // children that died in a row without answering
	lastErr   *host.Error        // why cur is nil
	closed    bool
	bg        sync.WaitGroup
	closeDone chan struct{}

	// beforeRestart, for tests, runs before each restart attempt.
	beforeRestart func()
}

// Load starts a child, has it load the plugin and returns the plugin once
// the child is ready. Its errors are those of [host.Load] (a [*host.Error]),
// the child's start-up failures being of kind load. The returned plugin
// must be closed.
func Load(ctx context.Context, opts Options) (*Plugin, error) {
	p, err := newPlugin(opts)
	if err != nil {
		return nil, err
	}
	p.lifetime, p.endLifetime = context.WithCancel(context.Background())
	c, r, e := p.spawn(ctx)
	if e != nil {
		p.endLifetime()
		p.bg.Wait()
		return nil, e
	}
	p.name, p.sha, p.info, p.abiVersion, p.limits = r.Name, r.SHA256, r.Info, r.ABI, r.Limits
	// The child bounded and cleaned them; bound them again, it is untrusted.
	p.configProblems = r.ConfigProblems[:min(len(r.ConfigProblems), host.MaxConfigProblems)]
	// A restart loads the same module or nothing: the file may change on
	// disk meanwhile, the plugin may not.
	p.loadMsg.SHA256 = r.SHA256
	p.loadMsg.Name = r.Name
	p.mu.Lock()
	if !p.installLocked(c) {
		p.replaceLocked() // it died already: calls fail fast until the next is ready
	}
	p.mu.Unlock()
	return p, nil
}

func newPlugin(opts Options) (*Plugin, error) {
	o := opts.Plugin
	p := &Plugin{name: o.Name, logger: loggerOf(o), procs: map[*proc]struct{}{}, closeDone: make(chan struct{}),
		cpuTime: opts.CPUTime, loadBudget: opts.LoadTimeout, addressSpace: opts.AddressSpace, hasConfig: o.Config != nil}
	if p.name == "" {
		p.name = "plugin"
		if o.Path != "" {
			p.name = trimWasm(filepath.Base(o.Path))
		}
	}
	bad := func(format string, args ...any) error {
		return p.fail(host.KindLoad, fmt.Errorf("%w: %s", host.ErrBadOptions, fmt.Sprintf(format, args...)))
	}
	if !supported {
		return nil, p.fail(host.KindLoad, ErrUnsupported)
	}
	if (o.Path == "") == (o.Wasm == nil) {
		return nil, bad("give exactly one of Path and Wasm")
	}
	p.limits = o.Limits.WithDefaults()
	if err := p.limits.Validate(); err != nil {
		return nil, p.fail(host.KindLoad, err)
	}
	if o.PoolSize < 0 {
		return nil, bad("PoolSize %d is negative", o.PoolSize)
	}
	if p.cpuTime == 0 {
		p.cpuTime = DefaultCPUTime
	}
	if p.loadBudget == 0 {
		p.loadBudget = DefaultLoadTimeout
	}
	if p.cpuTime < 0 || p.loadBudget < 0 {
		return nil, bad("negative CPUTime or LoadTimeout")
	}
	if opts.PollFor > maxPollFor {
		return nil, bad("PollFor %v exceeds %v", opts.PollFor, maxPollFor)
	}
	// With one CPU the other side cannot answer while this one polls.
	switch p.pollFor = opts.PollFor; {
	case p.pollFor < 0 || runtime.NumCPU() < 2:
		p.pollFor = 0
	case p.pollFor == 0:
		p.pollFor = DefaultPollFor
	}
	p.exe = opts.Executable
	if p.exe == "" {
		if !enabled.Load() {
			return nil, p.fail(host.KindLoad, ErrNotEnabled)
		}
		p.exe = selfExe
	}
	// The child runs elsewhere ("/"): paths go absolute.
	path, cacheDir := o.Path, o.CacheDir
	moduleBytes := int64(len(o.Wasm))
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, p.fail(host.KindLoad, err)
		}
		path = abs
		// A file that cannot be read is the child's to report, in the
		// host's words.
		if fi, err := os.Stat(path); err == nil {
			moduleBytes = fi.Size()
		}
	}
	switch cacheDir {
	case "off":
	case "":
		// What the host's default would be, resolved here: the child has
		// no environment to find it in.
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, p.fail(host.KindLoad, fmt.Errorf("%w: %v", host.ErrCacheDir, err))
		}
		cacheDir = filepath.Join(base, "permhost", "wasm")
	default:
		abs, err := filepath.Abs(cacheDir)
		if err != nil {
			return nil, p.fail(host.KindLoad, err)
		}
		cacheDir = abs
	}
	procs := runtime.GOMAXPROCS(0)
	pool := o.PoolSize
	if pool == 0 {
		pool = procs
	}
	// The host keeps at most 2×GOMAXPROCS+PoolSize instances alive, each
	// mapping its memory limit; one more for an instance being made. The
	// child runs with GOMAXPROCS 1 (below) and keeps fewer; the budget is
	// the parent's count all the same, the bound an in-process plugin
	// would have.
	instances := uint64(2*procs + pool + 1)
	mem := uint64(p.limits.MemoryPages()) * sandbox.WasmPageSize
	p.addressBudget = instances*mem + compileFactor*uint64(moduleBytes) + fixedHeadroom
	if raceBuild {
		p.addressBudget *= 2
	}
	// One P: a goroutine the child makes runnable (the reading passed on
	// while a call runs) then waits for the running one to block instead
	// of waking a second thread, which, spinning for work, competed with
	// the parent for the cores on every decision. A plugin's calls take
	// turns on that P (the Go scheduler preempts a long guest every 10 ms
	// or so); each guest stops at its own deadline as before.
	p.env = []string{"GOMAXPROCS=" + strconv.Itoa(childProcs)}
	if hooksEnabled() {
		p.env = append(p.env, hookEnv+"=1")
	}
	level := slog.LevelInfo
	if p.logger.Enabled(context.Background(), slog.LevelDebug) {
		level = slog.LevelDebug
	}
	p.loadMsg = loadMsg{Protocol: protocolVersion, Name: p.name, Path: path, Wasm: o.Wasm, SHA256: o.SHA256,
		Config: o.Config, Limits: o.Limits, CacheDir: cacheDir, PoolSize: o.PoolSize, LogLevel: level, PollFor: p.pollFor}
	return p, nil
}

// loggerOf is o.Logger or one that discards.
func loggerOf(o host.Options) *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func trimWasm(s string) string {
	if len(s) > 5 && s[len(s)-5:] == ".wasm" {
		return s[:len(s)-5]
	}
	return s
}

func (p *Plugin) fail(kind host.Kind, err error) *host.Error {
	return &host.Error{Kind: kind, Plugin: p.name, Err: err}
}

// Call runs one decision in the child, like [host.Plugin.Call]: it returns
// by the plugin's deadline whatever the child does.
func (p *Plugin) Call(ctx context.Context, req abi.Request) host.Result {
	start := time.Now()
	r := p.call(ctx, start, req)
	r.Duration = time.Since(start)
	if len(r.Logs) > 0 && p.logger.Enabled(ctx, slog.LevelDebug) {
		for _, l := range r.Logs {
			p.logger.Debug("plugin log", "plugin", p.name, "level", l.Level, "message", l.Message)
		}
	}
	return r
}

func (p *Plugin) call(ctx context.Context, start time.Time, req abi.Request) host.Result {
	if err := ctx.Err(); err != nil {
		return host.Result{Err: p.fail(host.KindCancelled, err)}
	}
	p.mu.Lock()
	closed, c, last := p.closed, p.cur, p.lastErr
	p.mu.Unlock()
	switch {
	case closed:
		return host.Result{Err: p.fail(host.KindCancelled, host.ErrClosed)}
	case c == nil:
		return host.Result{Err: p.fail(host.KindLoad, fmt.Errorf("%w after: %v", ErrRestarting, last.Err))}
	}
	if p.hasConfig {
		req.Config = nil // the child's host puts the plugin's own in
	}
	return c.decide(ctx, &req, start.Add(p.limits.Timeout+deadlineGrace))
}

// track counts a child in before its goroutines start, so that Close
// kills one still starting; false when the plugin is closed.
func (p *Plugin) track(c *proc) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.procs[c] = struct{}{}
	p.bg.Add(1)
	return true
}

// lost is told by a child's waiter that it is gone: the plugin starts a
// replacement when it was the one serving.
func (p *Plugin) lost(c *proc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.procs, c)
	if p.cur != c {
		return
	}
	p.cur = nil
	p.lastErr = c.death
	if c.answered.Load() {
		p.crashes = 0
	}
	p.crashes++
	if !p.closed {
		p.logger.Warn("plugin worker died; its calls failed and a new one is starting", "plugin", p.name, "err", c.death)
	}
	p.replaceLocked()
}

// installLocked makes c the child serving, unless it has died already:
// its death is set before its waiter tells lost, so either lost sees it
// serving (and replaces it) or this sees it dead. p.mu is held.
func (p *Plugin) installLocked(c *proc) bool {
	c.mu.Lock()
	death := c.death
	c.mu.Unlock()
	if death != nil {
		p.cur, p.lastErr = nil, death
		p.crashes++
		return false
	}
	p.cur = c
	return true
}

// goBG runs f in a goroutine Close waits for, unless the plugin is closed.
func (p *Plugin) goBG(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		f()
	}()
}

// retire replaces c, which asked for it, while it goes on serving.
func (p *Plugin) retire(c *proc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == c {
		p.logger.Info("plugin worker at its CPU time limit; replacing it", "plugin", p.name, "pid", c.pid, "limit", p.cpuTime)
		p.replaceLocked()
	}
}

// replaceLocked starts the background replacement unless one runs or the
// plugin is closed; p.mu is held.
func (p *Plugin) replaceLocked() {
	if p.replacing || p.closed {
		return
	}
	p.replacing = true
	p.bg.Add(1)
	go p.replace()
}

// backoff is the wait before restart attempt n of a child that keeps dying
// before it answers: none for the first, then doubling from 100 ms.
func backoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return min(maxBackoff, 100*time.Millisecond<<min(n-2, 16))
}

// replace starts children until one is ready, then makes it the one
// serving; an old one still serving (a retiring child) is shut down.
func (p *Plugin) replace() {
	defer p.bg.Done()
	for {
		p.mu.Lock()
		wait := backoff(p.crashes)
		p.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.lifetime.Done():
				t.Stop()
			}
		}
		if p.beforeRestart != nil {
			p.beforeRestart()
		}
		c, _, e := p.spawn(p.lifetime)
		p.mu.Lock()
		if p.closed {
			p.replacing = false
			p.mu.Unlock()
			if c != nil {
				c.shutdown(0)
			}
			return
		}
		if e != nil {
			p.crashes++
			p.lastErr = e
			p.mu.Unlock()
			p.logger.Warn("plugin worker not restarted; retrying", "plugin", p.name, "err", e, "retryIn", backoff(p.crashes))
			continue
		}
		old := p.cur
		if !p.installLocked(c) {
			p.mu.Unlock()
			continue // died between its ready and now
		}
		p.replacing = false
		p.mu.Unlock()
		if old != nil {
			old.drain(p.limits.Timeout + deadlineGrace + stuckGrace)
			old.shutdown(closeGrace)
		}
		p.logger.Info("plugin worker ready", "plugin", p.name, "pid", c.pid)
		return
	}
}

// Close ends the children: each gets EOF on its stdin and closeGrace to
// exit before it is killed; calls in flight fail with kind cancelled. It
// returns once every child is reaped and every goroutine of the plugin has
// ended, or when ctx ends, after killing what is left. Closing again
// returns nil once that is done.
func (p *Plugin) Close(ctx context.Context) error {
	p.mu.Lock()
	first := !p.closed
	p.closed = true
	var procs []*proc
	for c := range p.procs {
		procs = append(procs, c)
	}
	if first {
		p.bg.Add(len(procs))
	}
	p.mu.Unlock()
	if first {
		p.endLifetime()
		for _, c := range procs {
			go func() {
				defer p.bg.Done()
				c.shutdown(closeGrace)
			}()
		}
		go func() {
			p.bg.Wait()
			close(p.closeDone)
		}()
	}
	select {
	case <-p.closeDone:
		return nil
	case <-ctx.Done():
	}
	for _, c := range procs {
		c.kill(nil)
	}
	<-p.closeDone
	return ctx.Err()
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return p.name }

// SHA256 returns the hex sha256 of the module.
func (p *Plugin) SHA256() string { return p.sha }

// Info returns what permhost_describe said, or the zero Info.
func (p *Plugin) Info() abi.Info { return p.info }

// ConfigProblems returns what the plugin's permhost_check_config found
// wrong with its configuration at load, as [host.Plugin.ConfigProblems].
func (p *Plugin) ConfigProblems() []abi.ConfigProblem { return p.configProblems }

// ABI returns the version permhost_abi reported.
func (p *Plugin) ABI() abi.Version { return p.abiVersion }

// Limits returns the limits in force in the child, defaults filled in.
func (p *Plugin) Limits() sandbox.Limits { return p.limits }

// Serving reports whether a child is serving calls: false while one is
// replaced (calls then fail at once with kind load), or once closed.
func (p *Plugin) Serving() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur != nil && !p.closed
}

// pid is the serving child's process id, 0 while it is replaced.
func (p *Plugin) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		return 0
	}
	return p.cur.pid
}

var _ host.Decider = (*Plugin)(nil)
