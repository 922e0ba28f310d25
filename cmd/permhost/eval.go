package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/internal/stdplugins"
	"github.com/permhost/permhost/internal/units"
	"github.com/permhost/permhost/internal/worker"
	"github.com/permhost/permhost/policy"
	"github.com/permhost/permhost/sandbox"
)

func init() {
	commands["eval"] = command{summary: "run one plugin, or a configuration's whole chain, on one request and print the decision", run: runEval}
}

// exitPluginFailed is eval's status when the plugin failed to load or decide.
const exitPluginFailed = 3

// Bounds on what eval reads. The host applies the plugin's own, smaller
// input limit to the request afterwards.
const (
	maxRequestBytes = 64 << 20
	maxPluginBytes  = 256 << 20
)

const evalUsage = `usage: permhost eval [--plugin FILE|std:NAME] [flags] [REQUEST_FILE|-]
       permhost eval --plugin P (--command CMD | --write PATH | --read PATH | --fetch URL) [flags]
       permhost eval --config permhost.toml --plugin NAME ...
       permhost eval --config permhost.toml [flags] [REQUEST_FILE|-|--command CMD ...]

Runs one plugin on one request and prints one JSON object:

  {"decision": {...} or null, "failure": {"kind": ..., "message": ...} or null,
   "durationUs": N, "logs": [{"level": ..., "message": ...}]}

durationUs is the wall time of the call (of the load, when loading failed).
Exit status: 0 the plugin decided (or --print-request printed), 3 it failed
(to load or to decide; the failure kind says how), 2 a usage error (bad
flags, unreadable file, bad JSON, a request the proxy would not show plugins).

The plugin is a .wasm file, a standard plugin (std:team-rules; 'permhost
plugins' lists them), or with --config the [[plugin]] of that permhost.toml
with that name, with its module, pin, configuration and limits (flags given
explicitly win).

With --config and no --plugin, the request goes through the configuration's
whole chain as the proxy decides it once its plugins have loaded (the same
code: every plugin in layer order, failure policies, [session] and
permhost's own grants), before any person answers, and it prints

  {"decision": {"outcome": ..., "optionId": ..., "decidedBy": ..., "reason": ...,
                "fallback": ..., "askedBy": [...], "shown": [...]},
   "plugins": [each plugin's vote, as the decision log records it],
   "durationUs": N}

where an outcome of ask or abstain leaves the call to a person, who would
be shown the option ids "shown". Exit status: 0 decided, 3 a plugin failed
(to load or to decide), 2 a usage or configuration error. Nothing is
written to the decision log.

The request is read from REQUEST_FILE or, when it is "-" or absent, from
standard input; an input with "jsonrpc", "method" or "sessionId" at the top
is ACP, any other an abi.Request. It is one of:

- an ACP session/request_permission message, or its params, as an agent
  sends it, optionally after the session/update notifications the agent sent
  before it (JSON lines; the tool_call updates are merged as the proxy merges
  them). permhost builds the plugins' request exactly as the proxy would
  (the agent's profile reads the action, the shell analysis, the paths,
  what each option grants) in a session described by --agent, --cwd, --mode
  and --home;
- the shorthand --command, --write, --read or --fetch instead of a file: a
  request in claude-agent-acp's shape (--options codex or sdk for those
  agents' option sets; the same shorthand as the test files of permhost
  test), built the same way;
- an abi.Request as JSON ('permhost help abi'), taken as it is. A missing "abi"
  field means the host's version. For example:

  {"decisionId": "d1",
   "session": {"id": "s1", "cwd": "/home/me/project", "mode": "default"},
   "toolCall": {"id": "t1", "title": "rm -rf build", "kind": "execute",
                "rawInput": {"command": "rm -rf build"}},
   "options": [
     {"optionId": "allow", "name": "Allow", "kind": "allow_once", "durable": false},
     {"optionId": "reject", "name": "Reject", "kind": "reject_once", "durable": false}]}

With --print-request it prints the request the plugin would get and runs
no plugin (--plugin is then optional), indented for reading; with
--compact as the plugin gets it: compact JSON on one line, <, > and &
unescaped (the plugin's [plugin.config] is then added as "config"). With --bench N it makes one warm-up call, then N calls on the warm plugin, and
prints {"calls": N, "failures": F, "p50Us": ..., "p99Us": ..., "maxUs": ...}.

flags:
`

