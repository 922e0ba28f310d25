package main

import (
	"fmt"
	"slices"
)

// inProc is the constant plugin's warm decision in process, the floor of
// both host goals and of the process wall's note.
const inProc = "bench.Decide/permhost.ns/op"

// hostGoals are issue #20's goals for the host's own cost, each judged
// against its floor measured in the same run (BenchmarkDecide): the
// constant plugin through host.Plugin.Decide against the raw wazero call of
// the same module, and the same plugin behind the process wall against it
// in process. Absent when BenchmarkDecide did not run.
func (r *report) hostGoals() []goal {
	var g []goal
	const raw, process = "bench.Decide/wazero-raw.ns/op", "bench.Decide/permhost-process.ns/op"
	if r.has(inProc) && r.has(raw) {
		q := r.pairedMedian(inProc, raw, func(a, b float64) float64 { return a / b })
		g = append(g, goal{name: "Warm constant plugin (`Plugin.Decide`: encode, call under the deadline, decode, validate) vs the raw wazero call, same run",
			target: "≤ 1.50×", value: q,
			shown: fmt.Sprintf("%.2f× (%.1f µs vs %.1f µs)", q, r.median(inProc)/1e3, r.median(raw)/1e3),
			met:   q <= 1.5, by: fmt.Sprintf("%+.2f×", q-1.5),
			note: fmt.Sprintf("the host's own work (encoding, the deadline's hand-off, decoding, validating) took %.1f µs per call beyond the raw call's %.1f µs in this run; its profile is in RATIONALE.md (\"The host's own cost per decision\")",
				(r.median(inProc)-r.median(raw))/1e3, r.median(raw)/1e3)})
	}
	if r.has(inProc) && r.has(process) {
		d := r.pairedMedian(process, inProc, func(a, b float64) float64 { return (a - b) / 1e3 })
		g = append(g, goal{name: "Process wall: the constant plugin through a worker child vs in process, same run",
			target: "≤ +40 µs", value: d,
			shown: fmt.Sprintf("%+.1f µs (%.1f µs vs %.1f µs)", d, r.median(process)/1e3, r.median(inProc)/1e3),
			met:   d <= 40, by: fmt.Sprintf("%+.1f µs", d-40),
			note: r.processNote(d)})
	}
	return g
}

// pairedMedian is the median of f over the samples of a and b taken in the
// same repetition (go test -count runs every sub-benchmark once per
// repetition, in order), or f of the medians when the counts differ.
func (r *report) pairedMedian(a, b string, f func(a, b float64) float64) float64 {
	sa, sb := r.samples[a], r.samples[b]
	if len(sa) != len(sb) || len(sa) == 0 {
		return f(r.median(a), r.median(b))
	}
	v := make([]float64, len(sa))
	for i := range sa {
		v[i] = f(sa[i], sb[i])
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// processNote is the measured reason for the process wall's cost, beside
// its alternative (parking at once) and a decision after a pause.
func (r *report) processNote(added float64) string {
	n := fmt.Sprintf("the wall added %.1f µs per decision in this run", added)
	if cpu := "bench.Decide/permhost-process.child-cpu-µs/op"; r.has(cpu) {
		n += fmt.Sprintf(", of which the worker child spent %.1f µs of CPU", r.median(cpu))
	}
	const park = "bench.Decide/permhost-process-park.ns/op"
	if r.has(park) {
		n += fmt.Sprintf("; with each side parking at once instead of polling the pipe for up to 100 µs first, it added %.1f µs",
			r.pairedMedian(park, inProc, func(a, b float64) float64 { return (a - b) / 1e3 }))
	}
	const idle, idleIn, idlePark = "bench.DecideIdle/permhost-process.ns/op", "bench.DecideIdle/permhost.ns/op", "bench.DecideIdle/permhost-process-park.ns/op"
	if r.has(idle) && r.has(idleIn) {
		n += fmt.Sprintf("; one decision after a 2 ms pause took %.1f µs behind the wall", r.median(idle)/1e3)
		if r.has(idlePark) {
			n += fmt.Sprintf(" (parking at once: %.1f µs)", r.median(idlePark)/1e3)
		}
		n += fmt.Sprintf(" against %.1f µs in process", r.median(idleIn)/1e3)
	}
	return n + "; RATIONALE.md (\"The host's own cost per decision\", Process wall, third pass) has the measurements"
}
