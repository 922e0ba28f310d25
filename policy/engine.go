package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/grants"
	"github.com/permhost/permhost/internal/otlp"
	"github.com/permhost/permhost/internal/stdplugins"
)

// Options configure an [Engine].
type Options struct {
	// Config is the validated configuration; nil means no plugins.
	Config *config.Config
	// Via names the front end in the decision log: "proxy", "run", ...
	Via string
	// CacheDir is the plugins' compile cache ("" default, "off" none).
	CacheDir string
	// Home is the user's home directory, for ~ in shell commands; ""
	// means os.UserHomeDir.
	Home string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Notice, when set, receives the few lines a person at the terminal
	// should see (stderr): that a plugin is being compiled on a first run,
	// once, when its load takes longer than a second.
	Notice io.Writer
	// Log, when set, receives decision-log entries instead of the file
	// named by the configuration.
	Log *DecisionLog
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Members are plugins already at hand (for programs that embed the
	// pipeline, and tests); they run with the configured ones, in layer
	// order.
	Members []host.Member
	// BundleState is the file remembering accepted bundle revisions; ""
	// means bundle.DefaultStatePath.
	BundleState string
	// ReloadEvery is how often bundles are checked for changes on disk;
	// 0 means every second, negative never (nor are bundles in registries
	// refreshed: they are at their [[bundle]] refresh otherwise).
	ReloadEvery time.Duration
	// BundleCache is where bundles pulled from registries are kept; ""
	// means bundle.DefaultCacheDir.
	BundleCache string
	// Grants is the file of permhost's own grants ([session] allow_always
	// permhost); "" means grants.DefaultPath.
	Grants string
	// Observe, when set, is given every decision-log entry as it is
	// written, on the goroutine that wrote it: permhost run shows the
	// governor's actions (mode switches, refused file requests, tool calls
	// run unasked) from them. It must return promptly and not keep the
	// entry's slices.
	Observe func(LogEntry)
}

// source is one group of chain members: the configuration's own plugins,
// or one bundle.
type source struct {
	ref      *config.Bundle // nil for the configuration's plugins
	manifest *config.BundleManifest
	print    string // bundle fingerprint when loaded
	slots    []*slot
	// Of a bundle in a registry (oci.go): the digest of the manifest in
	// use, of one that failed to be admitted (not retried until the tag
	// moves), and whether the registry was unreachable at the last look.
	digest, failed string
	down           bool
}

// Engine owns the loaded plugins, the chain and the decision log. It starts
// loading plugins in the background at construction, so that a proxy can
// forward initialize at once. A decision does not wait for all of them:
// plugins that are ready decide at once, one still loading is waited for
// only until load_wait after its load began, then counts as failed for that
// decision (see [host.Chain.Run]); one that failed to load is retried in
// the background. Bundles that change on disk are reloaded; a failed reload
// keeps the last good one, and the plugins a reload replaces are closed
// once the last decision using them ends.
type Engine struct {
	leader   LeaderFunc // permhost proxy --leader (proxy_leader.go)
	cfg      *config.Config
	via      string
	home     string
	log      *slog.Logger
	dlog     *DecisionLog
	ownsLog  bool
	now      func() time.Time
	cacheDir string
	extra    []host.Member
	state    *bundle.State
	// ociCache is nil unless a bundle is in a registry; otlp unless
	// [log.otlp] is set (otlp.go).
	ociCache *bundle.Cache
	otlp     *otlp.Exporter
	grants   *grants.Store // nil unless allow_always is permhost
	gov      *governor     // the proxy's Governor
	observe  func(LogEntry)
	loadWait time.Duration
	notice   io.Writer // Options.Notice
	noticed  sync.Once // the compile notice is made once

	// loader and after are Engine.loadPlugin and time.After; tests
	// replace them before anything loads.
	loader func(context.Context, *source, config.Plugin) (loaded, error)
	after  func(time.Duration) <-chan time.Time

	ready   chan struct{} // closed once every first load attempt ended
	started time.Time     // when loading began

	mu      sync.Mutex // guards sources, current, slots, closed, mistakes
	sources []*source
	current *generation
	slots   map[*slot]struct{} // every slot not closed yet
	closed  bool
	// mistakes are the [plugin.config] keys their plugins do not declare,
	// found as the plugins load; CheckConfig reports them, and once it has
	// (reported set), later ones are logged as errors instead.
	mistakes []*config.Error
	reported atomic.Bool
	// reportedMistakes are those CheckConfig returned, by message: a load
	// that finds one of them later has nothing new to log.
	reportedMistakes map[string]bool

	loaders sync.WaitGroup // slots' loading goroutines
	closers sync.WaitGroup // retired slots being closed

	closeOnce sync.Once
	cancel    context.CancelFunc
	bg        sync.WaitGroup
}

// New validates opts, opens the decision log, admits bundles (signatures,
// revisions, pins) and starts loading plugins. The engine must be closed.
func New(ctx context.Context, opts Options) (*Engine, error) {
	e, err := newEngine(opts)
	if err != nil {
		return nil, err
	}
	e.start(ctx, opts.ReloadEvery)
	return e, nil
}

// newEngine is New without starting to load, so that tests can replace
// loader and after first.
func newEngine(opts Options) (*Engine, error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject}
	}
	if _, err := host.NewChain(host.ChainOptions{Members: opts.Members}); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	e := &Engine{cfg: cfg, via: opts.Via, home: opts.Home, log: opts.Logger, now: opts.Now,
		cacheDir: opts.CacheDir, extra: opts.Members, ready: make(chan struct{}), observe: opts.Observe,
		loadWait: cfg.LoadWait, notice: opts.Notice, slots: map[*slot]struct{}{}, after: time.After, reportedMistakes: map[string]bool{}}
	e.loader = e.loadPlugin
	e.gov = newGovernor(e, nil)
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.home == "" {
		e.home, _ = os.UserHomeDir()
	}
	if e.via == "" {
		e.via = "proxy"
	}
	if e.loadWait <= 0 {
		e.loadWait = config.DefaultLoadWait
	}
	statePath := opts.BundleState
	if statePath == "" && len(cfg.Bundles) > 0 {
		p, err := bundle.DefaultStatePath()
		if err != nil {
			return nil, fmt.Errorf("policy: bundle state: %w", err)
		}
		statePath = p
	}
	e.state = bundle.OpenState(statePath)
	if slices.ContainsFunc(cfg.Bundles, func(b config.Bundle) bool { return b.OCI != "" }) {
		dir := opts.BundleCache
		if dir == "" {
			d, err := bundle.DefaultCacheDir()
			if err != nil {
				return nil, fmt.Errorf("policy: bundle cache: %w", err)
			}
			dir = d
		}
		e.ociCache = bundle.OpenCache(dir)
	}
	if cfg.Session.GrantsOn() {
		path := opts.Grants
		if path == "" {
			p, err := grants.DefaultPath()
			if err != nil {
				return nil, fmt.Errorf("policy: %w", err)
			}
			path = p
		}
		e.grants = grants.Open(path)
	}
	e.sources = append(e.sources, &source{})
	for i := range cfg.Bundles {
		ref := &cfg.Bundles[i]
		s, err := e.admit(ref)
		if err != nil {
			return nil, fmt.Errorf("%s: bundle[%d] %s: %w", cfg.File, i, ref, err)
		}
		e.sources = append(e.sources, s)
	}
	e.dlog = opts.Log
	if e.dlog == nil {
		l, err := OpenConfiguredLog(cfg, e.log)
		if err != nil {
			return nil, err
		}
		e.dlog, e.ownsLog = l, true
	}
	e.startOTLP()
	return e, nil
}

