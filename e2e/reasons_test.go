package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// These tests run `permhost proxy` in front of testdata/likeagent: a
// reject by a plugin is followed by the _session/steering request that
// tells the model why (claude-agent-acp and codex-acp advertise it), and a
// question (codex-acp's plan review) reaches the person untouched.

// rejectShell is team-rules rejecting every shell call, with a reason.
const rejectShell = `[[plugin]]
name = "team-rules"
path = "std:team-rules"
layer = "team"
[[plugin.config.rules]]
action = "reject"
kind = "execute"
reason = "no shell here: use make clean"`

func TestSteeringAfterAPluginReject(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "codex", plugins: rejectShell, agentArgs: []string{"-steering-events"}})
	// The second step keeps the turn running while the steering arrives,
	// as the real agent's next model call does.
	r.prompt(allowOnce(t), "run: rm -rf build", "write: notes.txt")
	ev := r.lastEvents(3)
	want := "steering: The user's permission policy (permhost, plugin team-rules) rejected this tool call: team-rules: rules[0] (reject): kind execute; no shell here: use make clean (tool call: rm -rf build)"
	if ev[0].Step != "run: rm -rf build" || ev[0].Answer != "cancel" || ev[0].Ran {
		t.Errorf("the rm step: %+v", ev[0])
	}
	if ev[1].Step != want || ev[1].Answer != "injected" {
		t.Errorf("after the reject the agent got %+v, want %q injected", ev[1], want)
	}
	if ev[2].Step != "write: notes.txt" || !ev[2].Ran {
		t.Errorf("the next step: %+v", ev[2])
	}

	// On the wire: the reject, then permhost's own request at once.
	report := r.readReport()
	i := slices.IndexFunc(report, func(l string) bool {
		return strings.Contains(l, `"id":0,`) && strings.Contains(l, `"optionId":"cancel"`)
	})
	if i < 0 || i+1 >= len(report) {
		t.Fatalf("no reject in what the agent read:\n%s", strings.Join(report, "\n"))
	}
	var steer struct {
		ID     string `json:"id"`
		Method string `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(report[i+1]), &steer); err != nil || steer.Method != "_session/steering" ||
		!strings.HasPrefix(steer.ID, "permhost-") || steer.Params.SessionID != r.session {
		t.Errorf("after the reject the agent read %s", report[i+1])
	}
	if j := r.client.index(func(m *wireMsg) bool {
		return m.Method == "_session/steering" || strings.Contains(string(m.Raw), "injected")
	}); j >= 0 {
		t.Errorf("the editor saw permhost's steering")
	}
	e := r.entries("of the reject", func(m map[string]any) bool { return m["decidedBy"] == "team-rules" })[0]
	if st, _ := e["steer"].(map[string]any); st["text"] != strings.TrimPrefix(want, "steering: ") {
		t.Errorf("the entry's steer: %v", e["steer"])
	}
	r.finish()
}

// TestNoSteeringForAnAgentWithoutIt: Gemini CLI does not advertise the
// extension: nothing follows the reject.
func TestNoSteeringForAnAgentWithoutIt(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "gemini", plugins: rejectShell})
	r.prompt(allowOnce(t), "run: rm -rf build")
	if ev := r.lastEvents(1)[0]; ev.Ran || !ev.Asked {
		t.Errorf("the rm step: %+v", ev)
	}
	r.finish()
	for _, l := range r.readReport() {
		if strings.Contains(l, "steering") {
			t.Errorf("the agent read %s", l)
		}
	}
}

// TestQuestionReachesThePersonUntouched: codex-acp's plan review is a
// question: a plugin rejecting every mode switch is not asked, the editor
// gets the agent's request as it was sent and its answer is the agent's.
func TestQuestionReachesThePersonUntouched(t *testing.T) {
	t.Parallel()
	rules := `[[plugin]]
name = "team-rules"
path = "std:team-rules"
layer = "team"
[[plugin.config.rules]]
action = "reject"
kind = "switch_mode"
reason = "no plans"`
	r := startLikeWith(t, likeOpts{agent: "codex", plugins: rules})
	asked := r.prompt(pick(t, "implement_plan"), "planreview: 1. Remove the build dir.")
	if len(asked) != 1 || !slices.Equal(ids(asked[0]), []string{"implement_plan", "revise_plan"}) {
		t.Fatalf("the editor was shown %v", asked)
	}
	if ev := r.lastEvents(1)[0]; ev.Answer != "implement_plan" || !ev.Ran {
		t.Errorf("the agent: %+v", ev)
	}
	i := r.client.index(func(m *wireMsg) bool { return m.Method == "session/request_permission" })
	if m := r.client.received()[i]; strings.Contains(string(m.Raw), "permhost") {
		t.Errorf("the question was annotated: %s", m.Raw)
	}
	e := r.entries("of the question", func(m map[string]any) bool { return m["optionId"] == "implement_plan" })[0]
	if e["decidedBy"] != "person" || len(e["plugins"].([]any)) != 0 {
		t.Errorf("the question's entry: %v", e)
	}
	r.finish()
}

// TestRunSteersAfterAReject: permhost run (its own client, governed) follows
// a plugin's reject with _session/steering too, and claude-agent-acp 0.101
// gets it while the turn still runs.
func TestRunSteersAfterAReject(t *testing.T) {
	t.Parallel()
	r := newGovernedRun(t, teamRules, "")
	code, _, _ := r.run([]string{"--on-undecided", "reject"}, []string{"run: rm -rf build", "write: notes.txt"}, "-agent", "claude101", "-steering-events")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	ev := r.steps()
	i := slices.IndexFunc(ev, func(e likeEvent) bool { return e.Step == "run: rm -rf build" })
	if i < 0 || i+2 >= len(ev) || ev[i].Answer != "reject" ||
		!strings.HasPrefix(ev[i+1].Step, "steering: The user's permission policy (permhost, plugin team-rules) rejected this tool call: ") ||
		ev[i+1].Answer != "injected" || ev[i+2].Step != "write: notes.txt" {
		t.Errorf("the agent's steps: %+v", ev)
	}
}
