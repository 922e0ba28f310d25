package policy

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/config"
)

// fakePlugin is a loaded plugin the test controls.
type fakePlugin struct {
	d       abi.Decision
	block   chan struct{} // when set, Call waits for it to close
	started chan struct{} // receives when Call begins
	calls   atomic.Int32
	closed  atomic.Bool
}

func (f *fakePlugin) Call(ctx context.Context, req abi.Request) host.Result {
	f.calls.Add(1)
	if f.closed.Load() {
		return host.Result{Err: &host.Error{Kind: host.KindCancelled, Plugin: "fake", Err: host.ErrClosed}}
	}
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return host.Result{Err: &host.Error{Kind: host.KindCancelled, Plugin: "fake", Err: ctx.Err()}}
		}
	}
	return host.Result{Decision: f.d}
}

func (f *fakePlugin) Close(context.Context) error {
	f.closed.Store(true)
	return nil
}

func (f *fakePlugin) Info() abi.Info { return abi.Info{Name: "fake", Version: "0.1.0"} }
func (f *fakePlugin) SHA256() string { return "fa4e" }

// loader answers the engine's loads by plugin name.
type loader struct {
	mu    sync.Mutex
	calls map[string]int
	load  map[string]func(ctx context.Context, attempt int) (loaded, error)
}

func newLoader() *loader {
	return &loader{calls: map[string]int{}, load: map[string]func(context.Context, int) (loaded, error){}}
}

func (l *loader) loadPlugin(ctx context.Context, _ *source, pc config.Plugin) (loaded, error) {
	l.mu.Lock()
	l.calls[pc.Name]++
	n, f := l.calls[pc.Name], l.load[pc.Name]
	l.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("no plugin %q in this test", pc.Name)
	}
	return f(ctx, n)
}

func (l *loader) attempts(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[name]
}

// returns loads a new plugin deciding d at once.
func returns(d abi.Decision) func(context.Context, int) (loaded, error) {
	return func(context.Context, int) (loaded, error) { return &fakePlugin{d: d}, nil }
}

// neverLoads is a plugin whose load does not end before the engine closes.
func neverLoads(ctx context.Context, _ int) (loaded, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func plugins(specs ...config.Plugin) *config.Config {
	return &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Plugins: specs}
}

func spec(name, layer, policy string) config.Plugin {
	return config.Plugin{Name: name, Layer: layer, FailurePolicy: policy}
}

