package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/digest"
	"github.com/permhost/permhost/internal/grants"
	"github.com/permhost/permhost/sandbox"
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
	// 0 means every second, negative never.
	ReloadEvery time.Duration
	// Grants is the file of permhost's own grants ([session] allow_always
	// permhost); "" means grants.DefaultPath.
	Grants string
}

// source is one group of chain members: the configuration's own plugins,
// or one bundle.
type source struct {
	ref      *config.Bundle // nil for the configuration's plugins
	manifest *config.BundleManifest
	print    string // bundle fingerprint when loaded
	members  []host.Member
	plugins  []*host.Plugin
}

// Engine owns the loaded plugins, the chain and the decision log. It starts
// loading plugins in the background at construction, so that a proxy can
// forward initialize at once; decisions wait for the load. Bundles that
// change on disk are reloaded; a failed reload keeps the last good one.
type Engine struct {
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
	grants   *grants.Store // nil unless allow_always is permhost

	ready chan struct{}
	chain atomic.Pointer[host.Chain] // set before ready closes
	// loading stands in for the chain until ready: the configured plugins
	// as failing with ErrStillLoading. Decisions use it once waitOver is
	// closed, load_wait after start.
	loading   *host.Chain
	waitOver  chan struct{}
	waitTimer *time.Timer

	mu      sync.Mutex // guards sources, retired and mistakes
	sources []*source
	retired []*host.Plugin
	// mistakes are the [plugin.config] keys their plugins do not declare,
	// found as the plugins load; CheckConfig reports them, and once it has
	// (reported set), later ones are logged as errors instead.
	mistakes []*config.Error
	reported atomic.Bool
	// reportedMistakes are those CheckConfig returned, by message: a load
	// that finds one of them later has nothing new to log.
	reportedMistakes map[string]bool

	closeOnce sync.Once
	cancel    context.CancelFunc
	bg        sync.WaitGroup
}

// New validates opts, opens the decision log, admits bundles (signatures,
// revisions, pins) and starts loading plugins. The engine must be closed.
func New(ctx context.Context, opts Options) (*Engine, error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject}
	}
	if _, err := host.NewChain(host.ChainOptions{Members: opts.Members}); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	e := &Engine{cfg: cfg, via: opts.Via, home: opts.Home, log: opts.Logger, now: opts.Now,
		cacheDir: opts.CacheDir, extra: opts.Members, ready: make(chan struct{}), reportedMistakes: map[string]bool{}}
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
	statePath := opts.BundleState
	if statePath == "" && len(cfg.Bundles) > 0 {
		p, err := bundle.DefaultStatePath()
		if err != nil {
			return nil, fmt.Errorf("policy: bundle state: %w", err)
		}
		statePath = p
	}
	e.state = bundle.OpenState(statePath)
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
			return nil, fmt.Errorf("%s: bundle[%d] %s: %w", cfg.File, i, ref.Path, err)
		}
		e.sources = append(e.sources, s)
	}
	loading, err := e.loadingChain()
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	e.loading = loading
	e.dlog = opts.Log
	if e.dlog == nil {
		l, err := OpenDecisionLog(cfg.LogPath, e.log)
		if err != nil {
			return nil, err
		}
		e.dlog, e.ownsLog = l, true
	}
	wait := cfg.LoadWait
	if wait <= 0 {
		wait = config.DefaultLoadWait
	}
	e.waitOver = make(chan struct{})
	e.waitTimer = time.AfterFunc(wait, func() { close(e.waitOver) })
	loadCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		e.loadAll(loadCtx)
		if len(cfg.Bundles) > 0 && opts.ReloadEvery >= 0 {
			every := opts.ReloadEvery
			if every == 0 {
				every = time.Second
			}
			e.watch(loadCtx, every)
		}
	}()
	return e, nil
}

// admit verifies a bundle and returns its (not yet loaded) source.
func (e *Engine) admit(ref *config.Bundle) (*source, error) {
	print := bundle.Fingerprint(ref.Path)
	m, err := bundle.Load(ref.Path, ref.TrustedKeys, e.state)
	if err != nil {
		return nil, err
	}
	return &source{ref: ref, manifest: m, print: print}, nil
}

// failed stands in for a plugin that could not be loaded: every call fails
// with the load error, so its failure policy decides what that means.
type failed struct{ err error }

