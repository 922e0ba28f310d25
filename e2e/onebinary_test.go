package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBinaryAlone: the permhost binary, copied alone into an empty
// directory and run with an empty HOME and a PATH that holds nothing (no
// go, no node, no make), writes a starter configuration with `permhost
// init`, runs the demo through it and through the default policy, and
// lists its standard plugins and prints their documentation and the
// references; a configuration's mistakes (a typo inside a team-rules rule,
// a plugin file that is not WebAssembly) stop it before the agent starts:
// everything a user needs is inside the binary. Nothing reaches the
// network: the demo's agent is permhost itself.
//
// The compile cache starts empty too (under the empty HOME), except in a
// -race build, whose compiler is ~10x slower: there four cold Go plugins
// could outlast the configuration's load_wait, so it shares the e2e cache.
func TestBinaryAlone(t *testing.T) {
	root := t.TempDir()
	binDir, home, path, work := filepath.Join(root, "bin"), filepath.Join(root, "home"), filepath.Join(root, "empty-path"), filepath.Join(root, "work")
	for _, d := range []string{binDir, home, path, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(binDir, "permhost")
	copyFile(t, permhostBin, bin)
	if entries, _ := os.ReadDir(binDir); len(entries) != 1 {
		t.Fatalf("the binary's directory holds %d files", len(entries))
	}
	env := []string{"HOME=" + home, "PATH=" + path}
	if raceEnabled {
		env = append(env, "XDG_CACHE_HOME="+os.Getenv("XDG_CACHE_HOME"))
	}
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = work, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("permhost %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	for _, tool := range []string{"go", "node", "npm", "make", "clang"} {
		cmd := exec.Command("/bin/sh", "-c", "command -v "+tool)
		cmd.Env = env
		if out, err := cmd.Output(); err == nil {
			t.Fatalf("%s is on the test's PATH: %s", tool, out)
		}
	}

	stdout, _ := run("init", "--agent", "gemini")
	cfg := filepath.Join(home, ".config", "permhost", "permhost.toml")
	if !strings.Contains(stdout, "Wrote "+cfg) || !strings.Contains(stdout, `"command": "`+bin+`"`) || !strings.Contains(stdout, `"@google/gemini-cli@0.61.0", "--acp"`) {
		t.Fatalf("init printed:\n%s", stdout)
	}

	// The demo through the configuration init wrote, then through the
	// default policy: the same decisions.
	stdout, stderr := run("demo", "--config", cfg)
	checkDemoDecisions(t, stderr)
	if !strings.Contains(stderr, "policy "+cfg) || !strings.Contains(stderr, "No decision log kept") || !strings.Contains(stdout, "src/app.ts is patched") {
		t.Errorf("demo --config:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	_, stderr = run("demo")
	checkDemoDecisions(t, stderr)
	m := regexp.MustCompile(`(?m)^6 decisions logged to (/\S+\.jsonl) `).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("the demo names no decision log:\n%s", stderr)
	}
	os.Remove(m[1])
	if !strings.Contains(stderr, "the standard plugins inside permhost") {
		t.Errorf("the demo does not say it runs the standard plugins:\n%s", stderr)
	}

	stdout, _ = run("plugins", "--json")
	var plugins []struct {
		Name        string
		Description string
		ConfigKeys  []string
		Error       string
	}
	if err := json.Unmarshal([]byte(stdout), &plugins); err != nil {
		t.Fatalf("plugins --json: %v\n%s", err, stdout)
	}
	var names []string
	for _, p := range plugins {
		names = append(names, p.Name)
		if p.Description == "" || p.Error != "" {
			t.Errorf("plugin %s: %+v", p.Name, p)
		}
	}
	if got := strings.Join(names, " "); got != "explainer no-force-push plan-mode protect-secrets readonly-as team-rules" {
		t.Errorf("standard plugins %q", got)
	}

	// The docs are in the binary: each standard plugin's README (for
	// team-rules, the rule syntax) and the references, their links turned
	// into the commands that print them.
	stdout, _ = run("plugins", "team-rules")
	for _, want := range []string{"std:team-rules (version ", "## Keys of a rule", "| `piped_into` |", "(`permhost help agents`)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plugins team-rules lacks %q:\n%s", want, stdout)
		}
	}
	for topic, want := range map[string]string{"config": "[[plugin]]", "test-file": "[[case]]", "abi": "permhost_check_config", "agents": "claude-agent-acp"} {
		if stdout, _ = run("help", topic); !strings.Contains(stdout, want) || strings.Contains(stdout, "```") {
			t.Errorf("help %s: %d bytes, without %q or with a code fence", topic, len(stdout), want)
		}
	}

	// Mistakes are caught before the agent starts, as file, line, key
	// and suggestion: a typo inside a team-rules rule (only the plugin
	// knows its rules' keys), and a plugin file that is not WebAssembly.
	os.WriteFile(filepath.Join(work, "typo.toml"), []byte(teamRulesTypo), 0o600)
	os.WriteFile(filepath.Join(work, "notwasm.toml"), []byte("[[plugin]]\nname = \"mine\"\npath = \"mine.wasm\"\n"), 0o600)
	os.WriteFile(filepath.Join(work, "mine.wasm"), []byte("#!/bin/sh\n"), 0o600)
	marker := filepath.Join(work, "agent-started")
	for _, tt := range []struct{ config, want string }{
		{"typo.toml", `permhost proxy: typo.toml:7: plugin[0].config.rules[1].acton: plugin "team-rules": unknown key (did you mean "action"?)`},
		{"notwasm.toml", "permhost proxy: notwasm.toml:3: plugin[0].path: " + filepath.Join(work, "mine.wasm") + " is not a WebAssembly module"},
	} {
		cmd := exec.Command(bin, "proxy", "--config", tt.config, "--", "/bin/sh", "-c", "touch "+marker)
		cmd.Dir, cmd.Env = work, env
		out, _ := cmd.CombinedOutput()
		_, err := os.Stat(marker)
		if code := cmd.ProcessState.ExitCode(); code != 2 || err == nil || !strings.HasPrefix(strings.TrimSpace(string(out)), tt.want) {
			t.Errorf("proxy --config %s: exit %d, agent started %v, output:\n%s\nwant exit 2, no agent, and\n%s", tt.config, code, err == nil, out, tt.want)
		}
	}

	// One request through a standard plugin, with the rules of the file
	// init wrote.
	stdout, _ = run("eval", "--config", cfg, "--plugin", "team-rules", "--agent", "gemini", "--command", "rm -rf ~", "--timeout", "30s")
	if !strings.Contains(stdout, `"outcome": "reject"`) || !strings.Contains(stdout, "destructive or privileged commands") {
		t.Errorf("eval of rm -rf ~:\n%s", stdout)
	}
	// And through the whole policy of that file, each plugin's vote shown
	// (30 s per call, as --timeout above).
	patient := filepath.Join(work, "patient.toml")
	os.WriteFile(patient, withCallTimeout(t, cfg, "30s"), 0o600)
	stdout, _ = run("eval", "--config", patient, "--agent", "gemini", "--command", "rm -rf ~")
	var chain struct {
		Decision struct{ Outcome, DecidedBy string }
		Plugins  []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(stdout), &chain); err != nil || chain.Decision.Outcome != "reject" || chain.Decision.DecidedBy != "team-rules" || len(chain.Plugins) != 4 {
		t.Errorf("eval --config of rm -rf ~ (%v):\n%s", err, stdout)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
