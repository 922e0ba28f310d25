package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

const fuzzHeading = "## Fuzzing (`make fuzz`)"

// fuzzRun is one line of build/fuzz.tsv, which bench/fuzz.sh appends to.
type fuzzRun struct {
	at, target, fuzztime, status string
	execs                        int64
}

// fuzzSection is the fuzzing table from the runs bench/fuzz.sh recorded: for
// each target its longest clean run and its latest failure after that, if
// any. Without a record it is the section of the previous table.
func fuzzSection(tsv, out string) string {
	b, err := os.ReadFile(tsv)
	if err != nil {
		if old, err := os.ReadFile(out); err == nil {
			return keepSection(string(old), fuzzHeading)
		}
		return ""
	}
	return renderFuzz(parseFuzzRuns(string(b)))
}

func parseFuzzRuns(tsv string) []fuzzRun {
	var runs []fuzzRun
	for _, line := range strings.Split(tsv, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			continue
		}
		execs, _ := strconv.ParseInt(f[4], 10, 64)
		runs = append(runs, fuzzRun{at: f[0], target: f[1], fuzztime: f[2], status: f[3], execs: execs})
	}
	return runs
}

func renderFuzz(runs []fuzzRun) string {
	type summary struct {
		best   *fuzzRun // longest clean run, the latest among equals
		failed *fuzzRun // latest failure after best
	}
	byTarget := map[string]*summary{}
	for i := range runs {
		r := &runs[i]
		s := byTarget[r.target]
		if s == nil {
			s = &summary{}
			byTarget[r.target] = s
		}
		if !clean(r.status) {
			s.failed = r
			continue
		}
		if better(r, s.best) {
			s.best = r
		}
		if s.failed != nil && s.failed.at <= r.at {
			s.failed = nil // fixed since
		}
	}
	targets := make([]string, 0, len(byTarget))
	for t := range byTarget {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	var b strings.Builder
	clean5 := 0
	fmt.Fprintf(&b, "%s\n\n`bench/fuzz.sh FUZZTIME` runs every native fuzz target in turn (`FUZZFLAGS=-parallel=1` leaves a core for other work); each outcome is recorded in `build/fuzz.tsv`. A crasher stays in the package's `testdata/fuzz/` as a regression seed. Longest clean run of each target:\n\n", fuzzHeading)
	b.WriteString("| target | fuzz time | executions | when (UTC) | status |\n|---|---|---|---|---|\n")
	for _, t := range targets {
		s := byTarget[t]
		switch {
		case s.best == nil:
			fmt.Fprintf(&b, "| `%s` | | | %s | **failed**, no clean run |\n", t, s.failed.at)
			continue
		case duration(s.best.fuzztime) >= 5*time.Minute:
			clean5++
		}
		status := "clean"
		if s.best.status == statusCoordinatorRace {
			status = "clean; the run ended on Go's fuzz-coordinator deadline race ([golang/go#75804](https://go.dev/issue/75804)), no crasher"
		}
		if s.failed != nil {
			status = fmt.Sprintf("clean, then **failed** (%s, %s)", s.failed.fuzztime, s.failed.at)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %s | %s |\n", t, s.best.fuzztime, s.best.execs, s.best.at, status)
	}
	fmt.Fprintf(&b, "\n%d of %d targets ran clean for at least 5 minutes.\n", clean5, len(targets))
	return b.String()
}

// statusCoordinatorRace is what bench/fuzz.sh records for a run that Go
// 1.26's fuzz coordinator failed at the end of -fuzztime with a bare
// "context deadline exceeded" and no crasher (golang/go#75804): the time ran
// clean.
const statusCoordinatorRace = "ok-go75804"

func clean(status string) bool { return status == "ok" || status == statusCoordinatorRace }

// better reports whether clean run r beats best: a longer fuzz time, then a
// plain clean end over one on the coordinator race, then the later run.
func better(r, best *fuzzRun) bool {
	if best == nil {
		return true
	}
	if d, bd := duration(r.fuzztime), duration(best.fuzztime); d != bd {
		return d > bd
	}
	if (r.status == "ok") != (best.status == "ok") {
		return r.status == "ok"
	}
	return true
}

func duration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0
	}
	return d
}