func (f failed) Call(context.Context, abi.Request) host.Result { return host.Result{Err: f.err} }

// load loads the plugins of s. With strict set (a bundle reload), any load
// failure fails the whole source so the last good one stays.
func (e *Engine) load(ctx context.Context, s *source, strict bool) error {
	pcs := e.cfg.Plugins
	if s.manifest != nil {
		pcs = s.manifest.Plugins
	}
	results := make([]*host.Plugin, len(pcs))
	errs := make([]error, len(pcs))
	var wg sync.WaitGroup
	for i, pc := range pcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = host.Load(ctx, host.Options{
				Name: pc.Name, Path: pc.Path, SHA256: pc.SHA256, Config: pc.Config,
				Limits:   sandbox.Limits{Timeout: pc.Timeout, MemoryBytes: pc.Memory},
				CacheDir: e.cacheDir, Logger: e.log,
			})
		}()
	}
	wg.Wait()
	late := make([]bool, len(pcs)) // a mistake CheckConfig has already missed
	for i, p := range results {
		if p == nil {
			continue
		}
		// A key the plugin does not know would fail every request: the
		// plugin counts as failed to load, and the mistake is the file's.
		mistakes := config.CheckConfigKeys(pcs[i], p.Info().ConfigKeys)
		if len(mistakes) == 0 {
			continue
		}
		p.Close(ctx)
		results[i], errs[i] = nil, &host.Error{Kind: host.KindLoad, Plugin: pcs[i].Name, Err: config.Errors(mistakes)}
		e.mu.Lock()
		e.mistakes = append(e.mistakes, mistakes...)
		for _, m := range mistakes {
			late[i] = late[i] || e.reported.Load() && !e.reportedMistakes[m.Error()]
		}
		e.mu.Unlock()
	}
	if strict {
		if err := errors.Join(errs...); err != nil {
			for _, p := range results {
				if p != nil {
					p.Close(ctx)
				}
			}
			return err
		}
	}
	for i, pc := range pcs {
		m := host.Member{Name: pc.Name, Layer: pc.Layer, Policy: host.FailurePolicy(pc.FailurePolicy)}
		switch {
		case errs[i] != nil && ctx.Err() != nil:
			// The engine is closing (the agent exited while plugins were
			// still compiling): the load was stopped, it did not fail.
			e.log.Debug("plugin load stopped: permhost is shutting down", "plugin", pc.Name)
			m.Plugin = failed{errs[i]}
		case errors.Is(errs[i], config.ErrInvalid) && !late[i]:
			// CheckConfig reports it, with the file's other mistakes.
			e.log.Debug("plugin configuration has keys the plugin does not declare", "plugin", pc.Name, "err", errs[i])
			m.Plugin = failed{errs[i]}
		case errs[i] != nil:
			e.log.Error("plugin failed to load; its failure policy applies to every request", "plugin", pc.Name, "policy", pc.FailurePolicy, "err", errs[i])
			m.Plugin = failed{errs[i]}
		default:
			p := results[i]
			s.plugins = append(s.plugins, p)
			m.Plugin, m.Version, m.SHA256 = p, p.Info().Version, p.SHA256()
			e.log.Debug("plugin loaded", "plugin", pc.Name, "version", m.Version, "sha256", m.SHA256)
		}
		s.members = append(s.members, m)
	}
	return nil
}

func (e *Engine) loadAll(ctx context.Context) {
	defer close(e.ready)
	var wg sync.WaitGroup
	for _, s := range e.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.load(ctx, s, false)
		}()
	}
	wg.Wait()
	e.rebuild()
}

