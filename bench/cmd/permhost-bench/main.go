// Command permhost-bench runs every comparison of BENCHMARKS.md side by side
// in one invocation and writes the table. `make bench` runs it from the
// repository root:
//
//	permhost-bench [-permhost build/permhost] [-baseline OTHER] [-plugins build/plugins] [-runs 5] [-only STEPS] [-out BENCHMARKS.md]
//
// Sections it cannot measure come from the files that make soak, make fuzz
// and make load-web write (build/soak.md, build/fuzz.tsv,
// build/load-web.md) when present, else from the previous -out.
//
// Process-level rows (passthrough against a raw pipe, cold start, peak RSS,
// decisions through the proxy) are measured here with real processes over
// real pipes; in-process rows come from the benchmarks of package bench
// (`go test -bench`), whose output is parsed. Each row is repeated -runs
// times; the table shows the median and the spread (min–max).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/permhost/permhost/bench"
)

type runner struct {
	permhost string // absolute path of the binary under test
	baseline string // -baseline's binary, or ""
	plugins  string // built example plugins
	root     string // repository root
	tmp      string
	agent    string // benchagent
	rawpipe  string
	runs     int
	env      []string
	log      io.Writer
}

func main() {
	var r runner
	permhost := flag.String("permhost", "build/permhost", "permhost `binary` to measure")
	plugins := flag.String("plugins", "build/plugins", "`directory` of the built example plugins")
	out := flag.String("out", "BENCHMARKS.md", "markdown `file` to write")
	soak := flag.String("soak", "build/soak.md", "soak figures written by `make soak`, included when present")
	fuzz := flag.String("fuzz", "build/fuzz.tsv", "fuzzing outcomes recorded by `make fuzz`, included when present")
	loadWeb := flag.String("load-web", "build/load-web.md", "the web approver's figures from `make load-web`, included when present (else the previous table's section is kept)")
	flag.IntVar(&r.runs, "runs", 5, "repetitions of each measurement")
	samples := flag.String("samples", "build/bench-samples.json", "`file` to keep every sample in, for -render")
	baseline := flag.String("baseline", "", "another permhost `binary` (an earlier build, say) whose passthrough runs side by side with -permhost's in P1")
	only := flag.String("only", "", "run only the steps whose name matches this `regexp` (the table then lacks the others)")
	render := flag.String("render", "", "measure nothing: write -out from the samples `file` of an earlier run (after changing the notes, or with a new soak)")
	flag.Parse()
	r.log = os.Stderr
	if *render != "" {
		rep, err := loadSamples(*render)
		if err == nil {
			rep.keep(*soak, *fuzz, *loadWeb, *out)
			err = os.WriteFile(*out, []byte(rep.markdown()), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "permhost-bench:", err)
			os.Exit(1)
		}
		return
	}
	if *baseline != "" {
		var err error
		if r.baseline, err = filepath.Abs(*baseline); err == nil {
			_, err = os.Stat(r.baseline)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "permhost-bench: -baseline:", err)
			os.Exit(2)
		}
		relays = append(relays, baselineRelay)
	}
	if err := r.setup(*permhost, *plugins); err != nil {
		fmt.Fprintln(os.Stderr, "permhost-bench:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(r.tmp)
	start := time.Now()
	rep := &report{started: start, load0: loadavg(), runs: r.runs}
	steps := []struct {
		name string
		fn   func(*report) error
	}{
		{"passthrough throughput", r.passthroughThroughput},
		{"passthrough latency", r.passthroughLatency},
		{"cold start", r.coldStart},
		{"proxy decisions and peak RSS", r.proxyDecisions},
		{"go test -bench ./bench", r.goBench},
		{"standard plugins", r.stdPlugins},
		{"decision log", r.decisionLog},
	}
	onlyRE, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "permhost-bench: -only:", err)
		os.Exit(2)
	}
	for _, s := range steps {
		if !onlyRE.MatchString(s.name) {
			continue
		}
		r.logf("== %s", s.name)
		// A failed step is reported in the table; the others still run.
		if err := s.fn(rep); err != nil {
			r.logf("%s FAILED: %v", s.name, err)
			rep.failures = append(rep.failures, fmt.Sprintf("%s (%v)", s.name, err))
		}
		saveSamples(*samples, rep) // a later failure keeps what is measured
	}
	rep.elapsed = time.Since(start)
	rep.load1 = loadavg()
	rep.keep(*soak, *fuzz, *loadWeb, *out)
	if err := saveSamples(*samples, rep); err != nil {
		r.logf("keeping the samples: %v", err)
	}
	if err := os.WriteFile(*out, []byte(rep.markdown()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "permhost-bench:", err)
		os.Exit(1)
	}
	r.logf("wrote %s in %v", *out, rep.elapsed.Round(time.Second))
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "permhost-bench: "+format+"\n", args...)
}

