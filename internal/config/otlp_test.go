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

// Spans go to the endpoint's /v1/traces unless traces_endpoint says
// otherwise or spans = false; a logs URL of another form needs one of the
// two.
func TestOTLPTracesConfig(t *testing.T) {
	tests := []struct {
		name, toml string
		want       string // the traces endpoint, or the mistake
		key        string
	}{
		{"base URL", `endpoint = "https://c.example.com:4318"`, "https://c.example.com:4318/v1/traces", ""},
		{"logs URL", `endpoint = "https://c.example.com/otlp/v1/logs"`, "https://c.example.com/otlp/v1/traces", ""},
		{"traces endpoint", "endpoint = \"https://c.example.com/logs\"\ntraces_endpoint = \"https://t.example.com/spans\"", "https://t.example.com/spans", ""},
		{"traces base URL", "endpoint = \"https://c.example.com\"\ntraces_endpoint = \"https://t.example.com\"", "https://t.example.com/v1/traces", ""},
		{"spans off", "endpoint = \"https://c.example.com\"\nspans = false", "", ""},
		{"spans off, custom logs URL", "endpoint = \"https://c.example.com/logs\"\nspans = false", "", ""},
		{"custom logs URL", `endpoint = "https://c.example.com/logs"`, "set traces_endpoint, or spans = false", "log.otlp.endpoint"},
		{"spans not a bool", "endpoint = \"https://c.example.com\"\nspans = \"no\"", "want true or false", "log.otlp.spans"},
		{"traces plain http, remote", "endpoint = \"https://c.example.com\"\ntraces_endpoint = \"http://t.example.com\"", "allowed only for a collector on this machine", "log.otlp.traces_endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("[log.otlp]\n"+tt.toml+"\n"), "permhost.toml", t.TempDir())
			if tt.key == "" {
				if err != nil || cfg.OTLP.TracesEndpoint != tt.want {
					t.Fatalf("traces endpoint %q, %v; want %q", cfg.OTLP.TracesEndpoint, err, tt.want)
				}
				return
			}
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.want) || ce.Line == 0 {
				t.Fatalf("got %v, want %s: %s", err, tt.key, tt.want)
			}
		})
	}
}
