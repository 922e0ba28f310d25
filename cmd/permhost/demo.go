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
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/demoagent"
)

func init() {
	commands["demo"] = command{summary: "a scripted agent session through the default policy, offline", run: runDemo}
	commands["demo-agent"] = command{summary: "the scripted ACP agent of demo, on stdin/stdout", run: runDemoAgent, hidden: true}
}

const demoPrompt = "Run the tests, clean up the build cache, store the API token and fix the retry bug."

const demoUsage = `usage: permhost demo [--config FILE | --plugins DIR] [--log FILE|off] [--json]

Runs a scripted agent session through 'permhost run' with the default policy
(the starter 'permhost init' writes: protect-secrets, plan-mode, team-rules,
explainer, the standard plugins inside permhost), offline and in a throwaway project
directory, and shows each decision as a user would see it. The agent asks to
run npm test, rm -rf ~, write .env, edit src/app.ts, read ~/.ssh/id_rsa and
fetch a URL; nothing is executed. It needs nothing but this binary.

--config FILE runs the session through that configuration instead (the one
'permhost init' wrote, say); its own [log] path is the decision log.
--plugins DIR runs the default policy with the plugins built from the
sources in DIR ('make build-plugins' writes build/plugins) instead of the
standard ones.

The decision log (one JSON line per decision, what permhost.toml's [log]
path writes) is kept after the demo: in --log FILE (appended to), by
default in a new file in the temporary directory, whose name the demo
prints last; --log off keeps none.`

func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), demoUsage) }
	configFlag := fs.String("config", "", "run the session through this configuration instead of the default policy")
	pluginsFlag := fs.String("plugins", "", "directory of example plugins built from the sources, used instead of the standard ones")
	asJSON := fs.Bool("json", false, "print the run's JSON events instead of the transcript")
	logFlag := fs.String("log", "", `keep the decision log in FILE ("off": none; default: a new file in the temporary directory)`)
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	usageErr := func(msg string) int {
		fmt.Fprintln(stderr, "permhost demo:", msg)
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(fmt.Sprintf("takes no arguments, got %q", fs.Args()))
	case *configFlag != "" && *pluginsFlag != "":
		return usageErr("give --config or --plugins, not both")
	case *configFlag != "" && *logFlag != "":
		return usageErr("--config keeps its own [log] path; --log is for the default policy")
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "permhost demo:", err)
		return exitFail
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

	var cfgPath, policy, logPath string
	logLines := 0
	if *configFlag != "" {
		// The configuration as it is: its relative paths resolve against
		// its own directory, and it keeps its own decision log.
		if cfgPath, err = filepath.Abs(*configFlag); err != nil {
			return usageErr(err.Error())
		}
		cfg, err := config.Load(cfgPath)
		if err != nil {
			printError(stderr, "permhost demo", err)
			return exitUsage
		}
		policy, logPath = cfgPath, cfg.LogPath
		logLines = countLines(logPath)
	} else {
		cfg := examples.Config
		policy = "the default one (the standard plugins inside permhost)"
		if *pluginsFlag != "" {
			plugins, err := demoPlugins(*pluginsFlag)
			if err != nil {
				return usageErr(err.Error())
			}
			cfg = examples.WithPluginsDir(cfg, plugins)
			policy = "the default one with the plugins in " + plugins
		}
		if logPath, err = demoLogPath(*logFlag); err != nil {
			return usageErr(err.Error())
		}
		logLines = countLines(logPath)
		if logPath != "" {
			const unset = `path = ""   # e.g. "decisions.jsonl"`
			if !bytes.Contains(cfg, []byte(unset)) {
				fmt.Fprintln(stderr, "permhost demo: the default policy has no [log] line "+unset)
				return exitFail
			}
			cfg = bytes.Replace(cfg, []byte(unset), []byte("path = "+tomlString(logPath)), 1)
		}
		cfgPath = filepath.Join(dir, "permhost.toml")
		if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
			fmt.Fprintln(stderr, "permhost demo:", err)
			return exitFail
		}
	}
	fmt.Fprintf(stderr, "permhost demo: a scripted agent in %s, policy %s\n", project, policy)
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
	case logPath == "" && *configFlag != "":
		fmt.Fprintf(stderr, "\nNo decision log kept (%s has no [log] path).\n", cfgPath)
	case logPath == "":
		fmt.Fprintln(stderr, "\nNo decision log kept (--log off).")
	case n > 0:
		fmt.Fprintf(stderr, "\n%s logged to %s (one JSON line each, as permhost.toml's [log] path writes them).\n", count(n, "decision"), logPath)
	case *logFlag == "" && *configFlag == "":
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

// countLines is the number of decisions in the log at path (its lines but
// the seals of a signed log, docs/audit-log.md); 0 when it cannot be read.
func countLines(path string) int {
	if path == "" {
		return 0
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n")) - bytes.Count(b, []byte(`,"seal":{"time":`))
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

// demoPlugins checks that dir holds the default policy's plugins, built
// from the sources, and returns it absolute.
func demoPlugins(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--plugins: %w", err)
	}
	var missing []string
	for _, n := range []string{"protect-secrets.wasm", "plan-mode.wasm", "team-rules.wasm", "explainer.wasm"} {
		if _, err := os.Stat(filepath.Join(abs, n)); err != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("--plugins %s: no %s there ('make build-plugins' builds them into build/plugins)", abs, strings.Join(missing, ", "))
	}
	return abs, nil
}

func runDemoAgent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	home, _ := os.UserHomeDir()
	if err := demoagent.Run(ctx, stdin, stdout, home); err != nil {
		fmt.Fprintln(stderr, "permhost demo-agent:", err)
		return exitFail
	}
	return exitOK
}