// start begins loading every plugin, installs the first chain at once (its
// members loading) and watches bundles.
func (e *Engine) start(ctx context.Context, reloadEvery time.Duration) {
	loadCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	e.started = time.Now()
	var dones []<-chan struct{}
	for _, s := range e.sources {
		for _, pc := range e.pluginsOf(s) {
			sl := e.newSlot(loadCtx, s, pc)
			s.slots = append(s.slots, sl)
			dones = append(dones, sl.done)
		}
	}
	e.rebuild()
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		defer close(e.ready)
		for _, d := range dones {
			select {
			case <-d:
			case <-loadCtx.Done():
				return
			}
		}
	}()
	if len(e.cfg.Bundles) > 0 && reloadEvery >= 0 {
		if reloadEvery == 0 {
			reloadEvery = time.Second
		}
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			e.watch(loadCtx, reloadEvery)
		}()
		for i, s := range e.sources {
			if s.ref != nil && s.ref.OCI != "" {
				e.bg.Add(1)
				go func() {
					defer e.bg.Done()
					e.refreshEvery(loadCtx, i, s.ref.Refresh)
				}()
			}
		}
	}
}

// admit verifies a bundle and returns its (not yet loaded) source.
func (e *Engine) admit(ref *config.Bundle) (*source, error) {
	if ref.OCI != "" {
		return e.admitOCI(ref)
	}
	print := bundle.Fingerprint(ref.Path)
	m, err := bundle.Load(ref.Path, ref.TrustedKeys, e.state)
	if err != nil {
		return nil, err
	}
	return &source{ref: ref, manifest: m, print: print}, nil
}