// evalFlags are eval's parsed command line.
type evalFlags struct {
	plugin     string
	sha256     string
	configJSON string
	configFile string
	timeout    units.Duration
	memory     units.Size
	initTime   units.Duration
	compile    units.Duration
	cacheDir   string
	isolation  string
	bench      int
	request    string // "-" for stdin

	// The session of an ACP request, and the shorthand.
	agent, cwd, mode, home            string
	command, write, read, fetch, opts string
	printRequest                      bool
	compact                           bool
	// set holds the flags given on the command line.
	set map[string]bool
}

// evalResult is what eval prints.
type evalResult struct {
	Decision   *abi.Decision `json:"decision"`
	Failure    *evalFailure  `json:"failure"`
	DurationUs int64         `json:"durationUs"`
	Logs       []host.Log    `json:"logs"`
}

type evalFailure struct {
	Kind    host.Kind `json:"kind"`
	Message string    `json:"message"`
}

// benchResult is what eval --bench prints.
type benchResult struct {
	Calls    int   `json:"calls"`
	Failures int   `json:"failures"`
	P50Us    int64 `json:"p50Us"`
	P99Us    int64 `json:"p99Us"`
	MaxUs    int64 `json:"maxUs"`
}

func runEval(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseEvalFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "permhost eval: %v\nRun 'permhost eval -h' for usage.\n", err)
		return exitUsage
	}
	req, err := f.readRequest(ctx, stdin)
	if err != nil {
		printError(stderr, "permhost eval", err)
		return exitUsage
	}
	if f.printRequest {
		write := writeJSON
		if f.compact {
			write = writeCompactJSON
			// As the plugin reads it: the host adds the plugin's
			// configuration to every request.
			if req.Config, err = f.pluginConfig(ctx); err != nil {
				printError(stderr, "permhost eval", err)
				return exitUsage
			}
		}
		if err := write(stdout, req); err != nil {
			fmt.Fprintf(stderr, "permhost eval: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	if f.chain() {
		return evalChain(ctx, f, req, stdout, stderr)
	}
	opts, err := f.pluginOptions(ctx)
	if err != nil {
		printError(stderr, "permhost eval", err)
		return exitUsage
	}

	start := time.Now()
	p, err := worker.LoadWhere(ctx, opts, f.isolation == config.IsolationProcess)
	if err != nil {
		if host.KindOf(err) == "" || errors.Is(err, host.ErrBadOptions) {
			// Not the plugin's fault: our own options were refused.
			printError(stderr, "permhost eval", err)
			return exitUsage
		}
		return printEval(stdout, stderr, host.Result{Err: err, Duration: time.Since(start)})
	}
	defer func() {
		// A runaway is stopped at its deadline; this bounds the wait anyway.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = p.Close(closeCtx)
	}()

	if f.bench > 0 {
		return bench(ctx, p, req, f.bench, stdout, stderr)
	}
	return printEval(stdout, stderr, p.Call(ctx, req))
}

// parseEvalFlags parses eval's flags; the one positional argument may come
// before, between or after them. The usage asked for with -h goes to help.
func parseEvalFlags(args []string, help io.Writer) (evalFlags, error) {
	f := evalFlags{
		timeout: units.Duration(sandbox.DefaultTimeout),
		memory:  units.Size(sandbox.DefaultMemoryBytes),
	}
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.plugin, "plugin", "", "the plugin: a `FILE` (.wasm), std:NAME, or with --config a [[plugin]] name")
	fs.StringVar(&f.sha256, "sha256", "", "pin the plugin to this hex `SHA256`")
	fs.StringVar(&f.configJSON, "config-json", "", "the plugin's configuration, a JSON `OBJECT`")
	fs.StringVar(&f.configFile, "config", "", "take the plugin named by --plugin from this permhost.toml `FILE`")
	fs.Var(&f.timeout, "timeout", "the per-call `DEADLINE`, e.g. 100ms")
	fs.Var(&f.memory, "memory", "the memory `LIMIT`, e.g. 32MiB")
	fs.Var(&f.initTime, "init-timeout", "the `DEADLINE` of making the plugin ready (start function, _initialize, permhost_abi); default max(10 × --timeout, 5s)")
	fs.Var(&f.compile, "compile-timeout", "the `DEADLINE` of compiling the plugin (default 2m)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "compile cache `DIR`; \"off\" for none (default: the user cache dir)")
	fs.IntVar(&f.bench, "bench", 0, "make `N` warm calls and print p50/p99 instead")
	fs.StringVar(&f.agent, "agent", "", "the agent of an ACP request: "+agentKeys()+", a profile name, or its agentInfo `NAME@VERSION` (default: none, the generic profile)")
	fs.StringVar(&f.cwd, "cwd", "", "the session's working `DIR` of an ACP request (default: the current directory)")
	fs.StringVar(&f.mode, "mode", "", "the session's current `MODE` id of an ACP request")
	fs.StringVar(&f.home, "home", "", "the home `DIR` for ~ (default: yours)")
	fs.StringVar(&f.command, "command", "", "shorthand: a request to run this shell `COMMAND`")
	fs.StringVar(&f.write, "write", "", "shorthand: a request to edit or write this `PATH`")
	fs.StringVar(&f.read, "read", "", "shorthand: a request to read this `PATH`")
	fs.StringVar(&f.fetch, "fetch", "", "shorthand: a request to fetch this `URL`")
	fs.StringVar(&f.opts, "options", "", "the shorthand's option set: claude (default), codex or sdk")
	fs.BoolVar(&f.printRequest, "print-request", false, "print the request the plugin would get; run no plugin")
	fs.BoolVar(&f.compact, "compact", false, "with --print-request: print it as the plugin reads it, compact JSON on one line (its config then added as \"config\")")
	fs.StringVar(&f.isolation, "isolation", config.IsolationInProcess, "where the plugin runs: `in-process` or process (a permhost child of its own)")

	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(help, evalUsage)
				fs.SetOutput(help)
				fs.PrintDefaults()
			}
			return f, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	shorthands := 0
	for _, n := range []string{"command", "write", "read", "fetch"} {
		if f.set[n] {
			shorthands++
		}
	}
	switch {
	case f.plugin == "" && !f.printRequest && f.configFile == "":
		return f, errors.New("--plugin is required (or --config, for its whole chain, or --print-request)")
	case f.compact && !f.printRequest:
		return f, errors.New("--compact is for --print-request")
	case len(positional) > 1:
		return f, fmt.Errorf("want at most one REQUEST_FILE, got %d: %q", len(positional), positional)
	case f.bench < 0:
		return f, fmt.Errorf("--bench %d: want a positive number of calls", f.bench)
	case shorthands > 1:
		return f, errors.New("give one of --command, --write, --read and --fetch")
	case shorthands == 1 && len(positional) > 0:
		return f, fmt.Errorf("give a REQUEST_FILE or a shorthand (--command ...), not both")
	case f.opts != "" && shorthands == 0:
		return f, errors.New("--options is for the shorthand (--command, --write, --read, --fetch)")
	case f.configFile != "" && f.set["config-json"]:
		return f, errors.New("give --config or --config-json, not both")
	case f.configFile != "" && f.set["sha256"]:
		return f, errors.New("--config pins the plugin itself; --sha256 is for --plugin FILE")
	case f.isolation != config.IsolationInProcess && f.isolation != config.IsolationProcess:
		return f, fmt.Errorf("--isolation %q: want %s or %s", f.isolation, config.IsolationInProcess, config.IsolationProcess)
	}
	if f.chain() {
		// The configuration sets each plugin's module, limits and isolation.
		for _, n := range []string{"bench", "timeout", "memory", "init-timeout", "compile-timeout", "isolation"} {
			if f.set[n] {
				return f, fmt.Errorf("--%s is for one plugin (--plugin); the configuration sets its plugins'", n)
			}
		}
	}
	f.request = "-"
	if len(positional) == 1 {
		f.request = positional[0]
	}
	if err := f.limits().Validate(); err != nil {
		return f, err
	}
	if f.timeout == 0 {
		return f, errors.New("--timeout 0: want a positive deadline")
	}
	return f, nil
}