// rebuild makes the chain from the current sources.
func (e *Engine) rebuild() {
	e.mu.Lock()
	var members []host.Member
	for _, s := range e.sources {
		members = append(members, s.members...)
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
	e.chain.Store(chain)
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
// were read.
func (e *Engine) reload(ctx context.Context, i int, old *source, seen string) {
	s, err := e.admit(old.ref)
	if err == nil {
		err = e.load(ctx, s, true)
	}
	if err != nil {
		// Remember the failed state so the same broken files are not
		// retried every tick; a further change is retried. The fingerprint
		// is the one from before reading: files that changed while they
		// were read (a bundle being written) are read again.
		old.print = seen
		e.log.Error("bundle reload failed; keeping the last good revision",
			"bundle", old.manifest.Name, "revision", old.manifest.Revision, "path", old.ref.Path, "err", err)
		return
	}
	e.mu.Lock()
	e.sources[i] = s
	e.retired = append(e.retired, old.plugins...)
	e.mu.Unlock()
	e.rebuild()
	e.log.Info("bundle reloaded", "bundle", s.manifest.Name, "from", old.manifest.Revision, "to", s.manifest.Revision, "plugins", len(s.plugins))
}

// Ready is closed once every plugin has loaded or failed to.
func (e *Engine) Ready() <-chan struct{} { return e.ready }

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
// plugins to load, at most until load_wait after start. A plugin still
// loading then is checked when it loads, and a mistake found that late is
// logged as an error.
func (e *Engine) CheckConfig(ctx context.Context) error {
	defer e.reported.Store(true)
	cached, complete := e.cachedMistakes()
	if !complete {
		select {
		case <-e.ready:
		case <-e.waitOver:
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
// the description the compile cache remembers for its module; complete is
// false when some plugin's description is not there (it must load first).
func (e *Engine) cachedMistakes() (mistakes []*config.Error, complete bool) {
	e.mu.Lock()
	sources := slices.Clone(e.sources)
	e.mu.Unlock()
	for _, s := range sources {
		pcs := e.cfg.Plugins
		if s.manifest != nil {
			pcs = s.manifest.Plugins
		}
		for _, pc := range pcs {
			if len(pc.Config) == 0 {
				continue
			}
			sha, err := digest.File(pc.Path)
			if err != nil {
				return nil, false
			}
			info, ok := host.CachedInfo(e.cacheDir, sha)
			if !ok {
				return nil, false
			}
			mistakes = append(mistakes, config.CheckConfigKeys(pc, info.ConfigKeys)...)
		}
	}
	return mistakes, true
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

// ErrStillLoading is the failure of a plugin that had not loaded by the
// time a decision stopped waiting for it (load_wait after start).
var ErrStillLoading = errors.New("policy: plugin still loading")

// Run runs the chain on req once the plugins are loaded, or, from load_wait
// after start, with the plugins still loading counted as failed.
func (e *Engine) Run(ctx context.Context, req abi.Request) host.Verdict {
	select {
	case <-e.ready:
	case <-e.waitOver:
		select {
		case <-e.ready:
		default:
			return e.loading.Run(ctx, req)
		}
	case <-ctx.Done():
		return host.Verdict{Outcome: abi.OutcomeCancel, Reason: "cancelled while plugins loaded"}
	}
	return e.chain.Load().Run(ctx, req)
}

// loadingChain is the chain while plugins load: each configured plugin
// (bundles' included) fails with ErrStillLoading, so that its failure
// policy decides what its absence means; Options.Members run as usual.
func (e *Engine) loadingChain() (*host.Chain, error) {
	var members []host.Member
	for _, s := range e.sources {
		pcs := e.cfg.Plugins
		if s.manifest != nil {
			pcs = s.manifest.Plugins
		}
		for _, pc := range pcs {
			members = append(members, host.Member{Name: pc.Name, Layer: pc.Layer, Policy: host.FailurePolicy(pc.FailurePolicy),
				Plugin: failed{&host.Error{Kind: host.KindLoad, Plugin: pc.Name, Err: ErrStillLoading}}})
		}
	}
	members = append(members, e.extra...)
	return host.NewChain(host.ChainOptions{Members: members, Logger: e.log, Now: e.now})
}

// Close stops loading and reloading, closes the plugins and flushes the
// decision log. It is idempotent.
func (e *Engine) Close(ctx context.Context) error {
	var errs []error
	e.closeOnce.Do(func() {
		e.waitTimer.Stop()
		e.cancel()
		e.bg.Wait()
		e.mu.Lock()
		plugins := e.retired
		for _, s := range e.sources {
			plugins = append(plugins, s.plugins...)
		}
		e.mu.Unlock()
		for _, p := range plugins {
			errs = append(errs, p.Close(ctx))
		}
		if e.ownsLog {
			errs = append(errs, e.dlog.Close())
		}
	})
	return errors.Join(errs...)
}
