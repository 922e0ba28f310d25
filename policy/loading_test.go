package policy_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

// A real plugin still loading when its load budget (load_wait) is over
// counts as failed for the decisions that stop waiting for it (its failure
// policy, here closed, sends them to the person with one-time options);
// once it has loaded, it decides. The deterministic cases, with loads the
// test controls, are in engine_internal_test.go.
func TestDecisionsStopWaitingForLoadingPlugins(t *testing.T) {
	path, err := filepath.Abs("../host/testdata/slow_init.wasm") // its _initialize takes 150 ms
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Strategy: config.StrategySequential, LoadWait: time.Millisecond,
		Plugins: []config.Plugin{{Name: "slow", Path: path, Timeout: time.Second, Memory: 16 << 20,
			FailurePolicy: config.FailureClosed, Layer: config.LayerUser}}}
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	req := abi.Request{ABI: abi.Current, Options: []abi.Option{{OptionID: "a", Kind: abi.OptionAllowOnce}, {OptionID: "r", Kind: abi.OptionRejectOnce}}}

	loadedBefore := closed(e.Ready())
	v := e.Run(context.Background(), req)
	if loadedBefore && v.Votes[0].Err == nil {
		t.Skip("the plugin loaded before the first decision (the machine stalled for its 150 ms _initialize)")
	}
	if len(v.Votes) != 1 || !errors.Is(v.Votes[0].Err, host.ErrStillLoading) {
		t.Fatalf("votes while loading = %+v", v.Votes)
	}
	if lp := policy.LogPlugins(v.Votes); lp[0].Failure == nil || lp[0].Failure.Kind != "load" {
		t.Errorf("decision log while loading = %+v, want a load failure", lp[0])
	}
	if v.Outcome != abi.OutcomeAsk || v.Fallback == "" {
		t.Fatalf("verdict while loading = %s (fallback %q), want the closed policy's ask", v.Outcome, v.Fallback)
	}

	<-e.Ready()
	v = e.Run(context.Background(), req)
	if len(v.Votes) != 1 || v.Votes[0].Err != nil || v.Outcome != abi.OutcomeAllow {
		t.Fatalf("verdict once loaded = %s, votes %+v", v.Outcome, v.Votes)
	}
	if v.Votes[0].SHA256 == "" {
		t.Error("the vote of a loaded plugin names no sha256")
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Closing the engine while a plugin is still loading (an agent that exits
// at once) stops the load; that is the shutdown asked for, not a failure
// to report at error level.
func TestCloseWhileLoadingLogsNoError(t *testing.T) {
	path, err := filepath.Abs("testdata/endless_init.wasm") // its _initialize never returns
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Strategy: config.StrategySequential,
		Plugins: []config.Plugin{{Name: "endless", Path: path, Timeout: time.Minute, Memory: 16 << 20,
			FailurePolicy: config.FailureClosed, Layer: config.LayerUser}}}
	var logs acptest.SyncBuffer
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: "off",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Ready():
		t.Fatal("a plugin whose _initialize never returns loaded")
	default:
	}
	e.Close(context.Background())
	<-e.Ready()
	out := logs.String()
	if strings.Contains(out, "level=ERROR") || strings.Contains(out, "level=WARN") {
		t.Errorf("closing while a plugin loads logged a failure:\n%s", out)
	}
	if !strings.Contains(out, "plugin load stopped") {
		t.Errorf("the stopped load is not noted at debug level:\n%s", out)
	}
}