// chain reports whether eval runs the whole chain of --config.
func (f evalFlags) chain() bool { return f.configFile != "" && f.plugin == "" && !f.printRequest }

// limits are the sandbox limits the flags set.
func (f evalFlags) limits() sandbox.Limits {
	return sandbox.Limits{Timeout: time.Duration(f.timeout), MemoryBytes: uint64(f.memory),
		InitTimeout: time.Duration(f.initTime), CompileTimeout: time.Duration(f.compile)}
}

// pluginOptions are the host's options for the plugin --plugin names. Every
// error is the user's.
func (f evalFlags) pluginOptions(ctx context.Context) (host.Options, error) {
	opts := host.Options{
		SHA256:   f.sha256,
		Limits:   f.limits(),
		CacheDir: f.cacheDir,
		PoolSize: 1,
	}
	var pc config.Plugin
	switch name, std := stdplugins.Name(f.plugin); {
	case f.configFile != "":
		cfg, err := loadConfig(ctx, f.configFile)
		if err != nil {
			return opts, err
		}
		found := false
		var names []string
		for _, p := range cfg.Plugins {
			names = append(names, p.Name)
			if p.Name == f.plugin || p.Path == f.plugin {
				pc, found = p, true
				break
			}
		}
		if !found {
			return opts, fmt.Errorf("--plugin %q: %s has no [[plugin]] of that name (it has %s)", f.plugin, f.configFile, strings.Join(names, ", "))
		}
		// The configured limits, but for the flags given.
		l, given := pc.SandboxLimits(), f.limits()
		if f.set["timeout"] {
			l.Timeout = given.Timeout
		}
		if f.set["memory"] {
			l.MemoryBytes = given.MemoryBytes
		}
		if f.set["init-timeout"] {
			l.InitTimeout = given.InitTimeout
		}
		if f.set["compile-timeout"] {
			l.CompileTimeout = given.CompileTimeout
		}
		opts.SHA256, opts.Limits, opts.Config = pc.SHA256, l, pc.Config
	case std:
		if _, err := stdplugins.SHA256(name); err != nil {
			return opts, fmt.Errorf("--plugin: %w", err)
		}
		pc = config.Plugin{Name: name, Path: f.plugin, Std: name}
	default:
		// Read here so that a missing file is a usage error, while garbage
		// in a file that exists is the plugin's failure.
		wasm, err := readBounded(f.plugin, maxPluginBytes)
		if err != nil {
			return opts, fmt.Errorf("--plugin: %w", err)
		}
		opts.Name, opts.Wasm = strings.TrimSuffix(filepath.Base(f.plugin), ".wasm"), wasm
	}
	if pc.Name != "" {
		opts.Name = pc.Name
		path, wasm := pc.Module()
		if wasm == nil {
			b, err := readBounded(path, maxPluginBytes)
			if err != nil {
				return opts, fmt.Errorf("--plugin: %w", err)
			}
			wasm = b
		}
		opts.Wasm = wasm
	}
	if f.configJSON != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f.configJSON), &obj); err != nil || obj == nil {
			return opts, fmt.Errorf("--config-json: want a JSON object, got %.80q", f.configJSON)
		}
		opts.Config = json.RawMessage(f.configJSON)
	}
	return opts, nil
}

