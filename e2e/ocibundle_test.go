package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/registrytest"
)

// TestOCIBundleThroughBinary (#22): through the binary, a team's signed
// bundle is pushed to a real registry with `permhost bundle push` and a
// developer's configuration names it as oci://…; its plugin decides
// (permhost replay). A newer revision pushed is taken; an older one
// re-pushed under the tag is refused and the last good kept; with the
// registry down a fresh start decides with the cached bundle and says so
// on stderr, once.
func TestOCIBundleThroughBinary(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	home := t.TempDir()
	env := append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(home, "state"), "XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		"DOCKER_CONFIG="+filepath.Join(home, "docker"))
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(permhostBin, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	key := filepath.Join(home, "team.key")
	code, pub, errOut := run("bundle", "keygen", "--out", key)
	if code != 0 {
		t.Fatalf("keygen: exit %d: %s", code, errOut)
	}
	pub = strings.TrimSpace(pub)
	ref := "oci://" + reg.Addr + "/team/acme:stable"
	wasm, err := os.ReadFile(wasmFixture("scripted"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	// push writes revision rev, whose plugin rejects saying so, signs it
	// (unless sign is false) and pushes it under the tag.
	push := func(rev int, sign bool) (int, string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "acme")
		os.Mkdir(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "scripted.wasm"), wasm, 0o644)
		os.WriteFile(filepath.Join(dir, "bundle.toml"), fmt.Appendf(nil, "name = \"acme\"\nrevision = %d\nlayer = \"team\"\n[[plugin]]\nname = \"scripted\"\npath = \"scripted.wasm\"\nsha256 = %q\n[plugin.config]\ndecision = '{\"outcome\":\"reject\",\"reason\":\"revision %d\"}'\n",
			rev, hex.EncodeToString(sum[:]), rev), 0o644)
		if sign {
			if code, _, errOut := run("bundle", "sign", "--key", key, dir); code != 0 {
				t.Fatalf("sign: exit %d: %s", code, errOut)
			}
		}
		code, out, errOut := run("bundle", "push", "--key", pub, "--plain-http", dir, ref)
		return code, out + errOut
	}
	if code, out := push(1, false); code == 0 || !strings.Contains(out, "not signed") {
		t.Fatalf("unsigned bundle pushed: exit %d: %s", code, out)
	}
	if code, out := push(1, true); code != 0 || !strings.Contains(out, "pushed bundle acme revision 1 to "+ref+" (sha256:") {
		t.Fatalf("push: exit %d: %s", code, out)
	}

	cfg := filepath.Join(home, "permhost.toml")
	os.WriteFile(cfg, fmt.Appendf(nil, "[[bundle]]\npath = %q\nplain_http = true\nrefresh = \"10m\"\ntrusted_keys = [%q]\n", ref, pub), 0o600)
	transcript := filepath.Join(repoRoot, "testdata", "transcripts", "claude-allow.jsonl")
	// replay returns the reason of every decision today, and stderr.
	replay := func() ([]string, string) {
		t.Helper()
		code, out, errOut := run("replay", "--json", "--config", cfg, transcript)
		if code != 0 {
			t.Fatalf("replay: exit %d: %s", code, errOut)
		}
		var reasons []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var r struct{ Today, DecidedBy, Reason string }
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("replay line %q: %v", line, err)
			}
			if r.Today != "" {
				if r.Today != "reject" || r.DecidedBy != "acme/scripted" {
					t.Fatalf("today %s by %q, want reject by acme/scripted: %s", r.Today, r.DecidedBy, line)
				}
				reasons = append(reasons, r.Reason)
			}
		}
		if len(reasons) == 0 {
			t.Fatalf("no decision replayed:\n%s", out)
		}
		return reasons, errOut
	}
	decidedBy := func(rev int, reasons []string) {
		t.Helper()
		for _, r := range reasons {
			if r != fmt.Sprintf("revision %d", rev) {
				t.Fatalf("decided with %q, want revision %d", r, rev)
			}
		}
	}
	reasons, _ := replay()
	decidedBy(1, reasons)

	if code, out := push(2, true); code != 0 {
		t.Fatalf("push 2: %s", out)
	}
	reasons, _ = replay()
	decidedBy(2, reasons)

	// Revision 1 re-pushed under the tag: refused, the cached revision 2
	// decides.
	if code, out := push(1, true); code != 0 {
		t.Fatalf("push 1 again: %s", out)
	}
	reasons, errOut = replay()
	decidedBy(2, reasons)
	if !strings.Contains(errOut, "bundle from registry refused; using the cached last good revision") || !strings.Contains(errOut, "lower than one already accepted") {
		t.Fatalf("rollback not reported:\n%s", errOut)
	}

	// The registry down: a fresh start decides with the cached bundle.
	reg.Kill()
	reasons, errOut = replay()
	decidedBy(2, reasons)
	if n := strings.Count(errOut, "bundle registry unreachable; using the cached bundle"); n != 1 {
		t.Fatalf("outage reported %d times, want once:\n%s", n, errOut)
	}
}

// TestOCIBundlePlainHTTPLoopbackOnly: plain HTTP to a registry that is not
// on this machine is a configuration mistake, and a push flag refused.
func TestOCIBundlePlainHTTPLoopbackOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "permhost.toml")
	os.WriteFile(cfg, []byte("[[bundle]]\npath = \"oci://registry.example.com/team/acme:stable\"\nplain_http = true\n"), 0o600)
	code, _, errOut := runPermhostIn(t, dir, nil, "replay", "--config", cfg, filepath.Join(repoRoot, "testdata", "transcripts", "claude-allow.jsonl"))
	if code != 2 || !strings.Contains(errOut, "plain HTTP is allowed only for a loopback registry") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut = runPermhostIn(t, dir, nil, "bundle", "push", "--plain-http", dir, "oci://registry.example.com/team/acme:stable")
	if code != 2 || !strings.Contains(errOut, "--plain-http is allowed only for a loopback registry") {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
}