func (r *runner) setup(permhost, plugins string) error {
	var err error
	if r.root, err = os.Getwd(); err != nil {
		return err
	}
	if r.permhost, err = filepath.Abs(permhost); err != nil {
		return err
	}
	if r.plugins, err = filepath.Abs(plugins); err != nil {
		return err
	}
	if _, err := os.Stat(r.permhost); err != nil {
		return fmt.Errorf("%v (make build)", err)
	}
	if _, err := os.Stat(filepath.Join(r.plugins, "team-rules.wasm")); err != nil {
		return fmt.Errorf("%v (make plugins)", err)
	}
	if r.tmp, err = os.MkdirTemp("", "permhost-bench-"); err != nil {
		return err
	}
	r.agent = filepath.Join(r.tmp, "benchagent")
	r.rawpipe = filepath.Join(r.tmp, "rawpipe")
	for bin, pkg := range map[string]string{r.agent: "./bench/cmd/benchagent", r.rawpipe: "./bench/cmd/rawpipe"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	// Nothing of the user's: no default configuration, caches in tmp.
	for _, d := range []string{"config", "cache", "state"} {
		os.MkdirAll(filepath.Join(r.tmp, d), 0o700)
	}
	r.env = append(os.Environ(),
		"XDG_CONFIG_HOME="+filepath.Join(r.tmp, "config"),
		"XDG_CACHE_HOME="+filepath.Join(r.tmp, "cache"),
		"XDG_STATE_HOME="+filepath.Join(r.tmp, "state"))
	return nil
}

// writeConfig writes a permhost.toml with the given plugins and returns its path.
func (r *runner) writeConfig(name string, plugins ...string) (string, error) {
	var b strings.Builder
	for _, p := range plugins {
		b.WriteString(p)
		b.WriteString("\n")
	}
	path := filepath.Join(r.tmp, name+".toml")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

func (r *runner) pluginTOML(name, config string) string {
	s := fmt.Sprintf("[[plugin]]\nname = %q\npath = %q\n", name, filepath.Join(r.plugins, name+".wasm"))
	if config != "" {
		s += "[plugin.config]\n" + config + "\n"
	}
	return s
}

func (r *runner) goodTOML() string {
	return fmt.Sprintf("[[plugin]]\nname = \"good\"\npath = %q\n", filepath.Join(r.root, "testdata", "wasm", "good.wasm"))
}

const teamRulesTOML = `[[plugin.config.rules]]
action = "allow"
kind = "execute"
command = [["npm", "test"], ["git", "status"]]
[[plugin.config.rules]]
action = "reject"
command = ["rm", "-rf"]
[[plugin.config.rules]]
action = "ask"
kind = "fetch"
domains = ["*.example.com"]`

// proc is a started process with its stdin, a line reader on its stdout,
// and the time just before it started.
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     *bufio.Reader
	stderr  bytes.Buffer
	started time.Time
}

func (r *runner) start(argv ...string) (*proc, error) {
	p := &proc{cmd: exec.Command(argv[0], argv[1:]...)}
	p.cmd.Env = r.env
	p.cmd.Dir = r.tmp
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewReaderSize(stdout, 1<<20)
	p.started = time.Now()
	return p, p.cmd.Start()
}

// finish closes stdin and waits, with a bound.
func (p *proc) finish() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { io.Copy(io.Discard, p.out); done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%v: %s", err, lastLines(p.stderr.String(), 5))
		}
		return nil
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		return errors.New("did not exit within 30 s of its stdin closing")
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// relays are the ways a line gets from the agent to the editor in P1: the
// raw pipe, permhost, and with -baseline the baseline's permhost.
func (r *runner) relay(kind string, agentArgs ...string) ([]string, error) {
	agent := append([]string{r.agent}, agentArgs...)
	switch kind {
	case "raw pipe":
		return append([]string{r.rawpipe}, agent...), nil
	case "permhost proxy", baselineRelay:
		cfg, err := r.writeConfig("good", r.goodTOML())
		if err != nil {
			return nil, err
		}
		bin := r.permhost
		if kind == baselineRelay {
			bin = r.baseline
		}
		return append([]string{bin, "proxy", "--config", cfg, "--"}, agent...), nil
	}
	return nil, fmt.Errorf("unknown relay %q", kind)
}

var relays = []string{"raw pipe", "permhost proxy"}

// baselineRelay is the relay of -baseline.
const baselineRelay = "baseline proxy"

const goLine = `{"jsonrpc":"2.0","method":"_bench/go","params":{}}` + "\n"

// P1 throughput: N lines of 1 KiB from the agent to the editor.
func (r *runner) passthroughThroughput(rep *report) error {
	const n, size = 200_000, 1024
	for run := 0; run < r.runs; run++ {
		for _, kind := range relays {
			argv, err := r.relay(kind, "flood", strconv.Itoa(n), strconv.Itoa(size))
			if err != nil {
				return err
			}
			p, err := r.start(argv...)
			if err != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond) // both processes up: measure the relay, not exec
			t0 := time.Now()
			if _, err := io.WriteString(p.stdin, goLine); err != nil {
				return err
			}
			var bytesRead int64
			for i := 0; i < n; i++ {
				line, err := p.out.ReadSlice('\n')
				if err != nil {
					return fmt.Errorf("%s: line %d: %v: %s", kind, i, err, p.stderr.String())
				}
				if len(line) != size {
					return fmt.Errorf("%s: line %d is %d bytes, want %d", kind, i, len(line), size)
				}
				bytesRead += int64(len(line))
			}
			el := time.Since(t0)
			if err := p.finish(); err != nil {
				return fmt.Errorf("%s: %v", kind, err)
			}
			rate := float64(bytesRead) / el.Seconds() / (1 << 20)
			rep.add("p1.mibs."+kind, rate)
			rep.add("p1.msgs."+kind, float64(n)/el.Seconds())
			r.logf("%s: %d × %d B in %v: %.0f MiB/s", kind, n, size, el.Round(time.Millisecond), rate)
		}
		rep.add("p1.ratio", rep.last("p1.mibs.permhost proxy")/rep.last("p1.mibs.raw pipe"))
		if r.baseline != "" {
			rep.add("p1.ratio.baseline", rep.last("p1.mibs."+baselineRelay)/rep.last("p1.mibs.raw pipe"))
		}
	}
	return nil
}