func (e *Engine) pluginsOf(s *source) []config.Plugin {
	if s.manifest != nil {
		return s.manifest.Plugins
	}
	return e.cfg.Plugins
}

// failed stands in for a chain that could not be made: every call fails
// with the error, so its failure policy (closed) decides what that means.
type failed struct{ err error }

func (f failed) Call(context.Context, abi.Request) host.Result { return host.Result{Err: f.err} }

// loadStrict loads every plugin of a new bundle revision before it is
// taken: any load failure fails the whole source, so that the last good
// one stays.
func (e *Engine) loadStrict(ctx context.Context, s *source) error {
	pcs := e.pluginsOf(s)
	results := make([]loaded, len(pcs))
	errs := make([]error, len(pcs))
	var wg sync.WaitGroup
	for i, pc := range pcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.loader(ctx, s, pc)
		}()
	}
	wg.Wait()
	for i, p := range results {
		if p == nil {
			continue
		}
		if err, _ := e.checkKeys(pcs[i], p); err != nil {
			p.Close(ctx)
			results[i], errs[i] = nil, err
		}
	}
	if err := errors.Join(errs...); err != nil {
		for _, p := range results {
			if p != nil {
				p.Close(ctx)
			}
		}
		return err
	}
	for i, pc := range pcs {
		s.slots = append(s.slots, e.newLoadedSlot(s, pc, results[i]))
	}
	return nil
}

// rebuild makes the chain from the current sources and installs it.
func (e *Engine) rebuild() {
	e.mu.Lock()
	var (
		members []host.Member
		slots   []*slot
	)
	for _, s := range e.sources {
		for _, sl := range s.slots {
			members = append(members, sl.member())
			slots = append(slots, sl)
		}
	}
	e.mu.Unlock()
	members = append(members, e.extra...)
	chain, err := host.NewChain(host.ChainOptions{Members: members, Logger: e.log, Now: e.now})
	if err != nil {
		// The configuration and Options.Members were validated; fail closed
		// all the same: every decision falls back.
		e.log.Error("plugin chain refused", "err", err)
		chain, _ = host.NewChain(host.ChainOptions{Members: []host.Member{{
			Name: "chain", Layer: host.LayerAdmin, Policy: host.FailClosed, Plugin: failed{err},
		}}})
	}
	e.install(newGeneration(chain, slots))
}

// watch reloads bundles whose files change.
func (e *Engine) watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := 1; i < len(e.sources); i++ {
			e.mu.Lock()
			old := e.sources[i]
			e.mu.Unlock()
			if old.ref.OCI != "" {
				continue // refreshEvery
			}
			seen := bundle.Fingerprint(old.ref.Path)
			if seen == old.print {
				continue
			}
			e.reload(ctx, i, old, seen)
		}
	}
}

