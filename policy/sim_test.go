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
// A violation whose behaviour knownBugs lists is counted and logged, not
// failed; any other fails the test with the seed and the script, which
// -sim.seed=N or -sim.script=FILE replays.
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
	known := map[string]*tally{}
	count := func(k string, seed uint64) {
		c := known[k]
		if c == nil {
			c = &tally{}
			known[k] = c
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
		var unknown []simViolation
		for _, v := range res.vs {
			if item, ok := knownBug(v); ok && !replay {
				count(fmt.Sprintf("%s/%s (issue #19: %s)", v.Invariant, v.Behaviour, item), res.s.Seed)
				continue
			}
			unknown = append(unknown, v)
			count(fmt.Sprintf("%s/%s (not known: fails)", v.Invariant, v.Behaviour), res.s.Seed)
		}
		if len(unknown) == 0 {
			continue
		}
		failed++
		if failed > 3 {
			continue
		}
		file := filepath.Join(os.TempDir(), fmt.Sprintf("permhost-sim-%d.json", res.s.Seed))
		_ = os.WriteFile(file, []byte(res.s.String()), 0o644)
		var lines strings.Builder
		for _, v := range unknown {
			lines.WriteString("  " + v.String() + "\n")
		}
		t.Errorf("seed %d: %d violations:\n%sreplay: go test ./policy -run '^TestSimulation$' -sim.seed=%d (or -sim.script=%s)\nscript: %s",
			res.s.Seed, len(unknown), lines.String(), res.s.Seed, file, res.s)
	}
	if failed > 3 {
		t.Errorf("%d more seeds failed", failed-3)
	}
	var keys []string
	for k := range known {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s: %d violations, seeds %v", k, known[k].n, known[k].seeds)
	}
	t.Logf("%d scripts run, %d stuck, %d failed", len(scripts), stuck, failed)
}

var (
	simSeeds      = flag.Int("sim.seeds", 1000, "TestSimulation: how many seeds to run (PERMHOST_SIM_SEEDS overrides)")
	simSeed       = flag.Int64("sim.seed", -1, "TestSimulation: replay this seed only (known bugs are then reported too)")
	simScriptFile = flag.String("sim.script", "", "TestSimulation: replay the script in this JSON file")
)

// knownBugs are the behaviours on which today's main breaks an invariant,
// as "invariant/behaviour" (simViolation; the behaviour is what the script
// did on the request concerned, sim_check_test.go's behaviourOf): the
// default run counts their violations instead of failing. Each says which
// bug of issue #19 it is; remove an entry once its fix is merged. Found on
// branch sim (main at 36ecc47) over 4,000 seeds; the first seeds of each
// are in the test's log.
var knownBugs = map[string]string{
	// An editor batch holding an answer permhost drops (late: the plugins
	// won the race, or the request was withdrawn) loses its other
	// elements too, now and then (2 of 1,000 seeds under -race; not in
	// issue #19's list: found here).
	"f/batch": "a batch with a dropped permission answer loses its other elements",
}

// knownBug returns the knownBugs entry of v's behaviour.
func knownBug(v simViolation) (string, bool) {
	item, ok := knownBugs[v.Invariant+"/"+v.Behaviour]
	return item, ok
}
