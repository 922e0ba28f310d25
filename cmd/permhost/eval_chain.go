package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/policy"
)

// chainResult is what eval --config without --plugin prints.
type chainResult struct {
	policy.Evaluation
	DurationUs int64 `json:"durationUs"`
}

// evalChain runs req through the whole chain of f's configuration with the
// proxy's engine: checked (CheckConfig, as before an agent starts), every
// plugin loaded, and deciding as the proxy does; its decision log is left
// alone.
func evalChain(ctx context.Context, f evalFlags, req abi.Request, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(ctx, f.configFile)
	if err != nil {
		printError(stderr, "permhost eval", err)
		return exitUsage
	}
	cfg.LogPath = "" // an evaluation is not a decision
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("component", "permhost-eval")
	engine, err := policy.New(ctx, policy.Options{Config: cfg, Via: "eval", CacheDir: f.cacheDir, Logger: logger, ReloadEvery: -1})
	if err != nil {
		printError(stderr, "permhost eval", err)
		return exitUsage
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = engine.Close(closeCtx)
	}()
	if err := engine.CheckConfig(ctx); err != nil {
		printError(stderr, "permhost eval", err)
		return exitUsage
	}
	// Every plugin loaded (or failed to), as in a proxy past its start: a
	// decision then hears every plugin rather than only the ready ones.
	select {
	case <-engine.Ready():
	case <-ctx.Done():
		fmt.Fprintln(stderr, "permhost eval: interrupted while the plugins load")
		return exitFail
	}
	start := time.Now()
	out := chainResult{Evaluation: engine.Evaluate(ctx, req)}
	out.DurationUs = time.Since(start).Microseconds()
	if err := writeJSON(stdout, out); err != nil {
		fmt.Fprintf(stderr, "permhost eval: %v\n", err)
		return exitFail
	}
	for _, p := range out.Plugins {
		if p.Failure != nil {
			return exitPluginFailed
		}
	}
	return exitOK
}
