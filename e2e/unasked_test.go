package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The unasked tests (#19 item 10) run `permhost proxy` governing a
// session in front of testdata/likeagent running tool calls with no
// permission request: each is logged ("unasked": true) and warned about.

// unaskedWarning is what permhost's stderr says, once a session, when the
// agent runs a tool call without asking.
const unaskedWarning = "the agent ran a tool call without asking: the policy never saw it"

func isUnasked(m map[string]any) bool { return m["unasked"] == true }

// TestUnaskedReusedToolCallID (#19 item 10): Gemini CLI asks to run rm -rf
// build and is allowed; once that call has completed it runs the command
// again under the same toolCallId with no permission request. The second
// call is a new call: permhost logs it as unasked, after the first's
// answer, and warns. (Before, the id's earlier request counted as asked
// for every later call under it.)
func TestUnaskedReusedToolCallID(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "gemini", start: "default", plugins: protectSecrets})
	asked := r.prompt(pick(t, "proceed_once"), "rerun: rm -rf build")
	ev := r.lastEvents(2)
	if len(asked) != 1 || ev[0].Step != "run: rm -rf build" || !ev[0].Asked || ev[0].Answer != "proceed_once" || !ev[0].Ran ||
		ev[1].Step != "rerun: rm -rf build" || !ev[1].Ran {
		t.Fatalf("asked %d; the agent: %+v", len(asked), ev)
	}
	_, req := r.client.waitFor("the permission request", func(m *wireMsg) bool { return m.Method == "session/request_permission" })
	var p struct {
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.ToolCall.ToolCallID == "" {
		t.Fatalf("the request %s: %v", req.Raw, err)
	}
	id := p.ToolCall.ToolCallID
	r.entries("unasked", isUnasked)
	r.finish()
	un := r.entries("unasked", isUnasked) // the whole log, now it is closed
	if len(un) != 1 {
		t.Fatalf("%d unasked entries, want 1 (the second call): %v", len(un), un)
	}
	tc, _ := un[0]["toolCall"].(map[string]any)
	if tc["id"] != id || tc["title"] != "rm -rf build" || tc["kind"] != "execute" || tc["status"] != "completed" ||
		un[0]["outcome"] != "ran" || un[0]["decidedBy"] != "agent" {
		t.Errorf("the unasked entry: %v", un[0])
	}
	// In the log, the first call's answer comes before the second's run.
	all := r.decisions(2)
	first := slices.IndexFunc(all, ofToolCall(id))
	second := slices.IndexFunc(all, isUnasked)
	if first < 0 || first > second {
		t.Errorf("the log has the answer at %d and the unasked run at %d: %v", first, second, all)
	}
	outcome, option := agentAnswerLogged(ev[0].Answer)
	r.logged("of the first call", ofToolCall(id), outcome, option)
	if n := strings.Count(r.proc.Stderr(), unaskedWarning); n != 1 {
		t.Errorf("stderr warned %d times, want once:\n%s", n, r.proc.Stderr())
	}
}

// TestUnaskedOtherKindWrite (#19 item 10): claude-agent-acp's Write tool
// filed as kind "other" that runs with no permission request is an edit by
// the claude profile's reading of it: permhost logs it as unasked and
// warns. (Before, only the ACP kinds that change something counted.)
func TestUnaskedOtherKindWrite(t *testing.T) {
	t.Parallel()
	r := startLikeWith(t, likeOpts{agent: "claude101", start: "default", plugins: protectSecrets})
	asked := r.prompt(allowOnce(t), "otherwrite: a.txt")
	if ev := r.lastEvents(1)[0]; len(asked) != 0 || ev.Step != "otherwrite: a.txt" || ev.Asked || !ev.Ran {
		t.Fatalf("asked %d; the agent: %+v", len(asked), ev)
	}
	r.entries("unasked", isUnasked)
	r.finish()
	un := r.entries("unasked", isUnasked) // the whole log, now it is closed
	if len(un) != 1 {
		t.Fatalf("%d unasked entries, want 1: %v", len(un), un)
	}
	tc, _ := un[0]["toolCall"].(map[string]any)
	if tc["title"] != "Write a.txt" || tc["kind"] != "other" || tc["status"] != "completed" ||
		un[0]["outcome"] != "ran" || un[0]["decidedBy"] != "agent" {
		t.Errorf("the unasked entry: %v", un[0])
	}
	if n := strings.Count(r.proc.Stderr(), unaskedWarning); n != 1 {
		t.Errorf("stderr warned %d times, want once:\n%s", n, r.proc.Stderr())
	}
}
