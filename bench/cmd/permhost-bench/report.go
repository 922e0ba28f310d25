package main

import (
	"cmp"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/permhost/permhost/bench"
)

// report collects every sample under a key and renders BENCHMARKS.md.
type report struct {
	started      time.Time
	elapsed      time.Duration
	load0, load1 string
	runs         int
	samples      map[string][]float64
	soak         string
	fuzz         string // the fuzzing section
	loadWeb      string // the web approver's load section (make load-web)
	// keptDecisionLog is the previous table's decision log section, shown
	// when this run did not measure it (-only).
	keptDecisionLog string
	head            string // git revision measured; "" = the current one
	failures        []string
}

func (r *report) add(key string, v float64) {
	if r.samples == nil {
		r.samples = map[string][]float64{}
	}
	r.samples[key] = append(r.samples[key], v)
}

func (r *report) last(key string) float64 {
	s := r.samples[key]
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

func (r *report) has(key string) bool { return len(r.samples[key]) > 0 }

// median of key's samples; NaN-free: 0 when absent.
func (r *report) median(key string) float64 {
	s := slices.Clone(r.samples[key])
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// cell is "median (min–max)" in the unit's scale, or "—" when absent.
func (r *report) cell(key string, scale float64, format string) string {
	s := r.samples[key]
	if len(s) == 0 {
		return "—"
	}
	m := r.median(key) * scale
	if len(s) == 1 {
		return fmt.Sprintf(format, m)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", m, slices.Min(s)*scale, slices.Max(s)*scale)
}

// goal is one line of the summary.
type goal struct {
	name, target string
	value        float64 // the median that the goal is judged on
	shown        string
	met          bool
	by           string // how far from the target when missed, or the margin when met
	note         string // why and what would close it, shown when missed
}

const (
	soakHeading    = "## Endurance (`make soak`)"
	loadWebHeading = "## The leader's web approver under load (`make load-web`)"
	// oldDecisionLogHeading is the hand-written section that the decision
	// log step replaced; kept from an older table when the step did not run.
	oldDecisionLogHeading = "## Decision log: signed (`[log] key`) vs plain"
)

func (r *report) goals() []goal {
	var g []goal
	// A goal is judged only on a run that measured it (-only runs some steps).
	when := func(key string, gl goal) {
		if r.has(key) {
			g = append(g, gl)
		}
	}
	ratio := r.median("p1.ratio")
	when("p1.ratio", goal{name: "P1 passthrough throughput vs raw pipe", target: "≥ 0.80×", value: ratio,
		shown: fmt.Sprintf("%.2f×", ratio), met: ratio >= 0.8, by: fmt.Sprintf("%+.2f×", ratio-0.8),
		note: "the proxy frames and classifies every line before writing it on, where the raw pipe copies whole chunks without looking; the spread between runs is as large as the gap on this loaded machine. What would close it: write consecutive passthrough lines in one batch when the reader's buffer is drained; profile first"})
	added := r.median("p1.added99")
	// Percentile differences of two noisy runs can be negative: the raw
	// pipe's run met a worse moment of the machine.
	when("p1.added99", goal{name: "P1 added latency per message, p99 (proxy p99 − raw pipe p99)", target: "≤ 100 µs", value: added,
		shown: fmt.Sprintf("%.0f µs", added), met: added <= 100, by: fmt.Sprintf("%+.0f µs", added-100),
		note: "on this 2-core machine each hop is a wake-up of another process's goroutine; under load the scheduler's latency dominates: measure again at a lower load average"})
	us := r.median(inProc) / 1e3
	when(inProc, goal{name: "P2 warm decision (constant plugin, 1 KiB)", target: "≤ 15 µs", value: us,
		shown: fmt.Sprintf("%.1f µs", us), met: us <= 15, by: fmt.Sprintf("%+.1f µs", us-15),
		note: fmt.Sprintf("the raw wazero call of the same module ran at %.1f µs in the same run, so at most %.1f µs of the %.1f µs is the host's own (the 1.5× goal below judges that part)",
			r.median("bench.Decide/wazero-raw.ns/op")/1e3, us-r.median("bench.Decide/wazero-raw.ns/op")/1e3, us)})
	kb := r.median("bench.Decide/permhost.B/op")
	when("bench.Decide/permhost.B/op", goal{name: "P2 allocated per decision", target: "≤ 4 KB", value: kb,
		shown: fmt.Sprintf("%.0f B", kb), met: kb <= 4000, by: fmt.Sprintf("%+.0f B", kb-4000)})
	ext := r.median("bench.Decide/extism.ns/op") / 1e3
	if ext > 0 {
		q := us / ext
		g = append(g, goal{name: "P2 vs stock Extism Plugin.Call", target: "≤ 0.25×", value: q,
			shown: fmt.Sprintf("%.3f× (%.1f µs vs %.1f µs)", q, us, ext), met: q <= 0.25, by: fmt.Sprintf("%+.3f×", q-0.25)})
	}
	hook := r.median("bench.Decide/hook-process.ns/op") / 1e3
	if hook > 0 && us > 0 {
		f := hook / us
		g = append(g, goal{name: "P3 vs a per-decision process hook", target: "≥ 100× faster", value: f,
			shown: fmt.Sprintf("%.0f× (%.0f µs vs %.1f µs)", f, hook, us), met: f >= 100, by: fmt.Sprintf("%+.0f×", f-100)})
	}
	init := r.median("p4.init.proxy, team-rules, empty cache")
	module := ""
	if kb := r.median("p4.module-kB"); kb > 0 {
		module = fmt.Sprintf(", %.0f kB module", kb)
	}
	when("p4.init.proxy, team-rules, empty cache", goal{name: "P4 proxy start → initialize at the agent (team-rules" + module + ", empty cache)", target: "≤ 50 ms", value: init,
		shown: fmt.Sprintf("%.1f ms", init), met: init <= 50, by: fmt.Sprintf("%+.1f ms", init-50),
		note: fmt.Sprintf("a plugin file's [plugin.config] keys are checked before the agent starts (RATIONALE.md, \"Configuration mistakes\"), which on a first run loads the plugin once: initialize at %.1f ms, first decision at %.1f ms; in the same run, initialize after %.1f ms with the cache warm, %.1f ms without plugins, %.1f ms for the agent alone",
			init, r.median("p4.decide.proxy, team-rules, empty cache"), r.median("p4.init.proxy, team-rules, warm cache"), r.median("p4.init.proxy, no plugins"), r.median("p4.init.agent alone"))})
	warm := r.median("p4.decide.proxy, team-rules, warm cache")
	when("p4.decide.proxy, team-rules, warm cache", goal{name: "P4 proxy start → first decision (team-rules" + module + ", warm cache)", target: "≤ 20 ms", value: warm,
		shown: fmt.Sprintf("%.1f ms", warm), met: warm <= 20, by: fmt.Sprintf("%+.1f ms", warm-20),
		note: fmt.Sprintf("first decision in the same run: %.1f ms with the 900-byte constant plugin (warm cache), %.1f ms with no plugins (the editor answering); where a warm load's time goes is in RATIONALE.md",
			r.median("p4.decide.proxy, constant plugin (900 B), warm cache"), r.median("p4.decide.proxy, no plugins"))})
	g = append(g, r.hostGoals()...)
	rate := r.median("bench.Throughput/constant.decisions/s")
	when("bench.Throughput/constant.decisions/s", goal{name: "P5 decisions/s, constant plugin, pool, 2 cores", target: "≥ 50,000/s", value: rate,
		shown: fmt.Sprintf("%.0f/s", rate), met: rate >= 50000, by: fmt.Sprintf("%+.0f/s", rate-50000),
		note: fmt.Sprintf("the rate is the single-call cost (P2, %.1f µs here) spread over the cores that are free (load average %s at the start, %d cores); 50k/s on two cores needs a call of ≤ 40 µs with both cores free", us, r.load0, runtime.NumCPU())})
	worst := 0.0
	for _, f := range fallbackFixtures {
		worst = max(worst, r.median("bench.Fallback/"+f.name+".p99-ms"))
	}
	when("bench.Fallback/infinite_loop.p99-ms", goal{name: "Time to fallback, hostile fixtures, worst p99", target: "≤ deadline + 2 ms (102 ms)", value: worst,
		shown: fmt.Sprintf("%.1f ms", worst), met: worst <= 102, by: fmt.Sprintf("%+.1f ms", worst-102),
		note: "see the per-fixture table: only the fixtures that run until the deadline can be late, by the time the host's goroutines (the deadline's timer, the hand-off at deadline + 1 ms) wait for a core on a loaded machine"})
	g = append(g, r.stdGoals()...)
	return g
}

// fallbackFixtures are the hostile fixtures of BenchmarkFallback and how
// each ends (testdata/wasm/README.md).
var fallbackFixtures = []struct{ name, ends string }{
	{"infinite_loop", "timeout, at the deadline"},
	{"call_tree", "timeout, at the deadline"},
	{"log_flood", "timeout, at the deadline (its logs bounded)"},
	{"deep_recursion", "trap at the call-depth bound"},
	{"memory_grow", "memory: growth past the cap refused"},
	{"huge_output", "output too large"},
	{"invalid_json", "bad output"},
	{"unreachable", "trap"},
	{"table_grow", "trap after table.grow past MaxTableEntries is refused"},
	{"fd_write_iovecs", "timeout: fd_write of a million iovecs refused (EINVAL), the loop stopped"},
	{"random_get_loop", "timeout: 8 MiB random_get calls checked every 64 KiB"},
	{"duplicate_key", "bad output: a key given twice"},
}

// isolationCell is the p99 of a row measured with the plugin behind a
// process wall (the worker's benchmarks, BenchmarkFallbackProcess and
// BenchmarkLoadFailureProcess), or a dash while there is none.
func (r *report) isolationCell(bench, name string) string {
	return r.cell("bench."+bench+"Process/"+name+".p99-ms", 1, "%.1f")
}

// busy reports whether a load average ("1m 5m 15m") shows other work on the
// machine: the last minute's above three quarters of the cores.
func busy(load string) bool {
	f := strings.Fields(load)
	if len(f) == 0 {
		return true
	}
	l, err := strconv.ParseFloat(f[0], 64)
	return err != nil || l > 0.75*float64(runtime.NumCPU())
}

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Benchmarks\n\n")
	w("Generated by `make bench` (`go run ./bench/cmd/permhost-bench`) on %s, in %v. ", r.started.UTC().Format("2006-01-02 15:04 UTC"), r.elapsed.Round(time.Second))
	w("Each figure is the median of %d runs with the spread (min–max) in parentheses; every comparison ran side by side in this one invocation. ", r.runs)
	w("How each row is measured is in `bench/doc.go` and `bench/cmd/permhost-bench`.\n\n")
	w("Machine: %d CPUs (`nproc`), %s, %s/%s, %s, git %s. Load average (1, 5, 15 min) %s at the start, %s at the end: ", runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, goVersion(), cmp.Or(r.head, gitHead()), r.load0, r.load1)
	if busy(r.load0) {
		w("the machine was shared with other builds and tests while this ran, so absolute times are inflated and noisy; the ratios between rows of one run are the meaningful figures.\n\n")
	} else {
		w("nothing else ran alongside (the load is this program's own and the tail of earlier work); absolute times are this VM's, the ratios between rows of one run travel best.\n\n")
	}
	w("Reproduce: `make bench` (3–10 minutes; needs `make build plugins`, which it runs); one step alone: `go run ./bench/cmd/permhost-bench -only 'cold start' -out /tmp/b.md`.\n\n")

	for _, f := range r.failures {
		if i := strings.IndexByte(f, '\n'); i >= 0 {
			f = f[:i] + " …)"
		}
		w("**Not measured in this run:** %s.\n\n", f)
	}
	w("## Goals\n\n| goal | target | measured (median) | met | margin |\n|---|---|---|---|---|\n")
	gs := r.goals()
	for _, g := range gs {
		met := "met"
		if !g.met {
			met = "**missed**"
		}
		w("| %s | %s | %s | %s | %s |\n", g.name, g.target, g.shown, met, g.by)
	}
	missed := false
	for _, g := range gs {
		if !g.met && g.note != "" {
			if !missed {
				w("\nWhy the missed goals are missed, and what would close them:\n\n")
				missed = true
			}
			w("- **%s**: %s.\n", g.name, g.note)
		}
	}

	w("\n## P1 passthrough: 1 KiB `session/update` lines, agent → editor\n\n")
	w("200,000 lines as fast as the agent writes them (throughput), and 3,000 lines one every 0.5 ms, each stamped by the agent when written (latency, first 10%% dropped). `raw pipe` is `bench/cmd/rawpipe`, a process that only copies bytes between its stdio and the agent's; `permhost proxy` runs with a one-plugin configuration.\n\n")
	w("| relay | MiB/s | lines/s | latency p50 (µs) | latency p99 (µs) |\n|---|---|---|---|---|\n")
	for _, k := range []string{"raw pipe", "permhost proxy", baselineRelay} {
		if k == baselineRelay && !r.has("p1.mibs."+k) {
			continue
		}
		w("| %s | %s | %s | %s | %s |\n", k, r.cell("p1.mibs."+k, 1, "%.0f"), r.cell("p1.msgs."+k, 1, "%.0f"), r.cell("p1.lat50."+k, 1, "%.0f"), r.cell("p1.lat99."+k, 1, "%.0f"))
	}
	w("| **proxy vs raw** | %s× | | added %s | added %s |\n", r.cell("p1.ratio", 1, "%.2f"), r.cell("p1.added50", 1, "%.0f"), r.cell("p1.added99", 1, "%.0f"))
	if r.has("p1.ratio.baseline") {
		w("| **baseline vs raw** | %s× | | added %s | added %s |\n", r.cell("p1.ratio.baseline", 1, "%.2f"), r.cell("p1.added50.baseline", 1, "%.0f"), r.cell("p1.added99.baseline", 1, "%.0f"))
	}

	w("\n## P2, P3: one warm decision, constant outcome, 1 KiB request\n\n")
	w("`go test -bench ^BenchmarkDecide$ ./bench` (1 s per run). All rows decide on the same request; the wasm rows run `testdata/wasm/good.wasm`. permhost's rows go through `host.Plugin.Decide` (encode, call under the 100 ms deadline, decode, validate).\n\n")
	w("| way | µs/decision | B/decision | allocs | vs permhost |\n|---|---|---|---|---|\n")
	base := r.median(inProc)
	for _, c := range []struct{ key, name string }{
		{"permhost", "permhost host"},
		{"permhost-process", fmt.Sprintf("permhost host behind the process wall (`isolation = \"process\"`: the same plugin and request through a worker child, each side polling the pipe for up to 100 µs before parking; CPU per decision: child %s µs, parent %s µs)",
			r.cell("bench.Decide/permhost-process.child-cpu-µs/op", 1, "%.0f"), r.cell("bench.Decide/permhost-process.parent-cpu-µs/op", 1, "%.0f"))},
		{"permhost-process-park", fmt.Sprintf("the same, each side parking on Go's poller at once (CPU per decision: child %s µs, parent %s µs)",
			r.cell("bench.Decide/permhost-process-park.child-cpu-µs/op", 1, "%.0f"), r.cell("bench.Decide/permhost-process-park.parent-cpu-µs/op", 1, "%.0f"))},
		{"wazero-raw", "raw wazero call, close-on-context-done and a per-call `context.WithTimeout` (no encoding, no-op host functions)"},
		{"extism", "stock Extism go-sdk `Plugin.Call` (no timeout)"},
		{"extism-timeout", "stock Extism go-sdk `Plugin.Call` with `Manifest.Timeout` (1 s)"},
		{"team-rules", "permhost host, `team-rules` standard plugin (Rust, real rules)"},
		{"team-rules-process", "the same `team-rules` behind the process wall"},
		{"hook-process", "process hook: a Go program started per decision (`bench/cmd/permhost-hook`)"},
		{"hook-sh", "process hook: `/bin/sh -c 'cat >/dev/null; echo …'`"},
	} {
		k := "bench.Decide/" + c.key
		vs := "—"
		if base > 0 && r.has(k+".ns/op") {
			vs = fmt.Sprintf("%.2f×", r.median(k+".ns/op")/base)
		}
		w("| %s | %s | %s | %s | %s |\n", c.name, r.cell(k+".ns/op", 1e-3, "%.1f"), r.cell(k+".B/op", 1, "%.0f"), r.cell(k+".allocs/op", 1, "%.0f"), vs)
	}

	w("\nThe same constant decision one at a time after a 2 ms pause, as an agent asks between a person's prompts (`go test -bench ^BenchmarkDecideIdle$ -benchtime 300x ./bench`; the pause is not timed): both sides of the wall have parked by then, so polling only saves the parent's wake-up.\n\n")
	w("| way | µs/decision |\n|---|---|\n")
	for _, c := range []struct{ key, name string }{
		{"permhost", "permhost host, in process"},
		{"permhost-process", "behind the process wall, polling first"},
		{"permhost-process-park", "behind the process wall, parking at once"},
	} {
		w("| %s | %s |\n", c.name, r.cell("bench.DecideIdle/"+c.key+".ns/op", 1e-3, "%.1f"))
	}

	w("\n## P4: cold start\n\n")
	w("From just before `exec` of the first process until `initialize` reaches the agent, and until the agent has the answer to its first permission request (`npm test`, which `team-rules` allows; the editor is not involved). Without plugins the editor (this program) answers the request. The empty cache is a fresh `XDG_CACHE_HOME` per run.\n\n")
	w("| setup | initialize at the agent (ms) | first decision at the agent (ms) |\n|---|---|---|\n")
	for _, v := range []string{"agent alone", "proxy, no plugins", "proxy, team-rules, empty cache", "proxy, team-rules, warm cache", "proxy, constant plugin (900 B), warm cache"} {
		w("| %s | %s | %s |\n", v, r.cell("p4.init."+v, 1, "%.1f"), r.cell("p4.decide."+v, 1, "%.1f"))
	}
	r.stdSection(w)

	w("\n## P5: decisions per second\n\n")
	w("In process: `go test -bench ^BenchmarkThroughput$ ./bench` (2 s per run), `host.Plugin` with its default pool (GOMAXPROCS instances) and four concurrent callers. Through the proxy: `bench/cmd/benchagent burst 2000` sends 2,000 permission requests at once through the real binary; the rate is from the agent's first request to its last answer.\n\n")
	w("| plugin | decisions/s | B/decision | timed out |\n|---|---|---|---|\n")
	for _, c := range []struct{ key, name string }{{"constant", "constant (`good.wasm`)"}, {"team-rules", "`team-rules`"}} {
		k := "bench.Throughput/" + c.key
		w("| %s, in process | %s | %s | %s |\n", c.name, r.cell(k+".decisions/s", 1, "%.0f"), r.cell(k+".B/op", 1, "%.0f"), r.cell(k+".timeouts", 1, "%.0f"))
	}
	w("| constant allow (`scripted.wasm`), through `permhost proxy` | %s | | %s of 2,000 reached the editor through the fallback |\n", r.cell("e2e.rate.constant allow", 1, "%.0f"), r.cell("e2e.forwarded.all.constant allow", 1, "%.0f"))
	w("| all five examples chained, through `permhost proxy` (undecided ones answered by the editor: %s of 2,000) | %s | | |\n", r.cell("e2e.forwarded.five examples", 1, "%.0f"), r.cell("e2e.rate.five examples", 1, "%.0f"))

	w("\n## Time to fallback, hostile fixtures (deadline 100 ms)\n\n")
	w("`go test -bench ^BenchmarkFallback$ -benchtime 200x ./bench`: from the call until the host returns the failure that sends the decision to the builtin fallback. Goal for the fixtures that run until stopped: deadline + 2 ms.\n\n")
	restarts, late := 0.0, 0.0
	for _, f := range fallbackFixtures {
		restarts += r.median("bench.FallbackProcess/" + f.name + ".restarts")
		late += r.median("bench.FallbackProcess/" + f.name + ".late")
	}
	w("The process column is the same fixture behind the process wall (`isolation = \"process\"`, `BenchmarkFallbackProcess`): the parent answers by its own deadline (the plugin's plus 1 ms) whatever the child does. A child still silent 500 ms after a deadline is killed and replaced; a call that failed with it, or during its restart (fast, kind load), is not timed and the run waits for the replacement: %.0f such calls here. %.0f calls of fixtures that end before their deadline met it instead (a loaded machine); those are timed.\n\n", restarts, late)
	w("| fixture | ends as | p50 (ms) | p99 (ms) | max (ms) | goal ≤ 102 ms at p99 | p99, process isolation (ms) |\n|---|---|---|---|---|---|---|\n")
	for _, f := range fallbackFixtures {
		k := "bench.Fallback/" + f.name
		goalCell := "met"
		if p99 := r.median(k + ".p99-ms"); p99 > 102 {
			goalCell = fmt.Sprintf("**missed** by %.1f ms", p99-102)
		}
		w("| `%s` | %s | %s | %s | %s | %s | %s |\n", f.name, f.ends, r.cell(k+".p50-ms", 1, "%.1f"), r.cell(k+".p99-ms", 1, "%.1f"), r.cell(k+".max-ms", 1, "%.1f"), goalCell, r.isolationCell("Fallback", f.name))
	}

	w("\n## Time to a load failure, hostile modules\n\n")
	w("`go test -bench ^BenchmarkLoadFailure$ -benchtime 10x ./bench`: from `host.Load` until it fails (no compile cache), after which the plugin's failure policy answers every decision. The load-time limits refuse a module before it is compiled (`sandbox.Measure`); the start function runs under the init budget; a compile past its budget is abandoned.\n\n")
	w("| module | ends as | p50 (ms) | p99 (ms) | max (ms) | p99, process isolation (ms) |\n|---|---|---|---|---|---|\n")
	for _, f := range bench.LoadFailures {
		k := "bench.LoadFailure/" + f.Name
		w("| `%s` | %s | %s | %s | %s | %s |\n", f.Name, f.Ends, r.cell(k+".p50-ms", 1, "%.2f"), r.cell(k+".p99-ms", 1, "%.2f"), r.cell(k+".max-ms", 1, "%.2f"), r.isolationCell("LoadFailure", f.Name))
	}

	r.decisionLogSection(w)

	w("\n## Governed sessions and the proxy's paths (`acp` benchmarks)\n\n")
	w("`go test -bench '^Benchmark(SessionStart|ToolCallUpdates|IsPlainUpdate)$' ./acp` (1 s per run), in process over pipes. A switched start is a `session/new` whose result waits in its place while the Governor moves the session to an asking mode (one more round trip to the agent; a real agent's `session/new` takes ~300 ms). Tool-call updates take the strict path (each is decoded and tracked, and with a Governor shown to it); a plain `session/update` takes the fast path, whose look at a line is the last rows.\n\n")
	w("| benchmark | result |\n|---|---|\n")
	w("| `session/new` through the proxy, agent answering at once | %s µs |\n", r.cell("bench.SessionStart/forwarded.ns/op", 1e-3, "%.1f"))
	w("| the same, the Governor switching the mode first | %s µs |\n", r.cell("bench.SessionStart/switched.ns/op", 1e-3, "%.1f"))
	w("| 4,096 tool-call updates of ~1 KiB, no Governor | %s MB/s |\n", r.cell("bench.ToolCallUpdates/no-governor.MB/s", 1, "%.1f"))
	w("| the same, each shown to a Governor | %s MB/s |\n", r.cell("bench.ToolCallUpdates/governor.MB/s", 1, "%.1f"))
	for _, c := range []struct{ key, name string }{
		{"padding", "a 1 KiB plain update (one long string)"},
		{"padding/memo", "the same, a stream of lines of one shape (the memo spares the walk)"},
		{"prose", "a 1 KiB plain update of prose and code (escapes, snake_case words)"},
		{"prose/memo", "the same, a stream of one shape"},
	} {
		w("| fast path's look at %s | %s MB/s |\n", c.name, r.cell("bench.IsPlainUpdate/"+c.key+".MB/s", 1, "%.0f"))
	}

	w("\n## Memory: peak RSS of `permhost proxy`\n\n")
	w("`VmHWM` of the proxy after 2,000 decisions (pools filled), read before it exits. The first run of each compiles every plugin into an empty cache; the others load from the cache.\n\n")
	w("| configuration | peak RSS, compiling (MiB) | peak RSS, warm cache (MiB) |\n|---|---|---|\n")
	w("| constant allow (`scripted.wasm`) | %s | %s |\n", r.cell("rss.cold.constant allow", 1, "%.1f"), r.cell("rss.warm.constant allow", 1, "%.1f"))
	w("| five examples: plan-mode, protect-secrets, explainer, team-rules (the standard plugins, Rust), readonly-as (AssemblyScript) | %s | %s |\n", r.cell("rss.cold.five examples", 1, "%.1f"), r.cell("rss.warm.five examples", 1, "%.1f"))

	w("\n")
	if r.soak != "" {
		w("%s\n", strings.TrimSpace(r.soak))
	} else {
		w("%s\n\nNot run yet on this revision: `make soak`.\n", soakHeading)
	}
	w("\n")
	if r.fuzz != "" {
		w("%s\n", strings.TrimSpace(r.fuzz))
	} else {
		w("%s\n\nNot run yet: `make fuzz FUZZTIME=5m`.\n", fuzzHeading)
	}
	w("\n")
	if r.loadWeb != "" {
		w("%s\n", trimSection(r.loadWeb))
	} else {
		w("%s\n\nNot run yet: `make load-web`.\n", loadWebHeading)
	}
	return b.String()
}

// keepSection returns the first of headings found in doc, at the start of
// a line, and what follows it up to the next "## ".
func keepSection(doc string, headings ...string) string {
	for _, heading := range headings {
		i := strings.Index("\n"+doc, "\n"+heading+"\n")
		if i < 0 {
			continue
		}
		rest := doc[i+len(heading):]
		if j := strings.Index(rest, "\n## "); j >= 0 {
			rest = rest[:j]
		}
		return heading + rest
	}
	return ""
}

// trimSection is a kept section without the blank lines around it.
func trimSection(s string) string { return strings.TrimSpace(s) }

func goVersion() string { return runtime.Version() }

func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
