package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/permhost/permhost/examples"
)

func init() {
	commands["init"] = command{summary: "write a starter permhost.toml and print the editor entry to use it", run: runInit}
}

const initUsage = `usage: permhost init [--dir DIR] [--agent NAME] [-- AGENT [ARGS...]]

Writes a starter permhost.toml into DIR (default: $XDG_CONFIG_HOME/permhost,
else ~/.config/permhost: where permhost proxy and run look without
--config). It is the policy 'permhost demo' shows, commented: the standard
plugins inside permhost (protect-secrets, plan-mode, team-rules, explainer),
so it works wherever this binary does. An existing permhost.toml is never
overwritten.

Then prints the path and the entry to paste into Zed's settings.json for the
agent: --agent claude, codex, gemini or qwen (the versions permhost was
checked against, launched with npx), and what that agent needs so that it
asks at all; or your own agent's command after --. Without either the entry
has placeholders.

Exit status: 0 written; 1 the file exists or cannot be written; 2 usage.`

// zedEntry is one custom agent of Zed's agent_servers setting.
type zedEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func runInit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("init", stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), initUsage)
		fmt.Fprintln(fs.Output(), "\nflags:")
		fs.PrintDefaults()
	}
	dirFlag := fs.String("dir", "", "directory to write permhost.toml in (default: $XDG_CONFIG_HOME/permhost)")
	agentFlag := fs.String("agent", "", "the agent to print the editor entry for: "+agentKeys())
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "permhost init: "+format+"\n", a...)
		return exitUsage
	}
	agentCmd := fs.Args()
	if len(agentCmd) > 0 && !slices.Contains(args, "--") {
		return usageErr("unexpected arguments %q (an agent's own command goes after --)", agentCmd)
	}
	var agent knownAgent
	if *agentFlag != "" {
		a, ok := findAgent(*agentFlag)
		if !ok {
			return usageErr("--agent %q: want one of %s, or give the agent's command after --", *agentFlag, agentKeys())
		}
		agent = a
	}
	if len(agentCmd) > 0 {
		agent.command, agent.env = agentCmd, nil
		if agent.title == "" {
			agent.title = filepath.Base(agentCmd[0])
		}
	}

	dir := *dirFlag
	if dir == "" {
		d, err := defaultConfigDir()
		if err != nil {
			return usageErr("no --dir and no default: %v", err)
		}
		dir = d
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return usageErr("--dir: %v", err)
	}
	path := filepath.Join(dir, "permhost.toml")
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "permhost init:", err)
		return exitFail
	}
	if err := writeNew(path, starterConfig(path, self, *agentFlag, agent)); err != nil {
		fmt.Fprintln(stderr, "permhost init:", err)
		return exitFail
	}

	fmt.Fprintf(stdout, "Wrote %s: the standard plugins protect-secrets, plan-mode, team-rules and explainer\n", path)
	fmt.Fprintln(stdout, "(permhost plugins describes them; the file's comments say what to change).")
	fmt.Fprintln(stdout)
	name := "AGENT (permhost)"
	if agent.title != "" {
		name = agent.title + " (permhost)"
	}
	fmt.Fprintln(stdout, "For Zed, add this entry to \"agent_servers\" in settings.json (zed: open settings):")
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, zedSnippet(name, zedEntry{Type: "custom", Command: self, Args: proxyArgs(path, agent), Env: envOf(agent)}))
	fmt.Fprintln(stdout)
	switch {
	case agent.command == nil:
		fmt.Fprintf(stdout, "Replace AGENT and ARGS with your agent's command, or run permhost init --agent NAME (%s).\n", agentKeys())
	case agent.asks != "":
		fmt.Fprintln(stdout, agent.asks)
		fmt.Fprintf(stdout, "It needs Node.js %s (npx fetches the pinned version the first time).\n", agent.node)
	}
	fmt.Fprintf(stdout, "Any other ACP client launches: %s\n", shellJoin(append([]string{self}, proxyArgs(path, agent)...)))
	fmt.Fprintf(stdout, "\nSee what the policy decides, offline: %s demo --config %s\n", shellQuote(self), shellQuote(path))
	return exitOK
}

// defaultConfigDir is where permhost looks for permhost.toml without
// --config (findConfig).
func defaultConfigDir() (string, error) {
	if dir := os.Getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "permhost"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", "permhost"), nil
}

// writeNew writes data to a new file at path, never over an existing one.
func writeNew(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; permhost init never overwrites it (move it away, or give --dir)", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// starterConfig is examples/permhost.toml under a header that says how it
// was made and how to use it.
func starterConfig(path, self, agentFlag string, a knownAgent) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by `permhost init")
	if agentFlag != "" {
		b.WriteString(" --agent " + agentFlag)
	}
	b.WriteString("`.\n#\n")
	if a.command != nil {
		fmt.Fprintf(&b, "# The editor launches %s through permhost:\n#   %s\n", a.title,
			shellJoin(append([]string{self}, proxyArgs(path, a)...)))
		for _, k := range slices.Sorted(maps.Keys(a.env)) {
			fmt.Fprintf(&b, "# with %s=%s in its environment.\n", k, a.env[k])
		}
		for _, line := range wrap(a.asks, 76) {
			b.WriteString("# " + line + "\n")
		}
		b.WriteString("#\n")
	}
	b.WriteString("# Every key of this file:            permhost help config\n")
	fmt.Fprintf(&b, "# What this policy decides, offline:  permhost demo --config %s\n", shellQuote(path))
	fmt.Fprintf(&b, "# One request through the policy:     permhost eval --config %s --command 'rm -rf ~'\n", shellQuote(path))
	fmt.Fprintf(&b, "# One request through one plugin:     permhost eval --config %s --plugin team-rules --command 'rm -rf ~'\n", shellQuote(path))
	b.WriteString("# A standard plugin's documentation:  permhost plugins team-rules\n")
	b.WriteString("#\n")
	b.Write(examples.Config)
	return b.Bytes()
}

// proxyArgs are permhost's arguments to launch agent a behind the policy.
func proxyArgs(config string, a knownAgent) []string {
	cmd := a.command
	if cmd == nil {
		cmd = []string{"AGENT", "ARGS"}
	}
	return append([]string{"proxy", "--config", config, "--"}, cmd...)
}

func envOf(a knownAgent) map[string]string {
	if a.env == nil {
		return map[string]string{}
	}
	return a.env
}

// zedSnippet is the "agent_servers" member with one entry, indented as it
// sits at the top of settings.json, each list on one line.
func zedSnippet(name string, e zedEntry) string {
	j := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = j(a)
	}
	var env []string
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		env = append(env, j(k)+": "+j(e.Env[k]))
	}
	return fmt.Sprintf("  \"agent_servers\": {\n    %s: {\n      \"type\": %s,\n      \"command\": %s,\n      \"args\": [%s],\n      \"env\": {%s}\n    }\n  }\n",
		j(name), j(e.Type), j(e.Command), strings.Join(args, ", "), strings.Join(env, ", "))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_~", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// wrap breaks s into lines of at most width, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
