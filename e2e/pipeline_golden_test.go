package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// What varies between runs of the same decisions, and what it becomes in
// the golden file.
var (
	goldenDecisionID = regexp.MustCompile(`"decisionId":"d-[0-9a-f]{16}"`)
	goldenTime       = regexp.MustCompile(`"time":"[^"]*"`)
	goldenMicros     = regexp.MustCompile(`"(latencyUs|durationUs)":[0-9]+`)
)

// TestPipelineDecisionLogGolden: the decision-log lines `permhost proxy`
// writes for the codex-shaped turn under a three-layer chain — an admin
// plugin that abstains, a team plugin on trial (monitor) that would reject,
// and a user plugin that traps under failure_policy abstain — so the person
// decides: the exec request gets the durable allow the client chose; the
// patch request gets an answer that was not offered, refused. Times,
// durations and decision ids are normalised; plugin hashes become the
// fixture's name after being checked against the file.
// go test ./e2e -run TestPipelineDecisionLogGolden -update rewrites it.
func TestPipelineDecisionLogGolden(t *testing.T) {
	t.Parallel()
	tr := codexTranscript()
	audit := pluginSpec{name: "audit", path: wasmFixture("good"), timeout: "2s", policy: "closed", layer: "admin"}
	trial := scripted("trial", `{"outcome":"reject","reason":"trial: would reject"}`, 0, "2s")
	trial.policy, trial.layer = "monitor", "team"
	flaky := pluginSpec{name: "flaky", path: wasmFixture("unreachable"), timeout: "2s", policy: "abstain"}
	// Listed user first: the chain must still run admin, team, user.
	cfg, log := writeConfig(t, "sequential", flaky, trial, audit)
	answers := map[string][]byte{
		codexExecID:  editorAnswer([]byte(codexExecID), "approved-execpolicy-amendment"),
		codexPatchID: editorAnswer([]byte(codexPatchID), "approved-forever"),
	}
	r := startPipeline(t, cfg, log, tr, func(m *wireMsg) []byte { return answers[string(m.ID)] })
	checkPromptEnd(t, tr, r.client.playRequests(tr))
	r.decisions(2)
	r.finish()

	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for _, name := range []string{"good", "scripted", "unreachable"} {
		b, err := os.ReadFile(wasmFixture(name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		hashes[hex.EncodeToString(sum[:])] = name
	}
	n := 0
	got := goldenDecisionID.ReplaceAllFunc(raw, func([]byte) []byte {
		n++
		return fmt.Appendf(nil, `"decisionId":"d-%d"`, n)
	})
	got = goldenTime.ReplaceAll(got, []byte(`"time":"T"`))
	got = goldenMicros.ReplaceAll(got, []byte(`"$1":0`))
	got = regexp.MustCompile(`"sha256":"([0-9a-f]{64})"`).ReplaceAllFunc(got, func(m []byte) []byte {
		sum := string(m[len(`"sha256":"`) : len(m)-1])
		name, ok := hashes[sum]
		if !ok {
			t.Errorf("the log names plugin hash %s, which is no fixture's", sum)
		}
		return fmt.Appendf(nil, `"sha256":"sha256(%s.wasm)"`, name)
	})

	golden := filepath.Join("testdata", "pipeline-decisions.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("decision log differs from %s (run with -update if the change is intended):\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}
