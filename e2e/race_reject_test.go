package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRacePersonRejectWhilePluginDecides (#19 item 8): with strategy =
// "race", the person rejects Gemini CLI's command while a plugin that
// would allow it is still deciding (the editor answers only once permhost
// has called the plugin). The reject wins: the agent gets it and does not
// run the command, and the decision log records the person's reject, with
// the plugin's vote discarded.
func TestRacePersonRejectWhilePluginDecides(t *testing.T) {
	t.Parallel()
	slow := fmt.Sprintf(`
[[plugin]]
name = "slow-allow"
path = %q
timeout = "60s"
failure_policy = "closed"
layer = "user"
[plugin.config]
decision = '{"outcome":"allow","reason":"scripted: yes"}'
delay_ms = 30000`, wasmFixture("scripted"))
	r := startLikeWith(t, likeOpts{agent: "gemini", start: "default", plugins: protectSecrets + slow,
		top: `strategy = "race"`, proxyArgs: []string{"--log-level", "debug"}})
	shown := make(chan *wireMsg, 1)
	r.mu.Lock()
	r.answerMsg = func(m *wireMsg) []byte {
		shown <- m // answered below, once the plugin is deciding
		return nil
	}
	r.mu.Unlock()
	r.client.send([]byte(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":` + quote(r.session) + `,"prompt":[{"type":"text","text":"run: rm -rf build"}]}}`))
	var req *wireMsg
	select {
	case req = <-shown:
	case <-time.After(pipeWait):
		t.Fatal("the editor was never shown the request")
	}
	deadline := time.Now().Add(pipeWait)
	for !logHas(r.proc.Stderr(), `msg="calling plugin"`, `plugin=slow-allow`) {
		if time.Now().After(deadline) {
			t.Fatalf("permhost did not call the plugin within %v", pipeWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.client.send(editorAnswer(req.ID, "cancel"))
	if _, end := r.client.waitFor("the turn's end", func(m *wireMsg) bool { return m.isResponse() && string(m.ID) == `"p"` }); !strings.Contains(string(end.Result), "end_turn") {
		t.Fatalf("the turn ended %s", end.Raw)
	}
	ev := r.lastEvents(1)[0]
	if ev.Step != "run: rm -rf build" || !ev.Asked || ev.Answer != "cancel" || ev.Ran {
		t.Fatalf("the agent: %+v, want the person's reject", ev)
	}
	e := r.logged("of the command", ofTitle("rm -rf build"), "selected", "cancel")
	if e["decidedBy"] != "person" || e["strategy"] != "race" {
		t.Errorf("the command's entry: %v", e)
	}
	// The plugin lost: what it would have said is discarded, not waited
	// for.
	if plugins, ok := e["plugins"].([]any); !ok || len(plugins) != 0 {
		t.Errorf("the log has the plugin's vote: %v", e)
	}
	r.finish()
}
