package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/policy"
)

// configUsage documents --config for every command that takes it.
const configUsage = "permhost.toml to use (default: $XDG_CONFIG_HOME/permhost/permhost.toml when present; none: no plugins)"

// findConfig returns the configuration file to use: the flag's value, else
// the user's default file when it exists, else "".
func findConfig(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	dir, err := defaultConfigDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, "permhost.toml")
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return p
}

// loadConfig reads the configuration named by the flag or found by default;
// nil with no error when there is none. A file with mistakes gives a
// config.ErrorList of every one, the keys of [plugin.config] tables that
// their plugins do not declare included (their plugins are loaded to ask),
// so that one round of fixing finds them all.
func loadConfig(ctx context.Context, flagValue string) (*config.Config, error) {
	path := findConfig(flagValue)
	if path == "" {
		return nil, nil
	}
	cfg, err := config.Load(path)
	var list config.ErrorList
	if err != nil && cfg != nil && errors.As(err, &list) {
		return nil, config.Errors(append(list, policy.CheckPluginKeys(ctx, cfg.Plugins, "")...))
	}
	return cfg, err
}

// newEngine starts the decision pipeline for cfg and checks its plugins'
// configuration keys: when a plugin has a [plugin.config] table it waits
// for the plugins to load (at most load_wait), and the keys their plugins
// do not declare are configuration mistakes, which stop permhost before the
// agent starts (so the agent starts once the plugins are compiled, not
// alongside; see RATIONALE.md). The returned handler is nil when cfg is
// nil, which the proxy takes as forwarding every request to the editor:
// with no configuration permhost is a transparent proxy.
func newEngine(ctx context.Context, cfg *config.Config, via string, logger *slog.Logger) (*policy.Engine, acp.Handler, error) {
	if cfg == nil {
		return nil, nil, nil
	}
	e, err := policy.New(ctx, policy.Options{Config: cfg, Via: via, Logger: logger, Notice: os.Stderr})
	if err != nil {
		return nil, nil, fmt.Errorf("permhost: %w", err)
	}
	if err := e.CheckConfig(ctx); err != nil {
		e.Close(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	return e, e.Handler(), nil
}

// printError prints err on w, each of its lines (a configuration's
// mistakes are one a line) after prefix.
func printError(w io.Writer, prefix string, err error) {
	for line := range strings.SplitSeq(err.Error(), "\n") {
		// An error may quote a plugin, an agent or a file: safetext
		// renders each of its lines.
		fmt.Fprintf(w, "%s: %s\n", prefix, safetext.Terminal(line))
	}
}
