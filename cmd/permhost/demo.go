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

const demoUsage = `usage: permhost demo [--plugins DIR] [--log FILE|off] [--json]

Runs a scripted agent session through 'permhost run' with the default policy
(examples/permhost.toml: protect-secrets, plan-mode, team-rules, explainer),
offline and in a throwaway project directory, and shows each decision as a
user would see it. The agent asks to run npm test, rm -rf ~, write .env,
edit src/app.ts, read ~/.ssh/id_rsa and fetch a URL; nothing is executed.

--plugins names the directory of the built example plugins (default:
$PERMHOST_PLUGINS_DIR, else the plugins directory beside the permhost
binary, else ./build/plugins); 'make demo' builds them first.

The decision log (one JSON line per decision, what permhost.toml's [log]
path writes) is kept after the demo: in --log FILE (appended to), by
default in a new file in the temporary directory, whose name the demo
prints last; --log off keeps none.`

func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), demoUsage) }
	pluginsFlag := fs.String("plugins", "", "directory of the built example plugins")
	asJSON := fs.Bool("json", false, "print the run's JSON events instead of the transcript")
	logFlag := fs.String("log", "", `keep the decision log in FILE ("off": none; default: a new file in the temporary directory)`)
	if code, ok := parseFlags(fs, args, stdout); !ok {
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
	logPath, err := demoLogPath(*logFlag)
	if err != nil {
		fmt.Fprintln(stderr, "permhost demo:", err)
		return exitUsage
	}
	logLines := countLines(logPath)
	cfg := bytes.ReplaceAll(examples.Config, []byte(examples.PluginsDir), []byte(plugins+string(filepath.Separator)))
	if logPath != "" {
		const unset = `path = ""   # e.g. "decisions.jsonl"`
		if !bytes.Contains(cfg, []byte(unset)) {
			fmt.Fprintln(stderr, "permhost demo: examples/permhost.toml has no [log] line "+unset)
			return exitFail
		}
		cfg = bytes.Replace(cfg, []byte(unset), []byte("path = "+tomlString(logPath)), 1)
	}
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
	switch n := countLines(logPath) - logLines; {
	case logPath == "":
		fmt.Fprintln(stderr, "\nNo decision log kept (--log off).")
	case n > 0:
		fmt.Fprintf(stderr, "\n%s logged to %s (one JSON line each, as permhost.toml's [log] path writes them).\n", count(n, "decision"), logPath)
	case *logFlag == "":
		os.Remove(logPath) // made for this run, and empty
		fmt.Fprintln(stderr, "\nNo decision was logged.")
	default:
		fmt.Fprintf(stderr, "\nNo decision was logged to %s.\n", logPath)
	}
	return code
}

// demoLogPath is where the demo keeps its decision log: flagValue made
// absolute, a new file in the temporary directory when it is empty, ""
// for "off". The log outlives the demo's throwaway directory, so that the
// file the demo names at the end is there to read.
func demoLogPath(flagValue string) (string, error) {
	switch flagValue {
	case "off":
		return "", nil
	case "":
		f, err := os.CreateTemp("", "permhost-demo-decisions-*.jsonl")
		if err != nil {
			return "", fmt.Errorf("decision log: %w", err)
		}
		f.Close()
		return f.Name(), nil
	}
	abs, err := filepath.Abs(flagValue)
	if err != nil {
		return "", fmt.Errorf("--log: %w", err)
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return "", fmt.Errorf("--log %s is a directory", abs)
	}
	return abs, nil
}

// countLines is the number of lines in the file at path; 0 when it cannot
// be read.
func countLines(path string) int {
	if path == "" {
		return 0
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
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