// pluginConfig is the configuration the host hands the plugin with every
// request, compact as it does; nil when no plugin or none is given.
func (f evalFlags) pluginConfig(ctx context.Context) (json.RawMessage, error) {
	raw := json.RawMessage(f.configJSON)
	if f.plugin != "" {
		opts, err := f.pluginOptions(ctx)
		if err != nil {
			return nil, err
		}
		raw = opts.Config
	}
	if len(raw) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("--config-json: %w", err)
	}
	return b.Bytes(), nil
}

// readRequest reads or builds the request. Every error is the user's.
func (f evalFlags) readRequest(ctx context.Context, stdin io.Reader) (abi.Request, error) {
	setup, err := f.session()
	if err != nil {
		return abi.Request{}, err
	}
	if kind, value := f.shorthand(); kind != "" {
		sh := policy.Shorthand{Kind: kind, Options: f.opts, Cwd: setup.Cwd, Mode: setup.Mode, SessionID: "eval-session"}
		switch kind {
		case abi.KindExecute:
			sh.Command = value
		case abi.KindFetch:
			sh.URL = value
		default:
			sh.Path = value
		}
		pr, err := sh.Request()
		if err != nil {
			return abi.Request{}, fmt.Errorf("--options: %w", err)
		}
		return setup.Request(ctx, pr.Params, "eval-1")
	}

	name, data := "standard input", []byte(nil)
	if f.request == "-" {
		data, err = readAllBounded(stdin, maxRequestBytes)
	} else {
		name = f.request
		data, err = readBounded(f.request, maxRequestBytes)
	}
	if err != nil {
		return abi.Request{}, fmt.Errorf("request: %s: %w", name, err)
	}
	if !looksLikeACP(data) {
		for _, n := range []string{"agent", "cwd", "mode", "home"} {
			if f.set[n] {
				return abi.Request{}, fmt.Errorf("--%s describes the session of an ACP request or a shorthand; the abi.Request in %s carries its own", n, name)
			}
		}
		req, err := decodeEvalRequest(data)
		if err != nil {
			return abi.Request{}, fmt.Errorf("request in %s: %w", name, err)
		}
		return req, nil
	}
	req, err := setup.Request(ctx, data, "eval-1")
	if err != nil {
		return abi.Request{}, fmt.Errorf("request in %s: %w", name, err)
	}
	return req, nil
}

