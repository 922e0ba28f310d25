package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/examples"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/profile"
)

// permhost init writes a starter that loads (its plugins are the standard
// ones, so nothing beside it is needed), never overwrites, and prints a
// Zed entry that launches the agent behind that file.
func TestInit(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		entry     string
		agentArgs []string
		env       map[string]string
		note      string
	}{
		{nil, "AGENT (permhost)", []string{"AGENT", "ARGS"}, map[string]string{}, "Replace AGENT and ARGS"},
		{[]string{"--agent", "claude"}, "Claude Code (permhost)", []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp@0.101.0"}, map[string]string{}, `{"permissions":{"defaultMode":"default"}}`},
		{[]string{"--agent", "codex-acp"}, "Codex (permhost)", []string{"npx", "-y", "@agentclientprotocol/codex-acp@2.6.0"}, map[string]string{"INITIAL_AGENT_MODE": "read-only"}, "INITIAL_AGENT_MODE=read-only"},
		{[]string{"--agent", "gemini"}, "Gemini CLI (permhost)", []string{"npx", "-y", "@google/gemini-cli@0.61.0", "--acp"}, map[string]string{}, `"Prompts for approval"`},
		{[]string{"--agent", "qwen"}, "Qwen Code (permhost)", []string{"npx", "-y", "@qwen-code/qwen-code@0.24.4", "--acp"}, map[string]string{}, `{"tools":{"approvalMode":"default"}}`},
		{[]string{"--", "/opt/my agent", "--acp"}, "my agent (permhost)", []string{"/opt/my agent", "--acp"}, map[string]string{}, "'/opt/my agent' --acp"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new", "dir")
			code, stdout, stderr := runMain(t, append([]string{"init", "--dir", dir}, tt.args...)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			path := filepath.Join(dir, "permhost.toml")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(data), string(examples.Config)) || !strings.HasPrefix(string(data), "# Written by `permhost init") {
				t.Errorf("the file is not the commented starter:\n%s", data)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatalf("the written config does not load: %v", err)
			}
			if len(cfg.Plugins) != 4 {
				t.Errorf("%d plugins", len(cfg.Plugins))
			}
			for _, p := range cfg.Plugins {
				if p.Std == "" {
					t.Errorf("plugin %s is not a standard plugin: %s", p.Name, p.Path)
				}
			}
			if !strings.Contains(stdout, "Wrote "+path) || !strings.Contains(stdout, tt.note) {
				t.Errorf("stdout lacks the path or %q:\n%s", tt.note, stdout)
			}
			// The snippet is the agent_servers member: inside braces it is a
			// JSON object Zed reads.
			start, end := strings.Index(stdout, `  "agent_servers"`), strings.Index(stdout, "\n  }\n")
			if start < 0 || end < start {
				t.Fatalf("no agent_servers snippet:\n%s", stdout)
			}
			var settings struct {
				AgentServers map[string]zedEntry `json:"agent_servers"`
			}
			if err := json.Unmarshal([]byte("{"+stdout[start:end+4]+"}"), &settings); err != nil {
				t.Fatalf("snippet: %v\n%s", err, stdout[start:end+4])
			}
			e, ok := settings.AgentServers[tt.entry]
			self, _ := os.Executable()
			wantArgs := append([]string{"proxy", "--config", path, "--"}, tt.agentArgs...)
			if !ok || e.Type != "custom" || e.Command != self || strings.Join(e.Args, "\x00") != strings.Join(wantArgs, "\x00") || len(e.Env) != len(tt.env) {
				t.Errorf("entry %q = %+v (present %v), want args %q env %v", tt.entry, e, ok, wantArgs, tt.env)
			}
			for k, v := range tt.env {
				if e.Env[k] != v {
					t.Errorf("env %s = %q, want %q", k, e.Env[k], v)
				}
			}

			// Never overwritten.
			if err := os.WriteFile(path, []byte("# mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr = runMain(t, "init", "--dir", dir)
			if b, _ := os.ReadFile(path); code != exitFail || !strings.Contains(stderr, "never overwrites") || string(b) != "# mine\n" {
				t.Errorf("second init: exit %d, stderr %q, file %q", code, stderr, b)
			}
		})
	}
}

// TestInitGovernedModesTruth: for an agent that starts in a mode that
// decides by itself, init says that the default [session] modes = "govern"
// moves the session, and asks for a settings edit only with modes = "pass".
func TestInitGovernedModesTruth(t *testing.T) {
	for _, agent := range []string{"claude", "qwen"} {
		_, stdout, _ := runMain(t, "init", "--dir", t.TempDir(), "--agent", agent)
		if strings.Contains(stdout, "sends no permission request") || !strings.Contains(stdout, `modes = "govern" (the default) permhost moves each new session`) ||
			!strings.Contains(stdout, `Only with modes = "pass" put`) {
			t.Errorf("--agent %s:\n%s", agent, stdout)
		}
	}
}

func TestInitDefaultDirAndMistakes(t *testing.T) {
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	code, stdout, _ := runMain(t, "init")
	want := filepath.Join(cfgHome, "permhost", "permhost.toml")
	if code != exitOK || !strings.Contains(stdout, "Wrote "+want) {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	// The default location is where proxy and run look without --config.
	if got := findConfig(""); got != want {
		t.Errorf("findConfig = %q, want the file init wrote, %q", got, want)
	}
	for _, args := range [][]string{{"init", "--agent", "cursor"}, {"init", "stray"}} {
		if code, _, stderr := runMain(t, args...); code != exitUsage || !strings.Contains(stderr, "permhost init:") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// The agents init and eval know are the ones the profiles are for: each
// one's recorded agentInfo is recognised as its profile.
func TestKnownAgentsMatchProfiles(t *testing.T) {
	for _, a := range knownAgents {
		if p := profile.Recognize(a.info.Name, a.info.Version); p.Name != a.profile {
			t.Errorf("%s: agentInfo %s@%s is read with profile %s, want %s", a.key, a.info.Name, a.info.Version, p.Name, a.profile)
		}
		if a.asks == "" || a.node == "" || len(a.command) == 0 {
			t.Errorf("%s: incomplete: %+v", a.key, a)
		}
	}
}
