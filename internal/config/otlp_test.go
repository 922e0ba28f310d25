package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/config"
)

func TestOTLPConfig(t *testing.T) {
	tests := []struct {
		name, toml string
		want       string // the endpoint, or the mistake
		key        string
	}{
		{"base URL", `endpoint = "https://collector.example.com:4318"`, "https://collector.example.com:4318/v1/logs", ""},
		{"logs URL", `endpoint = "https://collector.example.com/otlp/v1/logs"`, "https://collector.example.com/otlp/v1/logs", ""},
		{"plain http, loopback", `endpoint = "http://127.0.0.1:4318/"`, "http://127.0.0.1:4318/v1/logs", ""},
		{"plain http, remote", `endpoint = "http://collector.example.com:4318"`, "allowed only for a collector on this machine", "log.otlp.endpoint"},
		{"not a URL", `endpoint = "collector:4318"`, "is not an http(s) URL", "log.otlp.endpoint"},
		{"grpc scheme", `endpoint = "grpc://127.0.0.1:4317"`, "is not an http(s) URL", "log.otlp.endpoint"},
		{"no endpoint", `headers = { "x-api-key" = "k" }`, "missing key \"endpoint\"", "log.otlp"},
		{"misspelt", "endpoint = \"https://c.example.com\"\nendpiont = 1", "did you mean", "log.otlp.endpiont"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("[log.otlp]\n"+tt.toml+"\n"), "permhost.toml", t.TempDir())
			if tt.key == "" {
				if err != nil || cfg.OTLP.Endpoint != tt.want {
					t.Fatalf("endpoint %q, %v; want %q", cfg.OTLP.Endpoint, err, tt.want)
				}
				return
			}
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.want) {
				t.Fatalf("got %v, want %s: %s", err, tt.key, tt.want)
			}
		})
	}
	cfg, err := config.Parse([]byte("[log.otlp]\nendpoint = \"https://c.example.com\"\nheaders = { \"x-api-key\" = \"k\" }\n"), "permhost.toml", t.TempDir())
	if err != nil || cfg.OTLP.Headers["x-api-key"] != "k" {
		t.Fatalf("headers %v, %v", cfg.OTLP.Headers, err)
	}
}
