package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/permhost/permhost/examples"
)

// The standard plugins (Rust, build/plugins) side by side with their Go
// reference implementations (build/plugins/go), issue #20: a fresh
// install's first decision under the default policy and the cache it
// leaves, the load of each module with an empty cache, and team-rules with
// a 20-rule set.

// stdVariants are the module sets measured, by row name and directory
// under the plugins directory.
var stdVariants = []struct{ name, sub string }{
	{"standard plugins (Rust)", ""},
	{"Go reference modules", "go"},
}

func (r *runner) stdPlugins(rep *report) error {
	if err := r.freshInstall(rep); err != nil {
		return err
	}
	count := strconv.Itoa(r.runs)
	return r.goTests(rep, "30m", [][]string{
		{"-bench", "^BenchmarkTeamRules20$", "-benchtime", "1s", "-count", count, "./bench/"},
		{"-bench", "^BenchmarkLoadStd$", "-benchtime", "1x", "-count", count, "./bench/"},
	})
}

// freshInstall runs `permhost proxy` with the default policy
// (examples/permhost.toml) and an empty XDG_CACHE_HOME per run, until the
// agent has its first decision, and measures the cache left behind.
func (r *runner) freshInstall(rep *report) error {
	for run := 0; run < r.runs; run++ {
		for _, v := range stdVariants {
			dir := filepath.Join(r.plugins, v.sub)
			if _, err := os.Stat(filepath.Join(dir, "team-rules.wasm")); err != nil {
				return fmt.Errorf("%s: %v (make plugins)", v.name, err)
			}
			cfg, err := r.writeConfig("default-"+strconv.Itoa(len(v.sub)), string(examples.WithPluginsDir(examples.Config, dir)))
			if err != nil {
				return err
			}
			cache := filepath.Join(r.tmp, fmt.Sprintf("fresh-cache-%d-%d", run, len(v.sub)))
			saved := r.env
			r.env = append(slices.Clone(saved), "XDG_CACHE_HOME="+cache)
			br, _, started, _, err := r.session([]string{r.permhost, "proxy", "--config", cfg, "--", r.agent, "startup"})
			r.env = saved
			if err != nil {
				return fmt.Errorf("%s: %v", v.name, err)
			}
			if br.Decided == 0 {
				return errors.New(v.name + ": no decision")
			}
			decMs := float64(br.Decided-started.UnixNano()) / 1e6
			mb := float64(treeBytes(cache)) / 1e6
			rep.add("std.fresh.decide."+v.name, decMs)
			rep.add("std.fresh.cacheMB."+v.name, mb)
			r.logf("%s, empty cache: first decision at %.1f ms, cache %.1f MB", v.name, decMs, mb)
		}
	}
	return nil
}

// treeBytes is the size of the files under dir (0 when there is none).
func treeBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// stdGoals are issue #20's goals for the standard plugins.
func (r *report) stdGoals() []goal {
	if !r.has("std.fresh.decide.standard plugins (Rust)") {
		return nil
	}
	const std = "standard plugins (Rust)"
	first := r.median("std.fresh.decide." + std)
	cache := r.median("std.fresh.cacheMB." + std)
	tr := r.median("bench.TeamRules20/std.ns/op") / 1e3
	return []goal{
		{name: "Fresh install: default policy's first decision, empty cache", target: "≤ 1 s", value: first,
			shown: fmt.Sprintf("%.0f ms", first) + r.goRef("std.fresh.decide.Go reference modules", 1, " (Go modules: %.0f ms)"), met: first <= 1000, by: fmt.Sprintf("%+.0f ms", first-1000),
			note: r.freshNote(first)},
		{name: "Fresh install: compile cache left", target: "≤ 16 MB", value: cache,
			shown: fmt.Sprintf("%.1f MB", cache) + r.goRef("std.fresh.cacheMB.Go reference modules", 1, " (Go modules: %.1f MB)"), met: cache <= 16, by: fmt.Sprintf("%+.1f MB", cache-16),
			note: r.largestStd("cache-MB", 1, "the largest module's cache entry: %s, %.2f MB (standard plugins' table)")},
		{name: "team-rules, 20 rules, warm decision", target: "≤ 50 µs", value: tr,
			shown: fmt.Sprintf("%.1f µs", tr) + r.goRef("bench.TeamRules20/go.ns/op", 1e-3, " (Go module: %.1f µs)"), met: tr > 0 && tr <= 50, by: fmt.Sprintf("%+.1f µs", tr-50),
			note: r.teamRulesNote(tr)},
	}
}

// goRef is the Go reference modules' figure of the same run, formatted,
// or "" when they were not measured.
func (r *report) goRef(key string, scale float64, format string) string {
	if !r.has(key) {
		return ""
	}
	return fmt.Sprintf(format, r.median(key)*scale)
}

