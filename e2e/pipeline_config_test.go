package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPipelineConfigErrors: a mistake in permhost.toml stops `permhost
// proxy` with exit status 2 and `file:line: key: message` on stderr before
// the agent starts (the agent would create a marker file).
func TestPipelineConfigErrors(t *testing.T) {
	t.Parallel()
	good := wasmFixture("good")
	plugin := func(lines ...string) string {
		return "[[plugin]]\nname = \"p\"\npath = \"" + good + "\"\n" + strings.Join(lines, "\n") + "\n"
	}
	for _, tc := range []struct {
		name string
		toml string
		// at is a fragment of the faulty line; key and msg what stderr
		// must name.
		at, key, msg string
	}{
		{"unknown key", "strategy = \"race\"\nstratgy = \"race\"\n", "stratgy", "stratgy", `unknown key (did you mean "strategy"?)`},
		{"unknown plugin key", plugin("timeout = \"1s\"", "timout = \"1s\""), "timout", "plugin[0].timout", `did you mean "timeout"?`},
		{"bad duration", plugin("timeout = \"100 ms\""), "timeout", "plugin[0].timeout", `"100 ms" is not a duration`},
		{"duration out of range", "person_timeout = \"-1s\"\n", "person_timeout", "person_timeout", "out of range"},
		{"bad size", plugin("memory = \"lots\""), "memory", "plugin[0].memory", `"lots" is not a size`},
		{"missing plugin file", "[[plugin]]\nname = \"p\"\npath = \"no-such-plugin.wasm\"\n", "no-such-plugin", "plugin[0].path", "no-such-plugin.wasm"},
		{"unknown failure policy", plugin("failure_policy = \"open\""), "failure_policy", "plugin[0].failure_policy", `"open" is not one of closed, abstain, monitor`},
		{"unknown strategy", "strategy = \"fastest\"\n", "strategy", "strategy", `"fastest" is not one of sequential, race`},
		{"unknown layer", plugin("layer = \"root\""), "layer", "plugin[0].layer", `"root" is not one of admin, team, user`},
		{"bad sha256 pin", plugin("sha256 = \"abc\""), "sha256", "plugin[0].sha256", "not a sha256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := filepath.Join(dir, "bad.toml")
			if err := os.WriteFile(cfg, []byte(tc.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			line := 0
			for i, l := range strings.Split(tc.toml, "\n") {
				if strings.Contains(l, tc.at) {
					line = i + 1
				}
			}
			marker := filepath.Join(dir, "agent-started")
			cmd := exec.Command(permhostBin, "proxy", "--config", cfg, "--", "/bin/sh", "-c", "echo started > "+marker)
			var stderr bytes.Buffer
			cmd.Stdin = strings.NewReader("")
			cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if code := pxWaitExit(t, cmd, pipeWait); code != 2 {
				t.Errorf("exit status %d, want 2; stderr:\n%s", code, stderr.String())
			}
			want := fmt.Sprintf("%s:%d: %s: ", cfg, line, tc.key)
			if got := stderr.String(); !strings.Contains(got, want) || !strings.Contains(got, tc.msg) {
				t.Errorf("stderr:\n%s\nwant %q and %q", got, want, tc.msg)
			}
			// permhost waits for an agent it started, so the marker would
			// be there by now.
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the agent ran despite the configuration error")
			}
		})
	}
}
