package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/edkey"
	"github.com/permhost/permhost/policy"
)

// TestLogCommand: keygen, then verify's exit statuses: 0 intact, 1
// tampered (naming the entry), 2 usage.
func TestLogCommand(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "log.key")
	code, out, errOut := runCmd(t, "log", "keygen", "--out", keyFile)
	if code != exitOK || !strings.HasPrefix(out, edkey.Prefix) {
		t.Fatalf("keygen: %d %q %q", code, out, errOut)
	}
	pub := strings.TrimSpace(out)
	if code, _, _ := runCmd(t, "log", "keygen", "--out", keyFile); code != exitFail {
		t.Errorf("keygen over an existing key: exit %d, want 1", code)
	}
	key, err := edkey.ReadPrivate(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "decisions.jsonl")
	dlog, err := policy.OpenConfiguredLog(&config.Config{LogPath: logPath, LogKey: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d-1", "d-2", "d-3"} {
		dlog.Write(policy.LogEntry{DecisionID: id, Outcome: "selected"})
	}
	dlog.Close()

	if code, out, errOut := runCmd(t, "log", "verify", "--key", pub, logPath); code != exitOK || !strings.HasPrefix(out, "ok: 3 entries") {
		t.Errorf("verify: %d %q %q", code, out, errOut)
	}
	if code, out, _ := runCmd(t, "log", "verify", "--key", keyFile, logPath); code != exitOK || !strings.Contains(out, "signed by a trusted key") {
		t.Errorf("verify --key FILE: %d %q", code, out)
	}
	other, _, _ := edkey.Generate()
	if code, out, _ := runCmd(t, "log", "verify", "--key", other, logPath); code != exitFail || !strings.Contains(out, "untrusted") {
		t.Errorf("verify with another key: %d %q", code, out)
	}
	b, _ := os.ReadFile(logPath)
	os.WriteFile(logPath, bytes.Replace(b, []byte(`"d-2","time"`), []byte(`"d-5","time"`), 1), 0o600)
	if code, out, _ := runCmd(t, "log", "verify", "--key", pub, logPath); code != exitFail || !strings.Contains(out, "decisions.jsonl:") || !strings.Contains(out, "modified: entry seq 2 (decisionId d-5) was modified") {
		t.Errorf("verify of an edited log: %d %q", code, out)
	}
	for _, args := range [][]string{{"log"}, {"log", "verify"}, {"log", "verify", "--key", "ed25519:x", logPath}, {"log", "verify", filepath.Join(dir, "gone")}, {"log", "sign"}} {
		if code, _, _ := runCmd(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}
