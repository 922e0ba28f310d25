package config

import (
	"strings"
	"testing"
)

func TestApproveTable(t *testing.T) {
	tests := []struct {
		name, toml string
		want       Approve
		err        string
	}{
		{"none", "", Approve{}, ""},
		{"https", "[approve]\nwebhook = \"https://ntfy.sh/t\"\n", Approve{Webhook: "https://ntfy.sh/t"}, ""},
		{"details", "[approve]\nwebhook = \"https://ntfy.sh/t\"\nwebhook_details = true\n", Approve{Webhook: "https://ntfy.sh/t", WebhookDetails: true}, ""},
		{"plain http elsewhere", "[approve]\nwebhook = \"http://example.com/t\"\n", Approve{}, "approve.webhook: want an https:// URL"},
		{"unknown key", "[approve]\nwebhok = \"https://x\"\n", Approve{}, "approve.webhok: unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.toml), "p.toml", t.TempDir())
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("err %v, want %q", err, tt.err)
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err == "" && cfg.Approve != tt.want:
				t.Fatalf("Approve = %+v, want %+v", cfg.Approve, tt.want)
			}
		})
	}
}