// shorthand returns the tool kind and value of the shorthand flag given.
func (f evalFlags) shorthand() (kind, value string) {
	switch {
	case f.set["command"]:
		return abi.KindExecute, f.command
	case f.set["write"]:
		return abi.KindEdit, f.write
	case f.set["read"]:
		return abi.KindRead, f.read
	case f.set["fetch"]:
		return abi.KindFetch, f.fetch
	}
	return "", ""
}

// session is the session an ACP request or a shorthand is built in.
func (f evalFlags) session() (policy.SessionSetup, error) {
	peer, err := agentPeer(f.agent)
	if err != nil {
		return policy.SessionSetup{}, err
	}
	s := policy.SessionSetup{Agent: peer, Cwd: f.cwd, Mode: f.mode, Home: f.home}
	if s.Cwd == "" {
		if s.Cwd, err = os.Getwd(); err != nil {
			return s, fmt.Errorf("--cwd: %w", err)
		}
	}
	if s.Cwd, err = filepath.Abs(s.Cwd); err != nil {
		return s, fmt.Errorf("--cwd: %w", err)
	}
	if !f.set["home"] {
		s.Home, _ = os.UserHomeDir() // as the proxy: "" when unknown
	}
	return s, nil
}

// errTooLarge is returned by readBounded for input over its limit.
var errTooLarge = errors.New("too large")

