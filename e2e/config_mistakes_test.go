package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigMistakesReportedAtOnce: a configuration with three mistakes,
// one of them a [plugin.config] key its plugin does not declare, stops
// permhost run and permhost proxy with exit 2 before the agent starts, and
// names all three with file and line. With the plugin's key the only
// mistake (found once the plugin has loaded) it is the same.
func TestConfigMistakesReportedAtOnce(t *testing.T) {
	t.Parallel()
	scripted := filepath.Join(repoRoot, "testdata", "wasm", "scripted.wasm") // declares configKeys decision, delay_ms
	three := fmt.Sprintf(`strategy = "sequental"

[[plugin]]
name = "scripted"
path = %q
timout = "5s"
[plugin.config]
decision = '{"outcome":"allow"}'
delay_mss = 0
`, scripted)
	one := strings.NewReplacer(`"sequental"`, `"sequential"`, "timout", "timeout").Replace(three)
	for _, tt := range []struct {
		name, config string
		want         []string // each at the start of a line of stderr
	}{
		{"three mistakes", three, []string{
			`permhost.toml:1: strategy: "sequental" is not one of sequential, race`,
			`permhost.toml:6: plugin[0].timout: unknown key (did you mean "timeout"?)`,
			`permhost.toml:9: plugin[0].config.delay_mss: unknown key for plugin "scripted" (did you mean "delay_ms"?)`,
		}},
		{"only the plugin's key", one, []string{
			`permhost.toml:9: plugin[0].config.delay_mss: unknown key for plugin "scripted" (did you mean "delay_ms"?)`,
		}},
	} {
		for _, command := range []string{"run", "proxy"} {
			t.Run(tt.name+"/"+command, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "permhost.toml"), []byte(tt.config), 0o600); err != nil {
					t.Fatal(err)
				}
				marker := filepath.Join(dir, "agent-started")
				args := []string{command, "--config", "permhost.toml"}
				if command == "run" {
					args = append(args, "--prompt", "x")
				}
				args = append(args, "--", "/bin/sh", "-c", "touch "+marker)
				cmd := exec.Command(permhostBin, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir)
				out, _ := cmd.CombinedOutput()
				if code := cmd.ProcessState.ExitCode(); code != 2 {
					t.Fatalf("exit %d, want 2\n%s", code, out)
				}
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("the agent started despite the mistakes")
				}
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				if len(lines) != len(tt.want) {
					t.Errorf("%d lines, want one per mistake:\n%s", len(lines), out)
				}
				for i, w := range tt.want {
					if want := "permhost " + command + ": " + w; i >= len(lines) || lines[i] != want {
						t.Errorf("line %d:\n got %q\nwant %q", i+1, lines[min(i, len(lines)-1)], want)
					}
				}
			})
		}
	}
}
