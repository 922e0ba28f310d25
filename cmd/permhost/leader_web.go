package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/grants"
	"github.com/permhost/permhost/internal/leader"
	"github.com/permhost/permhost/internal/web"
)

// newWebServer is the web approver of `permhost leader --web ADDR`: its
// per-install secret, the decision log it shows, the grants it lists.
func newWebServer(addr, cert, key, secretPath string, cfg *config.Config, logger *slog.Logger) (*web.Server, error) {
	if secretPath == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("--web-secret: %w", err)
		}
		secretPath = filepath.Join(dir, "permhost", "web-secret")
	}
	secret, err := web.LoadSecret(secretPath)
	if err != nil {
		return nil, err
	}
	opts := web.Options{Addr: addr, CertFile: cert, KeyFile: key, Secret: secret, LogPath: cfg.LogPath, Logger: logger}
	if p, err := grants.DefaultPath(); err == nil {
		opts.Grants = grants.Open(p)
	}
	if cfg.Approve.Webhook != "" {
		opts.Webhook = &web.Webhook{URL: cfg.Approve.Webhook, Details: cfg.Approve.WebhookDetails}
	}
	return web.New(opts)
}

// startWeb serves the page for srv and prints its one-time login link to
// the person (stderr, never the diagnostics logger).
func startWeb(page *web.Server, srv *leader.Server, stderr io.Writer) error {
	page.SetLeader(srv)
	if err := page.Start(); err != nil {
		return err
	}
	how := "on loopback only, without TLS"
	if page.TLS() {
		how = "over TLS"
	}
	fmt.Fprintf(stderr, "permhost leader: web approver at %s (%s)\n", page.URL(), how)
	fmt.Fprintf(stderr, "permhost leader: one-time login link (open it once; the page can make more): %s\n", page.LoginURL())
	return nil
}
