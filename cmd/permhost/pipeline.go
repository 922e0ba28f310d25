package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
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
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	p := filepath.Join(dir, "permhost", "permhost.toml")
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return p
}

// loadConfig reads the configuration named by the flag or found by default;
// nil with no error when there is none.
func loadConfig(flagValue string) (*config.Config, error) {
	path := findConfig(flagValue)
	if path == "" {
		return nil, nil
	}
	return config.Load(path)
}

// newEngine starts the decision pipeline for cfg. The returned handler is
// nil when cfg is nil, which the proxy takes as forwarding every request to
// the editor: with no configuration permhost is a transparent proxy.
func newEngine(ctx context.Context, cfg *config.Config, via string, logger *slog.Logger) (*policy.Engine, acp.Handler, error) {
	if cfg == nil {
		return nil, nil, nil
	}
	e, err := policy.New(ctx, policy.Options{Config: cfg, Via: via, Logger: logger})
	if err != nil {
		return nil, nil, fmt.Errorf("permhost: %w", err)
	}
	return e, e.Handler(), nil
}