// stdModules are the standard plugins of the default policy.
var stdModules = []string{"team-rules", "plan-mode", "protect-secrets", "explainer"}

// largestStd formats the standard module with the largest median of
// BenchmarkLoadStd's metric (scaled), or says that it was not measured.
func (r *report) largestStd(metric string, scale float64, format string) string {
	name, v := "", 0.0
	for _, n := range stdModules {
		if m := r.median("bench.LoadStd/std/"+n+"."+metric) * scale; m > v {
			name, v = n, m
		}
	}
	if name == "" {
		return "BenchmarkLoadStd did not run, so no module's share was measured"
	}
	return fmt.Sprintf(format, name, v)
}

func (r *report) freshNote(first float64) string {
	return fmt.Sprintf("first decision at %.0f ms under a load average of %s at the start; %s",
		first, r.load0, r.largestStd("ns/op", 1e-6, "the slowest module to load with an empty cache was %s at %.0f ms (standard plugins' table)"))
}

func (r *report) teamRulesNote(tr float64) string {
	n := fmt.Sprintf("%.1f µs per decision as the proxy runs it (a standard plugin is trusted: on the caller's goroutine)", tr)
	if c := r.median("bench.TeamRules20/constant-trusted.ns/op") / 1e3; c > 0 {
		n += fmt.Sprintf(", against %.1f µs for the constant plugin run the same way on the same request (the floor), so %.1f µs is team-rules' own work with 20 rules", c, tr-c)
	}
	if h := r.median("bench.TeamRules20/std-handoff.ns/op") / 1e3; h > 0 {
		n += fmt.Sprintf("; on its instance's goroutine, as an untrusted plugin runs, %.1f µs", h)
		if c := r.median("bench.TeamRules20/constant.ns/op") / 1e3; c > 0 {
			n += fmt.Sprintf(" (the constant plugin that way: %.1f µs)", c)
		}
	}
	return n + ". What it took is in RATIONALE.md (\"team-rules at 20 rules\")"
}

// stdSection writes the standard plugins' table.
func (r *report) stdSection(w func(string, ...any)) {
	if !r.has("std.fresh.decide.standard plugins (Rust)") && !r.has("bench.TeamRules20/std.ns/op") {
		return
	}
	w("\n## Standard plugins: Rust modules against their Go reference implementations\n\n")
	w("The same behaviour (plugins/examples' differential test). Fresh install: `permhost proxy` with the default policy (examples/permhost.toml: protect-secrets, plan-mode, team-rules, explainer) and an empty `XDG_CACHE_HOME`, until the agent has its first decision; then the size of the cache. Load: `host.Load` of one module with an empty cache (read, instrument, compile, instantiate, handshake; `go test -bench ^BenchmarkLoadStd$ ./bench`). team-rules: one warm decision with a 20-rule set (`BenchmarkTeamRules20`).\n\n")
	w("| measure | standard plugins (Rust) | Go reference modules |\n|---|---|---|\n")
	w("| fresh install, first decision (ms) | %s | %s |\n", r.cell("std.fresh.decide.standard plugins (Rust)", 1, "%.0f"), r.cell("std.fresh.decide.Go reference modules", 1, "%.0f"))
	w("| fresh install, cache left (MB) | %s | %s |\n", r.cell("std.fresh.cacheMB.standard plugins (Rust)", 1, "%.1f"), r.cell("std.fresh.cacheMB.Go reference modules", 1, "%.1f"))
	w("| team-rules, 20 rules, warm decision (µs) | %s (on its instance's goroutine: %s) | %s |\n", r.cell("bench.TeamRules20/std.ns/op", 1e-3, "%.1f"), r.cell("bench.TeamRules20/std-handoff.ns/op", 1e-3, "%.1f"), r.cell("bench.TeamRules20/go.ns/op", 1e-3, "%.1f"))
	for _, n := range stdModules {
		w("| %s: module (kB) | %s | %s |\n", n, r.cell("bench.LoadStd/std/"+n+".module-kB", 1, "%.0f"), r.cell("bench.LoadStd/go/"+n+".module-kB", 1, "%.0f"))
		w("| %s: load, empty cache (ms) | %s | %s |\n", n, r.cell("bench.LoadStd/std/"+n+".ns/op", 1e-6, "%.0f"), r.cell("bench.LoadStd/go/"+n+".ns/op", 1e-6, "%.0f"))
		w("| %s: compile cache (MB) | %s | %s |\n", n, r.cell("bench.LoadStd/std/"+n+".cache-MB", 1, "%.2f"), r.cell("bench.LoadStd/go/"+n+".cache-MB", 1, "%.1f"))
	}
}
