package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
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
}

// Engine owns the loaded plugins, the chain and the decision log. It starts
// loading plugins in the background at construction, so that a proxy can
// forward initialize at once; decisions wait for the load.
type Engine struct {
	cfg     *config.Config
	via     string
	home    string
	log     *slog.Logger
	dlog    *DecisionLog
	ownsLog bool
	now     func() time.Time

	ready   chan struct{}
	chain   *host.Chain // set before ready closes
	plugins []*host.Plugin

	closeOnce sync.Once
	cancel    context.CancelFunc
}

// New validates opts, opens the decision log and starts loading plugins.
// The engine must be closed.
func New(ctx context.Context, opts Options) (*Engine, error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject}
	}
	if _, err := host.NewChain(host.ChainOptions{Members: opts.Members}); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	e := &Engine{cfg: cfg, via: opts.Via, home: opts.Home, log: opts.Logger, now: opts.Now, ready: make(chan struct{})}
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
	e.dlog = opts.Log
	if e.dlog == nil {
		l, err := OpenDecisionLog(cfg.LogPath, e.log)
		if err != nil {
			return nil, err
		}
		e.dlog, e.ownsLog = l, true
	}
	loadCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	go e.load(loadCtx, opts.CacheDir, opts.Members)
	return e, nil
}

// failed stands in for a plugin that could not be loaded: every call fails
// with the load error, so its failure policy decides what that means.
type failed struct{ err error }

func (f failed) Call(context.Context, abi.Request) host.Result { return host.Result{Err: f.err} }

func (e *Engine) load(ctx context.Context, cacheDir string, extra []host.Member) {
	defer close(e.ready)
	members := make([]host.Member, 0, len(e.cfg.Plugins)+len(extra))
	type loaded struct {
		p   *host.Plugin
		err error
	}
	results := make([]loaded, len(e.cfg.Plugins))
	var wg sync.WaitGroup
	for i, pc := range e.cfg.Plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := host.Load(ctx, host.Options{
				Name: pc.Name, Path: pc.Path, SHA256: pc.SHA256, Config: pc.Config,
				Limits:   sandbox.Limits{Timeout: pc.Timeout, MemoryBytes: pc.Memory},
				CacheDir: cacheDir, Logger: e.log,
			})
			results[i] = loaded{p, err}
		}()
	}
	wg.Wait()
	for i, pc := range e.cfg.Plugins {
		m := host.Member{Name: pc.Name, Layer: pc.Layer, Policy: host.FailurePolicy(pc.FailurePolicy)}
		if r := results[i]; r.err != nil {
			e.log.Error("plugin failed to load; its failure policy applies to every request", "plugin", pc.Name, "policy", pc.FailurePolicy, "err", r.err)
			m.Plugin = failed{r.err}
		} else {
			e.plugins = append(e.plugins, r.p)
			m.Plugin, m.Version, m.SHA256 = r.p, r.p.Info().Version, r.p.SHA256()
			e.log.Debug("plugin loaded", "plugin", pc.Name, "version", m.Version, "sha256", m.SHA256)
		}
		members = append(members, m)
	}
	members = append(members, extra...)
	chain, err := host.NewChain(host.ChainOptions{Members: members, Logger: e.log, Now: e.now})
	if err != nil {
		// The configuration was validated; only Options.Members can be
		// wrong here. Fail closed: every decision falls back.
		e.log.Error("plugin chain refused", "err", err)
		chain, _ = host.NewChain(host.ChainOptions{Members: []host.Member{{
			Name: "chain", Layer: host.LayerAdmin, Policy: host.FailClosed, Plugin: failed{err},
		}}})
	}
	e.chain = chain
}

// Ready is closed once every plugin has loaded or failed to.
func (e *Engine) Ready() <-chan struct{} { return e.ready }

// Config is the engine's configuration.
func (e *Engine) Config() *config.Config { return e.cfg }

// Run runs the chain on req once the plugins are loaded.
func (e *Engine) Run(ctx context.Context, req abi.Request) host.Verdict {
	select {
	case <-e.ready:
	case <-ctx.Done():
		return host.Verdict{Outcome: abi.OutcomeCancel, Reason: "cancelled while plugins loaded"}
	}
	return e.chain.Run(ctx, req)
}

// Close stops loading, closes the plugins and flushes the decision log. It
// is idempotent.
func (e *Engine) Close(ctx context.Context) error {
	var errs []error
	e.closeOnce.Do(func() {
		e.cancel()
		<-e.ready
		for _, p := range e.plugins {
			errs = append(errs, p.Close(ctx))
		}
		if e.ownsLog {
			errs = append(errs, e.dlog.Close())
		}
	})
	return errors.Join(errs...)
}
