package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/internal/stdplugins"
	"github.com/permhost/permhost/policy"
)

func init() {
	commands["test"] = command{summary: "run the test cases of plugins or bundles", run: runTest}
}

const testUsage = `usage: permhost test [-v] [--cache-dir DIR] PATH...

Each PATH is a test file (TOML), a bundle directory (its bundle.toml lists its
test files, run against the bundle's whole chain), or a directory whose *.toml
files are test files. A test file names its plugin (plugin = "x.wasm",
relative to the file, or "std:NAME" for a standard plugin) unless it belongs
to a bundle, and holds [[case]]s:

  [[case]]
  name = "rm -rf is rejected"
  kind = "execute"              # shorthand: a tool kind with command, path or url
  command = "rm -rf ~"          # options = "claude" (default) | "codex" | "sdk"
  expect = "reject"             # allow reject cancel ask abstain select fallback
  expect_option = "reject"      # the option id answered (optional)

A case may give request = "file.json" (an ACP session/request_permission
message or its params) or an inline [case.request] table instead of the
shorthand, and timeout = "500ms" (default 10s).

Prints each failure with the decision that happened, then "N passed, M
failed". Exit status: 0 all passed, 1 a case failed, 2 a usage or file error.
'permhost help test-file' describes every key, with a full example.`

func runTest(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("test", stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), testUsage) }
	verbose := fs.Bool("v", false, "also print passing cases")
	cacheDir := fs.String("cache-dir", "", `compile cache directory ("off" for none)`)
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, testUsage)
		return exitUsage
	}
	home, _ := os.UserHomeDir()
	passed, failed := 0, 0
	usageErr := false
	for _, path := range fs.Args() {
		suites, err := collectSuites(path)
		if err != nil {
			printError(stderr, "permhost test", err)
			usageErr = true
			continue
		}
		for _, s := range suites {
			results, err := s.run(ctx, *cacheDir, home)
			var mistakes config.ErrorList
			switch {
			case errors.As(err, &mistakes):
				printError(stderr, "permhost test", err) // each names its file and line
				usageErr = true
				continue
			case err != nil:
				printError(stderr, "permhost test: "+s.file.Path, err)
				usageErr = true
				continue
			}
			for _, r := range results {
				if r.Pass {
					passed++
					if *verbose {
						fmt.Fprintf(stdout, "ok   %s: %s (%s)\n", safetext.Terminal(r.File), safetext.Terminal(r.Name), r.Duration.Round(10_000))
					}
					continue
				}
				failed++
				// The problem quotes the plugins' verdicts.
				fmt.Fprintf(stdout, "FAIL %s: %s: %s\n", safetext.Terminal(r.File), safetext.Terminal(r.Name), safetext.Terminal(r.Problem))
			}
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	switch {
	case failed > 0:
		return exitFail
	case usageErr:
		return exitUsage
	}
	return exitOK
}

// suite is a test file with the chain it runs against.
type suite struct {
	file   *policy.TestFile
	bundle *config.BundleManifest // nil for a plugin's own test file
}

func collectSuites(path string) ([]suite, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		tf, err := policy.LoadTestFile(path)
		if err != nil {
			return nil, err
		}
		return []suite{{file: tf}}, nil
	}
	if _, err := os.Stat(filepath.Join(path, config.BundleFile)); err == nil {
		b, err := bundle.Load(path, nil, nil)
		if err != nil {
			return nil, err
		}
		if len(b.Tests) == 0 {
			return nil, fmt.Errorf("bundle %s lists no tests", path)
		}
		var out []suite
		for _, t := range b.Tests {
			tf, err := policy.LoadTestFile(t)
			if err != nil {
				return nil, err
			}
			out = append(out, suite{file: tf, bundle: b})
		}
		return out, nil
	}
	matches, _ := filepath.Glob(filepath.Join(path, "*.toml"))
	var out []suite
	for _, m := range matches {
		tf, err := policy.LoadTestFile(m)
		if err != nil {
			return nil, err
		}
		out = append(out, suite{file: tf})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no test files (*.toml) and no bundle.toml", path)
	}
	return out, nil
}

// run loads the suite's plugins and runs its cases.
func (s suite) run(ctx context.Context, cacheDir, home string) ([]policy.CaseResult, error) {
	var pcs []config.Plugin
	switch {
	case s.file.Plugin != "":
		p := config.Plugin{Name: strings.TrimSuffix(filepath.Base(s.file.Plugin), ".wasm"),
			Path: s.file.Plugin, Timeout: config.DefaultTimeout, Memory: config.DefaultMemory,
			FailurePolicy: config.FailureClosed, Layer: config.LayerUser}
		if name, std := stdplugins.Name(p.Path); std {
			if _, err := stdplugins.SHA256(name); err != nil {
				return nil, fmt.Errorf("%s: plugin: %w", s.file.Path, err)
			}
			p.Name, p.Std = name, name
		} else if !filepath.IsAbs(p.Path) {
			p.Path = filepath.Join(filepath.Dir(s.file.Path), p.Path)
		}
		if s.bundle != nil {
			for _, bp := range s.bundle.Plugins {
				if bp.Path == p.Path {
					p = bp
				}
			}
		}
		if s.file.Config != nil {
			b, err := json.Marshal(s.file.Config)
			if err != nil {
				return nil, err
			}
			p.Config = b
		}
		pcs = []config.Plugin{p}
	case s.bundle != nil:
		pcs = s.bundle.Plugins
	default:
		return nil, errors.New(`no plugin = "..." and not part of a bundle`)
	}
	var members []host.Member
	for _, pc := range pcs {
		path, wasm := pc.Module()
		p, err := host.Load(ctx, host.Options{Name: pc.Name, Path: path, Wasm: wasm, SHA256: pc.SHA256, Config: pc.Config,
			Limits: pc.SandboxLimits(), CacheDir: cacheDir})
		if err != nil {
			return nil, err
		}
		defer p.Close(context.WithoutCancel(ctx))
		if s.file.Config != nil {
			// The file's [config]: a key its plugin does not declare is the
			// file's mistake, not a failure of every case.
			code := config.Plugin{Name: pc.Name, Config: pc.Config}
			mistakes := config.CheckConfigKeys(code, p.Info().ConfigKeys)
			if problems := p.ConfigProblems(); len(problems) > 0 {
				// What the plugin's own check found, at the lines of the
				// file's [config].
				in := config.Plugin{Name: pc.Name, File: s.file.Path, ConfigKeyLines: map[string]int{}}
				if data, err := os.ReadFile(s.file.Path); err == nil {
					for k, n := range config.KeyLines(data) {
						if rel, ok := strings.CutPrefix(k, "config."); ok {
							in.ConfigKeyLines[rel] = n
						}
					}
				}
				for _, pr := range problems {
					mistakes = append(mistakes, config.PluginProblem(in, pr.Key, pr.Message, pr.Suggestion))
				}
			}
			if err := config.Errors(mistakes); err != nil {
				return nil, err
			}
		}
		members = append(members, host.Member{Name: pc.Name, Layer: pc.Layer, Policy: host.FailurePolicy(pc.FailurePolicy), Plugin: p})
	}
	chain, err := host.NewChain(host.ChainOptions{Members: members, QuarantineAfter: 1 << 30})
	if err != nil {
		return nil, err
	}
	return policy.RunTests(ctx, s.file, chain, home), nil
}