// reload replaces bundle source i, keeping the old one when anything fails.
// seen is the fingerprint of the files that prompted it, taken before they
// were read. The old revision's plugins are closed once no decision uses
// them (generation.go).
func (e *Engine) reload(ctx context.Context, i int, old *source, seen string) {
	s, err := e.admit(old.ref)
	if err == nil {
		err = e.loadStrict(ctx, s)
	}
	if err != nil {
		// Remember the failed state so the same broken files are not
		// retried every tick; a further change is retried. The fingerprint
		// is the one from before reading: files that changed while they
		// were read (a bundle being written) are read again.
		old.print = seen
		e.log.Error("bundle reload failed; keeping the last good revision",
			"bundle", old.manifest.Name, "revision", old.manifest.Revision, "path", old.ref.String(), "err", err)
		return
	}
	e.mu.Lock()
	e.sources[i] = s
	e.mu.Unlock()
	e.rebuild()
	e.log.Info("bundle reloaded", "bundle", s.manifest.Name, "from", old.manifest.Revision, "to", s.manifest.Revision, "plugins", len(s.slots))
}

// Ready is closed once every plugin has loaded or failed to load once
// (plugins that failed are retried in the background).
func (e *Engine) Ready() <-chan struct{} { return e.ready }

// checkKeys checks the [plugin.config] keys of pc against those p declares,
// and takes what p's own permhost_check_config found wrong with its
// configuration: a key the plugin does not know would fail every request, so the plugin
// counts as failed to load (the error, of kind load) and the mistake is the
// file's, for CheckConfig. late is set for a mistake CheckConfig has
// already missed, which must be logged as an error.
func (e *Engine) checkKeys(pc config.Plugin, p loaded) (err error, late bool) {
	mistakes := config.CheckConfigKeys(pc, p.Info().ConfigKeys)
	mistakes = append(mistakes, problemsOf(pc, configProblems(p))...)
	if len(mistakes) == 0 {
		return nil, false
	}
	e.mu.Lock()
	e.mistakes = append(e.mistakes, mistakes...)
	for _, m := range mistakes {
		late = late || e.reported.Load() && !e.reportedMistakes[m.Error()]
	}
	e.mu.Unlock()
	return &host.Error{Kind: host.KindLoad, Plugin: pc.Name, Err: config.Errors(mistakes)}, late
}

