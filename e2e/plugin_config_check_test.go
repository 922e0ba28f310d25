package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// teamRulesTypo misspells a key inside a team-rules rule: team-rules
// declares "rules", so only the plugin itself can see the mistake.
const teamRulesTypo = `[[plugin]]
path = "std:team-rules"
[[plugin.config.rules]]
action = "allow"
family = "read"
[[plugin.config.rules]]
acton = "reject"
family = "shell"
`

// startsAgent runs permhost with args, then " -- /bin/sh -c 'touch
// MARKER'", in dir, and returns its exit status and output and whether the
// agent started.
func startsAgent(t *testing.T, dir string, args ...string) (code int, out string, started bool) {
	t.Helper()
	marker := filepath.Join(dir, "agent-started")
	cmd := exec.Command(permhostBin, append(args, "--", "/bin/sh", "-c", "touch "+marker)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir)
	b, _ := cmd.CombinedOutput()
	_, err := os.Stat(marker)
	return cmd.ProcessState.ExitCode(), string(b), err == nil
}

// TestPluginConfigMistakeStopsStart: a typo inside a team-rules rule
// stops permhost proxy and permhost check with exit 2 before the agent
// starts, as file, line, key and suggestion.
func TestPluginConfigMistakeStopsStart(t *testing.T) {
	t.Parallel()
	want := `permhost.toml:7: plugin[0].config.rules[1].acton: plugin "team-rules": unknown key (did you mean "action"?)`
	walled := strings.Replace(teamRulesTypo, "path = \"std:team-rules\"\n", "path = \"std:team-rules\"\nisolation = \"process\"\n", 1)
	for _, tt := range []struct{ name, command, file, want string }{
		{"proxy", "proxy", teamRulesTypo, want},
		{"check", "check", teamRulesTypo, want},
		// Behind the process wall the child's check reaches the parent.
		{"proxy, walled", "proxy", walled, strings.Replace(want, ":7:", ":8:", 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "permhost.toml"), []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, started := startsAgent(t, dir, tt.command, "--config", "permhost.toml")
			if code != 2 || started || strings.TrimSpace(out) != "permhost "+tt.command+": "+tt.want {
				t.Fatalf("exit %d, agent started %v, output:\n%s\nwant exit 2, no agent, and\npermhost %s: %s", code, started, out, tt.command, tt.want)
			}
		})
	}
}

// TestPluginNotWasmStopsStart: a plugin path that names a file which is
// not a WebAssembly module is the configuration's mistake (file and line),
// before the agent starts.
func TestPluginNotWasmStopsStart(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"proxy", "check"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o600)
			os.WriteFile(filepath.Join(dir, "permhost.toml"), []byte("[[plugin]]\nname = \"mine\"\npath = \"main.go\"\n"), 0o600)
			code, out, started := startsAgent(t, dir, command, "--config", "permhost.toml")
			want := "permhost " + command + ": permhost.toml:3: plugin[0].path: " + filepath.Join(dir, "main.go") + " is not a WebAssembly module"
			if code != 2 || started || !strings.HasPrefix(strings.TrimSpace(out), want) {
				t.Fatalf("exit %d, agent started %v, output:\n%s\nwant exit 2, no agent, and a line starting\n%s", code, started, out, want)
			}
		})
	}
}

// TestCheckProbesPlugins: permhost check --config runs one request through
// each plugin and reports the one that fails it (exit 1), naming the
// others' answers.
func TestCheckProbesPlugins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scripted := filepath.Join(repoRoot, "testdata", "wasm", "scripted.wasm")
	cfg := filepath.Join(dir, "permhost.toml")
	good := strings.Replace(teamRulesTypo, "acton", "action", 1)
	broken := "\n[[plugin]]\nname = \"broken\"\npath = \"" + scripted + "\"\n[plugin.config]\ndecision = '{\"outcome\":\"no-such-outcome\"}'\n"
	for _, tt := range []struct {
		name, file string
		code       int
		want       []string
	}{
		{"good", good, 0, []string{`plugins (one request, "git status", through each):`, "  team-rules: reject"}},
		{"one fails", good + broken, 1, []string{"  team-rules: reject", "  broken: FAILED: ", "fix it before relying on the policy"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.WriteFile(cfg, []byte(tt.file), 0o600)
			code, out, errOut := runCheck(t, "--config", cfg, "--", likeAgent(t), "-agent", "claude101")
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