// P1 latency: paced lines, each stamped by the agent when written.
func (r *runner) passthroughLatency(rep *report) error {
	const n, size, interval = 3000, 1024, "500us"
	for run := 0; run < r.runs; run++ {
		p50 := make([]float64, len(relays))
		p99 := make([]float64, len(relays))
		for k, kind := range relays {
			argv, err := r.relay(kind, "paced", strconv.Itoa(n), strconv.Itoa(size), interval)
			if err != nil {
				return err
			}
			p, err := r.start(argv...)
			if err != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond)
			if _, err := io.WriteString(p.stdin, goLine); err != nil {
				return err
			}
			lat := make([]float64, 0, n)
			for i := 0; i < n; i++ {
				line, err := p.out.ReadSlice('\n')
				if err != nil {
					return fmt.Errorf("%s: line %d: %v", kind, i, err)
				}
				now := time.Now().UnixNano()
				j := bytes.Index(line, []byte(`"text":"T=`))
				if j < 0 || len(line) < j+10+19 {
					return fmt.Errorf("%s: line %d has no stamp", kind, i)
				}
				t, err := strconv.ParseInt(string(line[j+10:j+10+19]), 10, 64)
				if err != nil {
					return err
				}
				lat = append(lat, float64(now-t)/1e3) // µs
			}
			if err := p.finish(); err != nil {
				return fmt.Errorf("%s: %v", kind, err)
			}
			lat = lat[n/10:] // the first lines meet cold caches and the scheduler's first guesses
			p50[k], p99[k] = bench.Percentile(lat, 50), bench.Percentile(lat, 99)
			rep.add("p1.lat50."+kind, p50[k])
			rep.add("p1.lat99."+kind, p99[k])
			r.logf("%s: latency p50 %.0f µs p99 %.0f µs", kind, p50[k], p99[k])
		}
		rep.add("p1.added50", p50[1]-p50[0])
		rep.add("p1.added99", p99[1]-p99[0])
		if r.baseline != "" {
			rep.add("p1.added50.baseline", p50[2]-p50[0])
			rep.add("p1.added99.baseline", p99[2]-p99[0])
		}
	}
	return nil
}

