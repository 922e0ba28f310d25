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
	"github.com/permhost/permhost/internal/units"
	"github.com/permhost/permhost/sandbox"
)

func init() {
	commands["eval"] = command{summary: "run one plugin on one request and print its decision", run: runEval}
}

// exitPluginFailed is eval's status when the plugin failed to load or decide.
const exitPluginFailed = 3

// Bounds on what eval reads. The host applies the plugin's own, smaller
// input limit to the request afterwards.
const (
	maxRequestBytes = 64 << 20
	maxPluginBytes  = 256 << 20
)

const evalUsage = `usage: permhost eval --plugin FILE [flags] [REQUEST_FILE|-]

Runs one plugin on one request and prints one JSON object:

  {"decision": {...} or null, "failure": {"kind": ..., "message": ...} or null,
   "durationUs": N, "logs": [{"level": ..., "message": ...}]}

durationUs is the wall time of the call (of the load, when loading failed).
Exit status: 0 the plugin decided, 3 it failed (to load or to decide; the
failure kind says how), 2 a usage error (bad flags, unreadable file, bad JSON).

The request is an abi.Request as JSON (docs/abi.md), read from REQUEST_FILE or,
when it is "-" or absent, from standard input. A missing "abi" field means the
host's version. For example:

  {"decisionId": "d1",
   "session": {"id": "s1", "cwd": "/home/me/project", "mode": "default"},
   "toolCall": {"id": "t1", "title": "rm -rf build", "kind": "execute",
                "rawInput": {"command": "rm -rf build"}},
   "options": [
     {"optionId": "allow", "name": "Allow", "kind": "allow_once", "durable": false},
     {"optionId": "reject", "name": "Reject", "kind": "reject_once", "durable": false}]}

With --bench N it makes one warm-up call, then N calls on the warm plugin, and
prints {"calls": N, "failures": F, "p50Us": ..., "p99Us": ..., "maxUs": ...}.

flags:
`

// evalFlags are eval's parsed command line.
type evalFlags struct {
	plugin     string
	sha256     string
	configJSON string
	timeout    units.Duration
	memory     units.Size
	initTime   units.Duration
	compile    units.Duration
	cacheDir   string
	bench      int
	request    string // "-" for stdin
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
	opts, req, err := f.prepare(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "permhost eval: %v\n", err)
		return exitUsage
	}

	start := time.Now()
	p, err := host.Load(ctx, opts)
	if err != nil {
		if host.KindOf(err) == "" || errors.Is(err, host.ErrBadOptions) {
			// Not the plugin's fault: our own options were refused.
			fmt.Fprintf(stderr, "permhost eval: %v\n", err)
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
	fs.StringVar(&f.plugin, "plugin", "", "the plugin `FILE` (.wasm); required")
	fs.StringVar(&f.sha256, "sha256", "", "pin the plugin to this hex `SHA256`")
	fs.StringVar(&f.configJSON, "config-json", "", "the plugin's configuration, a JSON `OBJECT`")
	fs.Var(&f.timeout, "timeout", "the per-call `DEADLINE`, e.g. 100ms")
	fs.Var(&f.memory, "memory", "the memory `LIMIT`, e.g. 32MiB")
	fs.Var(&f.initTime, "init-timeout", "the `DEADLINE` of making the plugin ready (start function, _initialize, permhost_abi); default max(10 × --timeout, 5s)")
	fs.Var(&f.compile, "compile-timeout", "the `DEADLINE` of compiling the plugin (default 2m)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "compile cache `DIR`; \"off\" for none (default: the user cache dir)")
	fs.IntVar(&f.bench, "bench", 0, "make `N` warm calls and print p50/p99 instead")

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
	switch {
	case f.plugin == "":
		return f, errors.New("--plugin is required")
	case len(positional) > 1:
		return f, fmt.Errorf("want at most one REQUEST_FILE, got %d: %q", len(positional), positional)
	case f.bench < 0:
		return f, fmt.Errorf("--bench %d: want a positive number of calls", f.bench)
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

// limits are the sandbox limits the flags set.
func (f evalFlags) limits() sandbox.Limits {
	return sandbox.Limits{Timeout: time.Duration(f.timeout), MemoryBytes: uint64(f.memory),
		InitTimeout: time.Duration(f.initTime), CompileTimeout: time.Duration(f.compile)}
}

// prepare reads the plugin and the request. Every error is the user's.
func (f evalFlags) prepare(stdin io.Reader) (host.Options, abi.Request, error) {
	opts := host.Options{
		Name:     strings.TrimSuffix(filepath.Base(f.plugin), ".wasm"),
		SHA256:   f.sha256,
		Limits:   f.limits(),
		CacheDir: f.cacheDir,
		PoolSize: 1,
	}
	// Read here so that a missing file is a usage error, while garbage in a
	// file that exists is the plugin's failure.
	wasm, err := readBounded(f.plugin, maxPluginBytes)
	if err != nil {
		return opts, abi.Request{}, fmt.Errorf("--plugin: %w", err)
	}
	opts.Wasm = wasm
	if f.configJSON != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f.configJSON), &obj); err != nil || obj == nil {
			return opts, abi.Request{}, fmt.Errorf("--config-json: want a JSON object, got %.80q", f.configJSON)
		}
		opts.Config = json.RawMessage(f.configJSON)
	}

	name, data := "standard input", []byte(nil)
	if f.request == "-" {
		data, err = readAllBounded(stdin, maxRequestBytes)
	} else {
		name = f.request
		data, err = readBounded(f.request, maxRequestBytes)
	}
	if err != nil {
		return opts, abi.Request{}, fmt.Errorf("request: %s: %w", name, err)
	}
	req, err := decodeEvalRequest(data)
	if err != nil {
		return opts, abi.Request{}, fmt.Errorf("request in %s: %w", name, err)
	}
	return opts, req, nil
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
		if looksLikeACP(data) {
			return req, fmt.Errorf("this looks like an ACP message; eval takes an abi.Request (see 'permhost eval -h'): %w", err)
		}
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

func looksLikeACP(data []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	_, rpc := probe["jsonrpc"]
	_, session := probe["sessionId"]
	return rpc || session
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
func bench(ctx context.Context, p *host.Plugin, req abi.Request, n int, stdout, stderr io.Writer) int {
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