func startEngine(t *testing.T, cfg *config.Config, l *loader, tune func(*Engine)) *Engine {
	t.Helper()
	e, err := newEngine(Options{Config: cfg, Log: NewDecisionLog(discard{}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	e.loader = l.loadPlugin
	if tune != nil {
		tune(e)
	}
	e.start(context.Background(), -1)
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }

var claudeOptions = []abi.Option{
	{OptionID: "allow_always", Kind: abi.OptionAllowAlways, Durable: true},
	{OptionID: "allow", Kind: abi.OptionAllowOnce},
	{OptionID: "reject", Kind: abi.OptionRejectOnce},
}

func runAsync(e *Engine, ctx context.Context) chan host.Verdict {
	ch := make(chan host.Verdict, 1)
	go func() { ch <- e.Run(ctx, abi.Request{Options: claudeOptions}) }()
	return ch
}

func wait[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A ready plugin's reject answers while another plugin never finishes
// loading; the load is still going on when the decision is made.
func TestReadyRejectDoesNotWaitForALoadingPlugin(t *testing.T) {
	l := newLoader()
	l.load["stuck"] = neverLoads
	l.load["no"] = returns(abi.Decision{Outcome: abi.OutcomeReject, Reason: "no"})
	cfg := plugins(spec("stuck", "admin", "closed"), spec("no", "user", "closed"))
	cfg.LoadWait = time.Hour
	e := startEngine(t, cfg, l, nil)
	v := wait(t, "verdict", runAsync(e, context.Background()))
	if v.Outcome != abi.OutcomeReject || v.DecidedBy != "no" || v.Fallback != "" {
		t.Fatalf("verdict %s by %q (fallback %q)", v.Outcome, v.DecidedBy, v.Fallback)
	}
	if v.Votes[0].Plugin != "stuck" || v.Votes[0].Skipped != "a reject is final" {
		t.Fatalf("stuck plugin's vote %+v", v.Votes[0])
	}
	select {
	case <-e.Ready():
		t.Fatal("the stuck plugin finished loading")
	default:
	}
}

// A plugin still loading after its load budget counts as failed (kind
// load) for that decision and its failure policy applies; once loaded it
// decides.
func TestLoadingPluginPastItsBudgetFails(t *testing.T) {
	release := make(chan struct{})
	l := newLoader()
	l.load["slow"] = func(ctx context.Context, _ int) (loaded, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &fakePlugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}, nil
	}
	yes := host.Member{Name: "yes", Layer: host.LayerUser, Policy: host.FailClosed, Plugin: &fakePlugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}}
	for _, tt := range []struct {
		policy   string
		outcome  abi.Outcome
		fallback bool
	}{{"closed", abi.OutcomeAsk, true}, {"abstain", abi.OutcomeAllow, false}} {
		t.Run(tt.policy, func(t *testing.T) {
			cfg := plugins(spec("slow", "admin", tt.policy))
			cfg.LoadWait = time.Nanosecond // the budget is over by the first decision
			e := startEngine(t, cfg, l, func(e *Engine) { e.extra = []host.Member{yes} })
			v := wait(t, "verdict", runAsync(e, context.Background()))
			if v.Outcome != tt.outcome || (v.Fallback != "") != tt.fallback {
				t.Fatalf("verdict %s (fallback %q)", v.Outcome, v.Fallback)
			}
			if host.KindOf(v.Votes[0].Err) != host.KindLoad || !errors.Is(v.Votes[0].Err, host.ErrStillLoading) {
				t.Fatalf("slow plugin's vote %+v", v.Votes[0])
			}
			if lp := LogPlugins(v.Votes); lp[0].Failure == nil || lp[0].Failure.Kind != "load" {
				t.Fatalf("decision log %+v", lp[0])
			}
		})
	}
	close(release)
	cfg := plugins(spec("slow", "admin", "closed"))
	cfg.LoadWait = time.Nanosecond
	e := startEngine(t, cfg, l, nil)
	<-e.Ready()
	if v := e.Run(context.Background(), abi.Request{Options: claudeOptions}); v.Outcome != abi.OutcomeAllow || v.Votes[0].Err != nil {
		t.Fatalf("once loaded: %s, %+v", v.Outcome, v.Votes[0])
	}
}

// A plugin still loading within its budget is waited for: the decision is
// the plugin's once it loads.
func TestLoadingPluginWithinItsBudgetIsWaitedFor(t *testing.T) {
	release, loading := make(chan struct{}), make(chan struct{})
	l := newLoader()
	l.load["slow"] = func(ctx context.Context, _ int) (loaded, error) {
		close(loading)
		<-release
		return &fakePlugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "loaded"}}, nil
	}
	cfg := plugins(spec("slow", "user", "closed"))
	cfg.LoadWait = time.Hour
	e := startEngine(t, cfg, l, nil)
	<-loading
	ch := runAsync(e, context.Background())
	select {
	case v := <-ch:
		t.Fatalf("decided %s without the plugin", v.Outcome)
	default:
	}
	close(release)
	if v := wait(t, "verdict", ch); v.Outcome != abi.OutcomeReject || v.DecidedBy != "slow" {
		t.Fatalf("verdict %s by %q", v.Outcome, v.DecidedBy)
	}
}

// A plugin that failed to load fails every decision at once with its load
// error (its policy applies) and is retried in the background, never by a
// decision; when a retry succeeds it decides.
func TestFailedLoadIsRetriedInTheBackground(t *testing.T) {
	l := newLoader()
	l.load["flaky"] = func(_ context.Context, attempt int) (loaded, error) {
		if attempt < 3 {
			return nil, &host.Error{Kind: host.KindLoad, Plugin: "flaky", Err: fmt.Errorf("attempt %d: module not there yet", attempt)}
		}
		return &fakePlugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}, nil
	}
	ticks := make(chan time.Time)
	waits := make(chan time.Duration, 8)
	cfg := plugins(spec("flaky", "user", "closed"))
	cfg.LoadWait = time.Hour
	e := startEngine(t, cfg, l, func(e *Engine) {
		e.after = func(d time.Duration) <-chan time.Time { waits <- d; return ticks }
	})
	<-e.Ready()
	for range 3 {
		v := e.Run(context.Background(), abi.Request{Options: claudeOptions})
		if v.Outcome != abi.OutcomeAsk || v.Fallback == "" || host.KindOf(v.Votes[0].Err) != host.KindLoad {
			t.Fatalf("verdict while failed: %s, %+v", v.Outcome, v.Votes[0])
		}
	}
	if n := l.attempts("flaky"); n != 1 {
		t.Fatalf("%d load attempts after three decisions: decisions retried the load", n)
	}
	if d := wait(t, "first retry wait", waits); d != retryFirst {
		t.Fatalf("first retry after %v", d)
	}
	ticks <- time.Now() // attempt 2 fails
	if d := wait(t, "second retry wait", waits); d != 2*retryFirst {
		t.Fatalf("second retry after %v, want the backoff doubled", d)
	}
	ticks <- time.Now() // attempt 3 loads
	waitUntil(t, "the retry to load the plugin", func() bool {
		return e.Run(context.Background(), abi.Request{Options: claudeOptions}).Outcome == abi.OutcomeAllow
	})
	if n := l.attempts("flaky"); n != 3 {
		t.Fatalf("%d attempts", n)
	}
}

