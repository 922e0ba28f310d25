package e2e

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// TestHeldStartBurst (#19 item 9): claude-agent-acp starts its session in
// auto, so permhost holds the session/new result while it switches the
// mode; before answering the switch the agent sends 17 MiB of
// session/update lines. The burst behind the held result does not stall
// permhost's own switch: the agent answers it after the burst, the editor
// gets the result in the governed mode and every update, and the next
// command is asked.
func TestHeldStartBurst(t *testing.T) {
	t.Parallel()
	const mib = 17
	lines := mib << 10
	r := startLikeWith(t, likeOpts{agent: "claude101", plugins: protectSecrets, agentArgs: []string{"-burst", fmt.Sprint(mib)}})
	if mode, value := sessionModes(t, r.started.Result); mode != "default" || value != "default" {
		t.Fatalf("the editor's session is in mode %q / config %q, want default:\n%.500s", mode, value, r.started.Raw)
	}
	r.waitEvent("set_config_option: default")
	var steps []string
	for _, ev := range r.lastEvents(2) {
		steps = append(steps, ev.Step)
	}
	if want := []string{fmt.Sprint("burst: ", lines), "set_config_option: default"}; !slices.Equal(steps, want) {
		t.Fatalf("the agent did %v, want %v", steps, want)
	}
	e := r.entries("of the switch", modeAction("switch"))[0]
	if m := e["mode"].(map[string]any); m["from"] != "auto" || m["to"] != "default" || e["decidedBy"] != "modes" {
		t.Errorf("the switch's entry: %v", e)
	}
	asked := r.prompt(allowOnce(t), "run: rm -rf build")
	if ev := r.lastEvents(1)[0]; len(asked) != 1 || !ev.Asked || !ev.Ran {
		t.Fatalf("the command: asked %d, %+v", len(asked), ev)
	}
	outcome, option := agentAnswerLogged(r.lastEvents(1)[0].Answer)
	r.logged("of the command", ofTitle("rm -rf build"), outcome, option)
	// Every update of the burst reached the editor, before the turn.
	chunks := 0
	for _, m := range r.client.received() {
		if m.Method == "session/update" && bytes.Contains(m.Params, []byte(`"agent_message_chunk"`)) {
			chunks++
		}
	}
	if chunks != lines {
		t.Errorf("the editor got %d updates of the burst, want %d", chunks, lines)
	}
	r.finish()
}