// CheckConfig returns the keys of [plugin.config] tables (the
// configuration's and its bundles') that their plugin does not declare in
// the configKeys of its permhost_describe, as a [config.ErrorList] with
// file, line and a suggestion for each; nil when there are none. Such a
// plugin counts as failed to load, so its failure policy applies to every
// request; a front end should treat the mistakes as the configuration's and
// stop before the agent starts.
//
// A plugin whose description the compile cache remembers from an earlier
// load is checked at once; for the others CheckConfig waits for the
// plugins' first load, at most until load_wait after start. A plugin still
// loading then is checked when it loads, and a mistake found that late is
// logged as an error.
func (e *Engine) CheckConfig(ctx context.Context) error {
	defer e.reported.Store(true)
	cached, complete := e.cachedMistakes()
	if !complete {
		t := time.NewTimer(time.Until(e.started.Add(e.loadWait)))
		defer t.Stop()
		select {
		case <-e.ready:
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reported.Store(true) // under mu: a mistake found from now on is logged
	if complete {
		for _, m := range cached {
			e.reportedMistakes[m.Error()] = true
		}
		return config.Errors(cached)
	}
	for _, m := range e.mistakes {
		e.reportedMistakes[m.Error()] = true
	}
	return config.Errors(e.mistakes)
}

// cachedMistakes checks each plugin that has a configuration table against
// the description the compile cache remembers for its module, and takes
// what its permhost_check_config said of the same configuration when the
// cache remembers that; complete is false when some plugin's description
// is not there, or when no mistake is found and some plugin's own check
// is not known (it must load first).
func (e *Engine) cachedMistakes() (mistakes []*config.Error, complete bool) {
	unchecked := false
	e.mu.Lock()
	sources := slices.Clone(e.sources)
	e.mu.Unlock()
	for _, s := range sources {
		for _, pc := range e.pluginsOf(s) {
			if len(pc.Config) == 0 {
				continue
			}
			sha, err := pc.Digest()
			if err != nil {
				return nil, false
			}
			keys, ok := knownConfigKeys(e.cacheDir, pc.Path, sha)
			if !ok {
				return nil, false
			}
			mistakes = append(mistakes, config.CheckConfigKeys(pc, keys)...)
			problems, ok := host.CachedConfigCheck(e.cacheDir, sha, pc.Config)
			unchecked = unchecked || !ok
			mistakes = append(mistakes, problemsOf(pc, problems)...)
		}
	}
	// What the plugin's own check says of a configuration is known only
	// once it has loaded with it; the mistakes found without it are enough
	// to stop, but a clean report must wait for the check.
	return mistakes, !unchecked || len(mistakes) > 0
}

// knownConfigKeys returns the configuration keys the module at path
// (sha256 sha) declares, without loading it: from the description the
// compile cache remembers, or for a standard plugin from the list built
// into permhost, so that a first run need not wait for a compile either.
func knownConfigKeys(cacheDir, path, sha string) ([]string, bool) {
	if info, ok := host.CachedInfo(cacheDir, sha); ok {
		return info.ConfigKeys, true
	}
	if name, ok := stdplugins.Name(path); ok {
		return stdplugins.ConfigKeys(name, sha)
	}
	return nil, false
}

// Config is the engine's configuration.
func (e *Engine) Config() *config.Config { return e.cfg }

// Bundles reports the name and revision of each bundle in use.
func (e *Engine) Bundles() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int64{}
	for _, s := range e.sources {
		if s.manifest != nil {
			out[s.manifest.Name] = s.manifest.Revision
		}
	}
	return out
}

// Run runs the chain on req: plugins still loading are waited for only
// within their load budget (see [host.Chain.Run]). A panic in the chain
// is never a decision: the verdict is then the builtin fallback's.
func (e *Engine) Run(ctx context.Context, req abi.Request) (v host.Verdict) {
	g := e.acquire()
	if g == nil {
		return host.Verdict{Outcome: abi.OutcomeAsk, Fallback: "the policy engine is closed"}
	}
	defer e.releaseGen(g)
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("the plugin chain panicked; the builtin fallback decides", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			v = host.Verdict{Outcome: abi.OutcomeAsk, Fallback: fmt.Sprintf("internal error: the plugin chain panicked: %v", p)}
		}
	}()
	return g.chain.Run(ctx, req)
}

// Close stops loading and reloading, closes the plugins (a decision still
// running gets a closed plugin's failure) and flushes the decision log. It
// is idempotent.
func (e *Engine) Close(ctx context.Context) error {
	var errs []error
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.current = nil
		slots := make([]*slot, 0, len(e.slots))
		for s := range e.slots {
			slots = append(slots, s)
		}
		e.mu.Unlock()
		if e.cancel != nil {
			e.cancel()
		}
		// In parallel: each plugin's Close may wait for its running guests.
		closeErrs := make([]error, len(slots))
		var wg sync.WaitGroup
		for i, s := range slots {
			wg.Go(func() { closeErrs[i] = s.close(ctx) })
		}
		wg.Wait()
		errs = append(errs, closeErrs...)
		// A load still running closes its plugin itself when it ends (the
		// slot is closed); Close waits for it only as long as ctx allows.
		loads := make(chan struct{})
		go func() { e.loaders.Wait(); close(loads) }()
		select {
		case <-loads:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("policy: plugins still loading at close: %w", ctx.Err()))
		}
		e.closers.Wait()
		e.bg.Wait()
		e.gov.bg.Wait() // a switch back ends once the proxy's agent is gone
		if e.ownsLog {
			errs = append(errs, e.dlog.Close())
		}
		e.closeOTLP(ctx)
	})
	return errors.Join(errs...)
}
