package main

import (
	"fmt"
	"strconv"
)

// The decision log's cost (issue #22): a decision's latency with the plain
// log, the chained and signed log, and the plain log with [log.otlp]
// exporting to a receiver on loopback, taken in turns in one loop
// (policy's BenchmarkDecisionLog); and what the log's goroutine spends per
// line (internal/auditlog's BenchmarkAppend).

const decisionLogHeading = "## Decision log: plain, signed (`[log] key`), OTLP export on (`[log.otlp]`)"

// decisionLogSides are BenchmarkDecisionLog's sides, by metric prefix.
var decisionLogSides = []struct{ key, name string }{
	{"plain", "plain log"},
	{"signed", "chained and signed log"},
	{"otlp", "plain log, OTLP export on (receiver on loopback)"},
}

// appendCases are BenchmarkAppend's sub-benchmarks.
var appendCases = []struct{ key, name string }{
	{"plain", "plain"},
	{"signed,_seal_per_256_lines", "chained, a seal every 256 lines"},
	{"signed,_seal_per_line", "chained, a seal after every line"},
}

func (r *runner) decisionLog(rep *report) error {
	count := strconv.Itoa(r.runs)
	return r.goTests(rep, "20m", [][]string{
		{"-bench", "^BenchmarkDecisionLog$", "-benchtime", "4000x", "-count", count, "./policy/"},
		{"-bench", "^BenchmarkAppend$", "-benchtime", "3000x", "-count", count, "./internal/auditlog/"},
	})
}

// decisionLogMeasured reports whether this run measured the decision log.
func (r *report) decisionLogMeasured() bool {
	return r.has("bench.DecisionLog.plain-p50-µs")
}

// decisionLogSection writes the decision log's tables, or the previous
// table's section when this run did not measure them (-only).
func (r *report) decisionLogSection(w func(string, ...any)) {
	if !r.decisionLogMeasured() {
		if r.keptDecisionLog != "" {
			w("\n%s\n", trimSection(r.keptDecisionLog))
		}
		return
	}
	w("\n%s\n\n", decisionLogHeading)
	w("`go test -bench ^BenchmarkDecisionLog$ -benchtime 4000x ./policy`: decisions through three engines in turns in one loop (a constant plugin, `permissionRequest` → answer), so that all see the same load; the log and the exporter run on their own goroutines, which share the cores with the decisions. p50 and p99 of each run, then the median of the runs.\n\n")
	w("| decision latency | p50 (µs) | p99 (µs) | p50 vs plain |\n|---|---|---|---|\n")
	for _, s := range decisionLogSides {
		k := "bench.DecisionLog." + s.key
		vs := "—"
		if p := r.median("bench.DecisionLog.plain-p50-µs"); p > 0 && r.has(k+"-p50-µs") {
			vs = fmt.Sprintf("%.2f×", r.pairedMedian(k+"-p50-µs", "bench.DecisionLog.plain-p50-µs", func(a, b float64) float64 { return a / b }))
		}
		w("| %s | %s | %s | %s |\n", s.name, r.cell(k+"-p50-µs", 1, "%.0f"), r.cell(k+"-p99-µs", 1, "%.0f"), vs)
	}
	if r.has("bench.Append/plain.ns/op") {
		w("\nThe decision does not wait for the log (entries are queued); signing costs the log goroutine's CPU, per line of a 600-byte entry (`go test -bench ^BenchmarkAppend$ -benchtime 3000x ./internal/auditlog`):\n\n")
		w("| log writer | µs/line |\n|---|---|\n")
		for _, c := range appendCases {
			w("| %s | %s |\n", c.name, r.cell("bench.Append/"+c.key+".ns/op", 1e-3, "%.1f"))
		}
		w("\nA seal (an ed25519 signature and one more line) is the expensive part; the proxy seals 0.1 s after an entry, with every entry written meanwhile (RATIONALE.md, the decision log).\n")
	}
}
