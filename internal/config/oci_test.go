package config_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/config"
)

// TestOCIBundleEntry: path = "oci://…" names a bundle in a registry, with
// its refresh (default 5m) and plain_http (a loopback registry only).
func TestOCIBundleEntry(t *testing.T) {
	tests := []struct {
		name, toml string
		want       config.Bundle
	}{
		{"defaults", `path = "oci://ghcr.io/acme/policy:stable"`, config.Bundle{OCI: "ghcr.io/acme/policy:stable", Refresh: 5 * time.Minute}},
		{"refresh", "path = \"oci://ghcr.io/acme/policy:stable\"\nrefresh = \"30s\"", config.Bundle{OCI: "ghcr.io/acme/policy:stable", Refresh: 30 * time.Second}},
		{"digest", `path = "oci://ghcr.io/acme/policy@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`,
			config.Bundle{OCI: "ghcr.io/acme/policy@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Refresh: 5 * time.Minute}},
		{"plain HTTP, localhost", "path = \"oci://localhost:5000/acme:1\"\nplain_http = true", config.Bundle{OCI: "localhost:5000/acme:1", Refresh: 5 * time.Minute, PlainHTTP: true}},
		{"plain HTTP, 127.0.0.1", "path = \"oci://127.0.0.1:5000/acme:1\"\nplain_http = true", config.Bundle{OCI: "127.0.0.1:5000/acme:1", Refresh: 5 * time.Minute, PlainHTTP: true}},
		{"plain HTTP, ::1", "path = \"oci://[::1]:5000/acme:1\"\nplain_http = true", config.Bundle{OCI: "[::1]:5000/acme:1", Refresh: 5 * time.Minute, PlainHTTP: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("[[bundle]]\n"+tt.toml+"\n"), "permhost.toml", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			b := cfg.Bundles[0]
			if b.OCI != tt.want.OCI || b.Refresh != tt.want.Refresh || b.PlainHTTP != tt.want.PlainHTTP || b.Path != "" || b.Isolation != config.IsolationProcess {
				t.Fatalf("got %+v, want %+v", b, tt.want)
			}
		})
	}
}

func TestOCIBundleMistakes(t *testing.T) {
	tests := []struct {
		name, toml string
		key, msg   string
	}{
		{"no tag", `path = "oci://ghcr.io/acme/policy"`, "bundle[0].path", "want a tag or a digest"},
		{"no repository", `path = "oci://ghcr.io"`, "bundle[0].path", "oci://ghcr.io"},
		{"refresh too short", "path = \"oci://ghcr.io/a:1\"\nrefresh = \"10ms\"", "bundle[0].refresh", "out of range [1s, 24h0m0s]"},
		{"refresh not a duration", "path = \"oci://ghcr.io/a:1\"\nrefresh = \"often\"", "bundle[0].refresh", "is not a duration"},
		{"plain HTTP off loopback", "path = \"oci://registry.example.com/a:1\"\nplain_http = true", "bundle[0].plain_http", "only for a loopback registry"},
		{"plain HTTP, lookalike", "path = \"oci://localhost.example.com/a:1\"\nplain_http = true", "bundle[0].plain_http", "only for a loopback registry"},
		{"plain HTTP, wrong type", "path = \"oci://localhost/a:1\"\nplain_http = \"yes\"", "bundle[0].plain_http", "want true or false"},
		{"refresh on a directory", "path = \"b\"\nrefresh = \"1m\"", "bundle[0].refresh", "only for a bundle in an OCI registry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, map[string]string{"b/bundle.toml": "name = \"b\"\nrevision = 1\n", "permhost.toml": "[[bundle]]\n" + tt.toml + "\n"})
			_, err := config.Load(filepath.Join(dir, "permhost.toml"))
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.msg) {
				t.Fatalf("got %v, want %s: %s", err, tt.key, tt.msg)
			}
		})
	}
}
