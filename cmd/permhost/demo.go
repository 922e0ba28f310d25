package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/permhost/permhost/examples"
	"github.com/permhost/permhost/internal/demoagent"
)

func init() {
	commands["demo"] = command{summary: "a scripted agent session through the default policy, offline", run: runDemo}
	commands["demo-agent"] = command{summary: "the scripted ACP agent of demo, on stdin/stdout", run: runDemoAgent, hidden: true}
}

const demoPrompt = "Run the tests, clean up the build cache, store the API token and fix the retry bug."

const demoUsage = `usage: permhost demo [--plugins DIR] [--json]

Runs a scripted agent session through 'permhost run' with the default policy
(examples/permhost.toml: protect-secrets, plan-mode, team-rules, explainer),
offline and in a throwaway project directory, and shows each decision as a
user would see it. The agent asks to run npm test, rm -rf ~, write .env,
edit src/app.ts, read ~/.ssh/id_rsa and fetch a URL; nothing is executed.

--plugins names the directory of the built example plugins (default:
$PERMHOST_PLUGINS_DIR, else the plugins directory beside the permhost
binary, else ./build/plugins); 'make demo' builds them first.`

func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, demoUsage) }
	pluginsFlag := fs.String("plugins", "", "directory of the built example plugins")
	asJSON := fs.Bool("json", false, "print the run's JSON events instead of the transcript")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "permhost demo:", err)
		return exitFail
	}
	plugins, err := demoPlugins(*pluginsFlag, self)
	if err != nil {
		fmt.Fprintln(stderr, "permhost demo:", err)
		return exitUsage
	}
	dir, err := os.MkdirTemp("", "permhost-demo-")
	if err != nil {
		fmt.Fprintln(stderr, "permhost demo:", err)
		return exitFail
	}
	defer os.RemoveAll(dir)
	project := filepath.Join(dir, "project")
	for name, content := range map[string]string{
		"package.json": `{"name":"demo","scripts":{"test":"node --test"}}` + "\n",
		"src/app.ts":   "export const retries = 0;\n",
		"README.md":    "# demo project\n",
	} {
		p := filepath.Join(project, name)
		err := os.MkdirAll(filepath.Dir(p), 0o755)
		if err == nil {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "permhost demo:", err)
			return exitFail
		}
	}
	cfg := bytes.ReplaceAll(examples.Config, []byte(examples.PluginsDir), []byte(plugins+string(filepath.Separator)))
	cfg = bytes.Replace(cfg, []byte(`path = ""   # e.g. "decisions.jsonl"`), []byte(`path = "decisions.jsonl"`), 1)
	cfgPath := filepath.Join(dir, "permhost.toml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		fmt.Fprintln(stderr, "permhost demo:", err)
		return exitFail
	}
	fmt.Fprintf(stderr, "permhost demo: a scripted agent in %s, policy examples/permhost.toml, plugins from %s\n", project, plugins)
	fmt.Fprintf(stderr, "prompt: %s\n\n", demoPrompt)
	runArgs := []string{"run", "--config", cfgPath, "--cwd", project, "--prompt", demoPrompt}
	if *asJSON {
		runArgs = append(runArgs, "--json")
	}
	runArgs = append(runArgs, "--", self, "demo-agent")
	cmd := exec.CommandContext(ctx, self, runArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, stdout, stderr
	err = cmd.Run()
	code := exitOK
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		fmt.Fprintln(stderr, "permhost demo:", err)
		return exitFail
	}
	if log, err := os.ReadFile(filepath.Join(dir, "decisions.jsonl")); err == nil {
		fmt.Fprintf(stderr, "\n%d decisions logged (one JSON line each, as in permhost.toml's [log] path).\n", bytes.Count(log, []byte("\n")))
	}
	return code
}

// demoPlugins finds the built example plugins.
func demoPlugins(flagValue, self string) (string, error) {
	candidates := []string{flagValue}
	if flagValue == "" {
		candidates = []string{os.Getenv("PERMHOST_PLUGINS_DIR"), filepath.Join(filepath.Dir(self), "plugins"), filepath.Join("build", "plugins")}
	}
	need := []string{"protect-secrets.wasm", "plan-mode.wasm", "team-rules.wasm", "explainer.wasm"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		abs, err := filepath.Abs(c)
		if err != nil {
			continue
		}
		ok := true
		for _, n := range need {
			if _, err := os.Stat(filepath.Join(abs, n)); err != nil {
				ok = false
			}
		}
		if ok {
			return abs, nil
		}
	}
	return "", fmt.Errorf("the example plugins (%s) are not built: run 'make plugins' (or 'make demo'), or pass --plugins DIR", strings.Join(need, ", "))
}

func runDemoAgent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	home, _ := os.UserHomeDir()
	if err := demoagent.Run(ctx, stdin, stdout, home); err != nil {
		fmt.Fprintln(stderr, "permhost demo-agent:", err)
		return exitFail
	}
	return exitOK
}
