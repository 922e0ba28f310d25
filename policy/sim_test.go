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
// as "invariant/behaviour" (simViolation): the default run counts their
// violations instead of failing. Each names its issue #19 item; remove an
// entry once its fix is merged.
//
// Found on branch sim (main at 36ecc47); the behaviour is what the script
// did on the request the violation is about (sim_check_test.go,
// behaviourOf), "" when nothing unusual.
var knownBugs = map[string]string{
	// The agent reuses an id: of a request not answered yet, of one it has
	// the answer to, the id the editor's requests use, or permhost's own.
	// The proxy cancels the older request but the editor may still hold it
	// (e), the agent gets fewer or more answers than requests (d), the log
	// and the answer disagree (c), an answer names another request's
	// option (a).
	"a/id-reuse-outstanding": "agent reusing its id",
	"a/id-reuse-answered":    "agent reusing its id",
	"a/id-reuse-editor":      "agent reusing its id",
	"a/id-reuse-own":         "agent ids colliding with permhost's own",
	"c/id-reuse-outstanding": "agent reusing its id",
	"c/id-reuse-answered":    "agent reusing its id",
	"c/id-reuse-editor":      "agent reusing its id",
	"c/id-reuse-own":         "agent ids colliding with permhost's own",
	"d/id-reuse-outstanding": "agent reusing its id",
	"d/id-reuse-answered":    "agent reusing its id",
	"d/id-reuse-editor":      "agent reusing its id",
	"d/id-reuse-own":         "agent ids colliding with permhost's own",
	"e/id-reuse-outstanding": "agent reusing its id",
	"e/id-reuse-answered":    "agent reusing its id",
	"e/id-reuse-editor":      "agent reusing its id",
	"e/id-reuse-own":         "agent ids colliding with permhost's own",
	// The editor's answer is not a plain valid one: the log records the
	// builtin's or the person's option, the agent gets cancelled.
	"c/answer-extra":   "editor answer with an extra top-level key logged differently than the agent got it",
	"c/answer-dup":     "editor answer with a duplicate key logged differently than the agent got it",
	"c/answer-invalid": "editor answer naming an option not offered logged differently than the agent got it",
	"c/answer-again":   "a late second editor answer: the log and the agent's answer differ",
	"c/answer-batch":   "an editor answer inside a batch: the log and the agent's answer differ",
	"c/answer-error":   "an editor error answer: the log and the agent's answer differ",
	// session/cancel: the agent gets cancelled, the log keeps the
	// person's or the plugins' selection; requests may go unanswered.
	"c/answer-cancel":           "answers after session/cancel logged as selected, relayed cancelled",
	"c/session-cancelled":       "answers after session/cancel logged as selected, relayed cancelled",
	"d/answer-cancel":           "a request left unanswered after session/cancel",
	"d/session-cancelled":       "a request left unanswered after session/cancel",
	"d/answer-error":            "a request left unanswered after an editor error answer",
	"b/prompt-in-deciding-mode": "session prompts reaching the agent before the mode switch",
	"c/race":                    "race-strategy nondeterminism",
	"d/race":                    "race-strategy nondeterminism",
	// Not yet triaged: an agent request left unanswered with nothing
	// unusual in the script (seeds 14, 31, 32, 70 of 300; it does not
	// replay every time).
	"d/": "an agent request left unanswered (untriaged, nondeterministic)",
	"c/": "the log and the agent's answer differ (untriaged, nondeterministic)",
	// Any other unusual answer of the editor's may leave the agent's
	// request unanswered, or answered but logged otherwise.
	"a/answer-*":   "editor answer with an extra top-level key logged differently than the agent got it",
	"c/answer-*":   "an unusual editor answer: the log and the agent's answer differ",
	"d/answer-*":   "a request left unanswered after an unusual editor answer",
	"f/id-reuse-*": "agent reusing its id: the agent's answer to the editor's request with that id goes astray",
}

// knownBug returns the knownBugs entry matching v: its key, or a key
// ending in * that its key starts with.
func knownBug(v simViolation) (string, bool) {
	key := v.Invariant + "/" + v.Behaviour
	if item, ok := knownBugs[key]; ok {
		return item, true
	}
	for k, item := range knownBugs {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(key, p) {
			return item, true
		}
	}
	return "", false
}