// The plugins a bundle reload replaces are closed once the last decision
// using them ends, not before (the decision in flight keeps its answer)
// and not never.
func TestBundleReloadClosesReplacedPluginsAfterTheirLastDecision(t *testing.T) {
	wasm, err := os.ReadFile("../testdata/wasm/good.wasm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeBundle := func(rev int) {
		t.Helper()
		sum := sha256.Sum256(wasm)
		toml := fmt.Sprintf("name = \"acme\"\nrevision = %d\nlayer = \"admin\"\n[[plugin]]\nname = \"good\"\npath = \"good.wasm\"\nsha256 = \"%x\"\n", rev, sum)
		os.WriteFile(filepath.Join(dir, "good.wasm"), wasm, 0o644)
		os.WriteFile(filepath.Join(dir, "bundle.toml"), []byte(toml), 0o644)
	}
	writeBundle(1)
	pub, priv, _ := bundle.GenerateKey()
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var made []*fakePlugin
	l := newLoader()
	l.load["acme/good"] = func(context.Context, int) (loaded, error) {
		mu.Lock()
		defer mu.Unlock()
		p := &fakePlugin{d: abi.Decision{Outcome: abi.OutcomeAllow, Reason: fmt.Sprint("revision ", len(made)+1)}}
		if len(made) == 0 {
			p.block, p.started = make(chan struct{}), make(chan struct{}, 1)
		}
		made = append(made, p)
		return p, nil
	}
	plugin := func(i int) *fakePlugin {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(made) {
			return nil
		}
		return made[i]
	}
	cfg := &config.Config{Strategy: "sequential", Bundles: []config.Bundle{{Path: dir, TrustedKeys: []string{pub}}}}
	e, err := newEngine(Options{Config: cfg, BundleState: filepath.Join(t.TempDir(), "state.json"), Log: NewDecisionLog(discard{}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	e.loader = l.loadPlugin
	e.start(context.Background(), 10*time.Millisecond)
	defer e.Close(context.Background())
	<-e.Ready()

	first := plugin(0)
	inFlight := runAsync(e, context.Background())
	<-first.started
	writeBundle(2)
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "revision 2", func() bool { return e.Bundles()["acme"] == 2 })
	if v := e.Run(context.Background(), abi.Request{Options: claudeOptions}); v.Reason != "revision 2" {
		t.Fatalf("a new decision got %q, want revision 2's", v.Reason)
	}
	if first.closed.Load() {
		t.Fatal("revision 1's plugin was closed while a decision was using it")
	}
	close(first.block)
	v := wait(t, "the decision in flight", inFlight)
	if v.Votes[0].Err != nil || v.Reason != "revision 1" {
		t.Fatalf("the decision in flight got %+v (%q)", v.Votes[0], v.Reason)
	}
	waitUntil(t, "revision 1's plugin to be closed", first.closed.Load)
	if plugin(1).closed.Load() {
		t.Fatal("revision 2's plugin was closed")
	}
	e.Close(context.Background())
	if !plugin(1).closed.Load() {
		t.Fatal("Close left revision 2's plugin open")
	}
}

// A panic in the chain itself (here a loading member's own method) is
// never a decision: the fallback governs.
func TestRunRecoversFromAPanickingChain(t *testing.T) {
	e := startEngine(t, plugins(), newLoader(), func(e *Engine) {
		e.extra = []host.Member{{Name: "odd", Layer: host.LayerUser, Policy: host.FailAbstain, Plugin: panicsWhenAsked{}}}
	})
	v := e.Run(context.Background(), abi.Request{Options: claudeOptions})
	if v.Outcome != abi.OutcomeAsk || v.Fallback == "" {
		t.Fatalf("verdict %s (fallback %q)", v.Outcome, v.Fallback)
	}
}

type panicsWhenAsked struct{}

func (panicsWhenAsked) Call(context.Context, abi.Request) host.Result { return host.Result{} }
func (panicsWhenAsked) Loaded() (<-chan struct{}, time.Time)          { panic("readiness bug") }
func (panicsWhenAsked) Plugin() *host.Plugin                          { return nil }
