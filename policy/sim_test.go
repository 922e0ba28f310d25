package policy_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSimulation is the deterministic simulation of permhost's mediation
// (docs/simulation.md): for each seed, generate (sim_script_test.go) a
// script of sessions (some starting in modes that decide by themselves),
// the agent's permission requests (several outstanding, ids reused and
// colliding with the editor's and permhost's own), fs/* and
// terminal/create requests, mode updates, the editor's prompts, mode
// switches and answers (valid, not offered, extra or duplicate keys,
// cancelled, errors, late, after session/cancel), plugin verdicts held
// until a step releases them, and either peer dying; run it
// (sim_run_test.go) through acp.Proxy with a real Engine's handler and
// governor, each peer's writes cut at seeded byte boundaries; and check
// (sim_check_test.go):
//
//	(a) every option the agent got was offered in that request, and one
//	    the log says the person chose is the editor's answer to it;
//	(b) no prompt of a governed session reaches the agent while the mode it
//	    last reported (and the editor saw) decides by itself;
//	(c) the decision log says what the agent got, request by request;
//	(d) every agent request is answered exactly once (unless a peer died);
//	(e) the editor never has two outstanding requests with one id;
//	(f) every other message arrives byte for byte, in order.
//
// The script is deterministic; the interleaving of the proxy's goroutines
// is not, so a replay runs the same script, not always the same schedule.
// Any violation fails the test with the seed and the script, which
// -sim.seed=N or -sim.script=FILE replays; the log counts the violations
// by invariant and behaviour (what the script did around them).
func TestSimulation(t *testing.T) {
	var scripts []*simScript
	switch {
	case *simScriptFile != "":
		b, err := os.ReadFile(*simScriptFile)
		if err != nil {
			t.Fatal(err)
		}
		s := &simScript{}
		if err := json.Unmarshal(b, s); err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, s)
	case *simSeed >= 0:
		scripts = append(scripts, generate(uint64(*simSeed)))
	default:
		n := *simSeeds
		if v := os.Getenv("PERMHOST_SIM_SEEDS"); v != "" {
			var err error
			if n, err = strconv.Atoi(v); err != nil {
				t.Fatalf("PERMHOST_SIM_SEEDS: %v", err)
			}
		}
		for seed := range n {
			scripts = append(scripts, generate(uint64(seed)))
		}
	}
	replay := len(scripts) == 1

	type result struct {
		s     *simScript
		vs    []simViolation
		stuck bool
	}
	results := make([]result, len(scripts))
	work := make(chan int)
	var wg sync.WaitGroup
	// A run mostly waits on pipes (and a stuck one on its bound): more
	// runs than CPUs keep them busy.
	for range max(32, 16*runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range work {
				r := newSimRun(scripts[i])
				start := time.Now()
				r.run(filepath.Join(t.TempDir(), "grants.json"))
				if d := time.Since(start); d > 5*time.Second {
					t.Logf("seed %d took %v", scripts[i].Seed, d)
				}
				results[i] = result{scripts[i], r.check(), len(r.stuck) > 0}
				if replay {
					r.transcript(t)
				}
			}
		})
	}
	for i := range scripts {
		work <- i
	}
	close(work)
	wg.Wait()

	type tally struct {
		n     int
		seeds []uint64 // the first few
	}
	counts := map[string]*tally{}
	count := func(k string, seed uint64) {
		c := counts[k]
		if c == nil {
			c = &tally{}
			counts[k] = c
		}
		if c.n++; len(c.seeds) < 5 && !slices.Contains(c.seeds, seed) {
			c.seeds = append(c.seeds, seed)
		}
	}
	failed, stuck := 0, 0
	for _, res := range results {
		if res.stuck {
			stuck++
		}
		for _, v := range res.vs {
			count(fmt.Sprintf("%s/%s", v.Invariant, v.Behaviour), res.s.Seed)
		}
		if len(res.vs) == 0 {
			continue
		}
		failed++
		if failed > 3 {
			continue
		}
		file := filepath.Join(os.TempDir(), fmt.Sprintf("permhost-sim-%d.json", res.s.Seed))
		_ = os.WriteFile(file, []byte(res.s.String()), 0o644)
		var lines strings.Builder
		for _, v := range res.vs {
			lines.WriteString("  " + v.String() + "\n")
		}
		t.Errorf("seed %d: %d violations:\n%sreplay: go test ./policy -run '^TestSimulation$' -sim.seed=%d (or -sim.script=%s)\nscript: %s",
			res.s.Seed, len(res.vs), lines.String(), res.s.Seed, file, res.s)
	}
	if failed > 3 {
		t.Errorf("%d more seeds failed", failed-3)
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s: %d violations, seeds %v", k, counts[k].n, counts[k].seeds)
	}
	t.Logf("%d scripts run, %d stuck, %d failed", len(scripts), stuck, failed)
}

var (
	simSeeds      = flag.Int("sim.seeds", 1000, "TestSimulation: how many seeds to run (PERMHOST_SIM_SEEDS overrides)")
	simSeed       = flag.Int64("sim.seed", -1, "TestSimulation: replay this seed only")
	simScriptFile = flag.String("sim.script", "", "TestSimulation: replay the script in this JSON file")
)