// benchReport is benchagent's _bench/report.
type benchReport struct {
	Initialized int64             `json:"initialized"`
	Decided     int64             `json:"decided"`
	Answers     []json.RawMessage `json:"answers"`
}

// session plays the editor for benchagent startup/burst: sends initialize,
// answers forwarded permission requests with their first allow_once
// option, and returns the agent's report, the number of requests it
// answered itself, and the process's peak RSS (KiB) read before stdin closes.
func (r *runner) session(argv []string) (rep benchReport, forwarded int, startedAt time.Time, hwmKiB int64, err error) {
	p, err := r.start(argv...)
	if err != nil {
		return rep, 0, time.Time{}, 0, err
	}
	defer func() {
		if ferr := p.finish(); ferr != nil && err == nil {
			err = ferr
		}
	}()
	if _, err := io.WriteString(p.stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"permhost-bench","version":"1"}}}`+"\n"); err != nil {
		return rep, 0, p.started, 0, err
	}
	deadline := time.AfterFunc(5*time.Minute, func() { p.cmd.Process.Kill() })
	defer deadline.Stop()
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			return rep, forwarded, p.started, 0, fmt.Errorf("%v before the report: %s", err, lastLines(p.stderr.String(), 5))
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case "session/request_permission":
			forwarded++
			var params struct {
				Options []struct{ OptionID, Kind string }
			}
			json.Unmarshal(m.Params, &params)
			answer := `{"outcome":"cancelled"}`
			for _, o := range params.Options {
				if o.Kind == "allow_once" {
					answer = fmt.Sprintf(`{"outcome":"selected","optionId":%q}`, o.OptionID)
					break
				}
			}
			fmt.Fprintf(p.stdin, `{"jsonrpc":"2.0","id":%s,"result":{"outcome":%s}}`+"\n", m.ID, answer)
		case "_bench/report":
			if err := json.Unmarshal(m.Params, &rep); err != nil {
				return rep, forwarded, p.started, 0, err
			}
			hwm := vmHWM(p.cmd.Process.Pid)
			return rep, forwarded, p.started, hwm, nil
		}
	}
}

// P4: from `permhost proxy` start until initialize reaches the agent, and
// until the agent has the first decision of team-rules (the standard
// plugin's module in -plugins).
func (r *runner) coldStart(rep *report) error {
	cfg, err := r.writeConfig("team-rules", r.pluginTOML("team-rules", teamRulesTOML))
	if err != nil {
		return err
	}
	small, err := r.writeConfig("small", fmt.Sprintf("[[plugin]]\nname = \"allow\"\npath = %q\n[plugin.config]\ndecision = '{\"outcome\":\"allow\"}'\n",
		filepath.Join(r.root, "testdata", "wasm", "scripted.wasm")))
	if err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Join(r.plugins, "team-rules.wasm")); err == nil {
		rep.add("p4.module-kB", float64(fi.Size())/1e3)
	}
	warmCache := filepath.Join(r.tmp, "warm-cache")
	type variant struct {
		name   string
		argv   []string
		cache  func(run int) string
		plugin bool // the decision must come from the plugin
	}
	variants := []variant{
		{"agent alone", []string{r.agent, "startup"}, nil, false},
		{"proxy, no plugins", []string{r.permhost, "proxy", "--", r.agent, "startup"}, nil, false},
		{"proxy, team-rules, empty cache", []string{r.permhost, "proxy", "--config", cfg, "--", r.agent, "startup"},
			func(run int) string { return filepath.Join(r.tmp, fmt.Sprintf("cold-cache-%d", run)) }, true},
		{"proxy, team-rules, warm cache", []string{r.permhost, "proxy", "--config", cfg, "--", r.agent, "startup"},
			func(int) string { return warmCache }, true},
		// The host's own start-up, with a module of almost nothing to load.
		{"proxy, constant plugin (900 B), warm cache", []string{r.permhost, "proxy", "--config", small, "--", r.agent, "startup"},
			func(int) string { return warmCache }, true},
	}
	// Fill the warm cache once; not measured.
	saved := r.env
	r.env = append(slices.Clone(saved), "XDG_CACHE_HOME="+warmCache)
	for _, v := range variants[3:] {
		if _, _, _, _, err := r.session(v.argv); err != nil {
			return fmt.Errorf("warming the cache: %v", err)
		}
	}
	r.env = saved
	for run := 0; run < r.runs; run++ {
		for _, v := range variants {
			r.env = saved
			if v.cache != nil {
				r.env = append(slices.Clone(saved), "XDG_CACHE_HOME="+v.cache(run))
			}
			br, forwarded, started, _, err := r.session(v.argv)
			r.env = saved
			if err != nil {
				return fmt.Errorf("%s: %v", v.name, err)
			}
			if v.plugin && (forwarded != 0 || len(br.Answers) != 1 || !bytes.Contains(br.Answers[0], []byte(`"optionId":"allow"`))) {
				return fmt.Errorf("%s: the plugin did not decide (forwarded %d, answers %s)", v.name, forwarded, br.Answers)
			}
			initMs := float64(br.Initialized-started.UnixNano()) / 1e6
			decMs := float64(br.Decided-started.UnixNano()) / 1e6
			rep.add("p4.init."+v.name, initMs)
			rep.add("p4.decide."+v.name, decMs)
			r.logf("%s: initialize at %.1f ms, first decision at %.1f ms", v.name, initMs, decMs)
		}
	}
	return nil
}

// Decisions through the real proxy, and its peak RSS with every example
// plugin loaded and pooled.
func (r *runner) proxyDecisions(rep *report) error {
	const n = 2000
	allCfg, err := r.writeConfig("examples",
		r.pluginTOML("plan-mode", ""),
		r.pluginTOML("protect-secrets", `globs = [".env", "*.pem", "~/.ssh/**"]`),
		r.pluginTOML("explainer", ""),
		r.pluginTOML("team-rules", teamRulesTOML),
		r.pluginTOML("readonly-as", ""))
	if err != nil {
		return err
	}
	scripted, err := r.writeConfig("allow", fmt.Sprintf("[[plugin]]\nname = \"allow\"\npath = %q\n[plugin.config]\ndecision = '{\"outcome\":\"allow\"}'\n",
		filepath.Join(r.root, "testdata", "wasm", "scripted.wasm")))
	if err != nil {
		return err
	}
	cache := filepath.Join(r.tmp, "examples-cache")
	saved := r.env
	defer func() { r.env = saved }()
	r.env = append(slices.Clone(saved), "XDG_CACHE_HOME="+cache)
	for run := 0; run <= r.runs; run++ {
		for _, c := range []struct{ name, cfg string }{{"constant allow", scripted}, {"five examples", allCfg}} {
			br, forwarded, _, hwm, err := r.session([]string{r.permhost, "proxy", "--config", c.cfg, "--", r.agent, "burst", strconv.Itoa(n)})
			if err != nil {
				return fmt.Errorf("%s: %v", c.name, err)
			}
			if len(br.Answers) != n {
				return fmt.Errorf("%s: %d answers for %d requests", c.name, len(br.Answers), n)
			}
			// A constant-allow request reaches the editor only through the
			// fallback (a missed deadline on a loaded machine): counted.
			rep.add("e2e.forwarded.all."+c.name, float64(forwarded))
			if run == 0 { // compiles every plugin into the cache: the cold peak
				rep.add("rss.cold."+c.name, float64(hwm)/1024)
				continue
			}
			rate := float64(n) / (float64(br.Decided-br.Initialized) / 1e9)
			rep.add("e2e.rate."+c.name, rate)
			rep.add("e2e.forwarded."+c.name, float64(forwarded))
			rep.add("rss.warm."+c.name, float64(hwm)/1024)
			r.logf("%s: %d decisions through the proxy at %.0f/s (%d to the editor), peak RSS %.1f MiB", c.name, n, rate, forwarded, float64(hwm)/1024)
		}
	}
	return nil
}

// vmHWM is a process's peak resident set size in KiB, 0 if unknown.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// goBench runs package bench's benchmarks and records every metric.
func (r *runner) goBench(rep *report) error {
	count := strconv.Itoa(r.runs)
	return r.goTests(rep, "20m", [][]string{
		{"-bench", "^BenchmarkDecide$", "-benchtime", "1s", "-count", count, "./bench/"},
		{"-bench", "^BenchmarkDecideIdle$", "-benchtime", "300x", "-count", count, "./bench/"},
		{"-bench", "^BenchmarkThroughput$", "-benchtime", "2s", "-count", count, "./bench/"},
		{"-bench", "^BenchmarkFallback(Process)?$", "-benchtime", "200x", "-count", "1", "./bench/"},
		{"-bench", "^BenchmarkLoadFailure(Process)?$", "-benchtime", "10x", "-count", "1", "./bench/"},
		// The proxy's own paths: a governed session's start, the strict
		// path of tool-call updates, the fast path's look at a line.
		{"-bench", "^Benchmark(SessionStart|ToolCallUpdates|IsPlainUpdate)$", "-benchtime", "1s", "-count", count, "./acp/"},
	})
}

// goTests runs `go test -run ^$` with each of runs' arguments in turn,
// the plugins directory in its environment, and records every metric;
// what passed is kept when a run fails, and the failure is reported.
func (r *runner) goTests(rep *report, timeout string, runs [][]string) error {
	for _, args := range runs {
		cmd := exec.CommandContext(context.Background(), "go", append([]string{"test", "-run", "^$", "-timeout", timeout}, args...)...)
		cmd.Env = append(os.Environ(), "PERMHOST_PLUGINS_DIR="+r.plugins)
		var out bytes.Buffer
		cmd.Stdout = io.MultiWriter(&out, r.log)
		cmd.Stderr = r.log
		runErr := cmd.Run()
		if err := parseBench(out.String(), rep); err != nil {
			return err
		}
		if runErr != nil {
			return fmt.Errorf("go test %s: %v", strings.Join(args, " "), runErr)
		}
	}
	return nil
}

// parseBench records "BenchmarkX/sub-2  N  V unit  V unit..." lines as
// "bench.X/sub.unit".
func parseBench(out string, rep *report) error {
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // "--- FAIL" and other non-result lines
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("benchmark line %q: %v", line, err)
			}
			rep.add("bench."+name+"."+f[i+1], v)
		}
		seen++
	}
	if seen == 0 {
		return errors.New("no benchmark results")
	}
	return nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return runtime.GOARCH
}

// keep fills in the sections that this program does not measure: from the
// files that `make soak`, `make fuzz` and `make load-web` write when present,
// else from the previous table (out).
func (r *report) keep(soak, fuzz, loadWeb, out string) {
	r.soak = soakSection(soak, out)
	r.fuzz = fuzzSection(fuzz, out)
	r.loadWeb = fileOrSection(loadWeb, out, loadWebHeading)
	if old, err := os.ReadFile(out); err == nil {
		r.keptDecisionLog = keepSection(string(old), decisionLogHeading, oldDecisionLogHeading)
	}
}

// fileOrSection is file's content when it exists, else heading's section
// of the previous table.
func fileOrSection(file, out, heading string) string {
	if b, err := os.ReadFile(file); err == nil {
		return string(b)
	}
	if old, err := os.ReadFile(out); err == nil {
		return keepSection(string(old), heading)
	}
	return ""
}

// soakSection is the soak's figures: those `make soak` wrote last, else the
// section of the previous table.
func soakSection(soakFile, out string) string {
	if b, err := os.ReadFile(soakFile); err == nil {
		return string(b)
	}
	if old, err := os.ReadFile(out); err == nil {
		return keepSection(string(old), soakHeading)
	}
	return ""
}

// savedReport is a report's measurements on disk.
type savedReport struct {
	Started      time.Time
	Elapsed      time.Duration
	Load0, Load1 string
	Runs         int
	Samples      map[string][]float64
	Head         string
	Failures     []string
}

func saveSamples(path string, r *report) error {
	b, err := json.MarshalIndent(savedReport{r.started, r.elapsed, r.load0, r.load1, r.runs, r.samples, gitHead(), r.failures}, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func loadSamples(path string) (*report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s savedReport
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &report{started: s.Started, elapsed: s.Elapsed, load0: s.Load0, load1: s.Load1, runs: s.Runs, samples: s.Samples, head: s.Head, failures: s.Failures}, nil
}