// readBounded reads a file of at most limit bytes: a plugin path that names
// /dev/zero or a huge file gets an error, not the machine's memory.
func readBounded(path string, limit int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return readAllBounded(file, limit)
}

func readAllBounded(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %s", errTooLarge, units.FormatSize(uint64(limit)))
	}
	return data, nil
}

// decodeEvalRequest parses one abi.Request, refusing unknown fields so that a
// misspelt field, or an ACP message given by mistake, is reported rather
// than silently dropped.
func decodeEvalRequest(data []byte) (abi.Request, error) {
	var req abi.Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("not an abi.Request: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, errors.New("not an abi.Request: data after the JSON object")
	}
	if req.ABI == (abi.Version{}) {
		req.ABI = abi.Current
	}
	return req, nil
}

// looksLikeACP reports whether data starts with an ACP message or params:
// a JSON object with "jsonrpc", "method" or "sessionId" at the top.
func looksLikeACP(data []byte) bool {
	var probe map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(data)).Decode(&probe) != nil {
		return false
	}
	_, rpc := probe["jsonrpc"]
	_, method := probe["method"]
	_, session := probe["sessionId"]
	return rpc || method || session
}

// printEval prints one call's result and returns eval's exit status.
func printEval(stdout, stderr io.Writer, r host.Result) int {
	out := evalResult{DurationUs: r.Duration.Microseconds(), Logs: r.Logs}
	if out.Logs == nil {
		out.Logs = []host.Log{}
	}
	code := exitOK
	if r.Err != nil {
		kind := host.KindOf(r.Err)
		if kind == "" {
			kind = host.KindLoad // never the case for host's errors; closed, not open
		}
		out.Failure = &evalFailure{Kind: kind, Message: r.Err.Error()}
		code = exitPluginFailed
	} else {
		d := r.Decision
		out.Decision = &d
	}
	if err := writeJSON(stdout, out); err != nil {
		fmt.Fprintf(stderr, "permhost eval: %v\n", err)
		return exitFail
	}
	return code
}

// bench makes one warm-up call and then n measured calls.
func bench(ctx context.Context, p host.Decider, req abi.Request, n int, stdout, stderr io.Writer) int {
	if r := p.Call(ctx, req); r.Err != nil {
		fmt.Fprintln(stderr, "permhost eval: the warm-up call failed")
		return printEval(stdout, stderr, r)
	}
	durations := make([]time.Duration, 0, n)
	failures := 0
	for range n {
		r := p.Call(ctx, req)
		if r.Err != nil {
			failures++
			if host.KindOf(r.Err) == host.KindCancelled && ctx.Err() != nil {
				break
			}
		}
		durations = append(durations, r.Duration)
	}
	slices.Sort(durations)
	out := benchResult{
		Calls:    len(durations),
		Failures: failures,
		P50Us:    percentile(durations, 50).Microseconds(),
		P99Us:    percentile(durations, 99).Microseconds(),
		MaxUs:    percentile(durations, 100).Microseconds(),
	}
	if err := writeJSON(stdout, out); err != nil {
		fmt.Fprintf(stderr, "permhost eval: %v\n", err)
		return exitFail
	}
	if failures > 0 {
		return exitPluginFailed
	}
	return exitOK
}

// percentile returns the nearest-rank p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// writeCompactJSON writes v as a plugin reads it: compact, <, > and &
// unescaped, one line.
func writeCompactJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(jsonOut{w})
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonOut is where permhost writes JSON a person may read on a terminal:
// what safetext escapes is written as \u escapes, the values unchanged.
// Each Write is one whole value (a json.Encoder's Encode).
type jsonOut struct{ w io.Writer }

func (j jsonOut) Write(p []byte) (int, error) {
	if _, err := j.w.Write(safetext.JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
