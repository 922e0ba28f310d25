package main

import (
	"strings"
	"testing"
)

func TestHostGoals(t *testing.T) {
	r := &report{}
	// Three repetitions; the per-repetition ratios are 1.4, 2.0 and 1.2.
	for _, v := range []struct{ inProc, raw, process float64 }{
		{14000, 10000, 50000}, {40000, 20000, 100000}, {12000, 10000, 40000},
	} {
		r.add("bench.Decide/permhost.ns/op", v.inProc)
		r.add("bench.Decide/wazero-raw.ns/op", v.raw)
		r.add("bench.Decide/permhost-process.ns/op", v.process)
	}
	g := r.hostGoals()
	if len(g) != 2 {
		t.Fatalf("%d goals, want 2", len(g))
	}
	if g[0].value != 1.4 || !g[0].met || !strings.Contains(g[0].target, "1.50×") {
		t.Errorf("ratio goal %+v: want the median of the paired ratios, 1.4, met", g[0])
	}
	// Paired differences 36, 60 and 28 µs: median 36.
	if g[1].value != 36 || !g[1].met {
		t.Errorf("process goal %+v: want +36 µs, met", g[1])
	}
	r.add("bench.Decide/permhost-process.ns/op", 200000) // counts differ: medians
	if g := r.hostGoals(); g[1].met {
		t.Errorf("process goal %+v: want missed", g[1])
	}
	if g := (&report{}).hostGoals(); len(g) != 0 {
		t.Errorf("goals without samples: %+v", g)
	}
}
