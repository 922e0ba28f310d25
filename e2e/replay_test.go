package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/acptest"
)

// TestReplayTranscripts plays every recorded transcript through
// `permhost proxy -- fakeagent`: the fake client sends the recorded
// client->agent lines, the fake agent (a separate process) the recorded
// agent->client ones, each waiting for what precedes its next line. Both
// must receive exactly the recorded bytes. The proxy forwards every
// permission request here, so it is invisible: that includes the
// session/cancel transcripts, where the client's late `cancelled` answer
// must reach the agent and a request made after the cancel (claude-session-
// cancel seq 18) must get the client's `selected` answer unchanged.
func TestReplayTranscripts(t *testing.T) {
	for _, path := range acptest.TranscriptFiles(t) {
		tr, err := acptest.LoadTranscript(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			playThroughProxy(t, tr, path)
		})
	}
}

// TestReplayAnswerThenNextLine is the order a forwarded permission request
// must keep on the way back: the client answers it and at once sends its
// next line (here a notification, as in claude-session-cancel seq 15-16 a
// prompt); the agent must receive the answer first. Fifty rounds, with
// integer and string ids, so a race shows up.
func TestReplayAnswerThenNextLine(t *testing.T) {
	tr := &acptest.Transcript{Name: "answer-then-next-line"}
	c2a := func(s string) { tr.Append(acptest.ClientToAgent, s) }
	a2c := func(s string) { tr.Append(acptest.AgentToClient, s) }
	c2a(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	a2c(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}`)
	c2a(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	a2c(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`)
	for i := range 50 {
		id := strconv.Itoa(i)
		if i%2 == 1 {
			id = `"perm-` + id + `"`
		}
		c2a(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"go %d"}]}}`, i+2, i))
		a2c(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"c%d","title":"touch x","kind":"edit"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`, id, i))
		c2a(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, id))
		c2a(fmt.Sprintf(`{"jsonrpc":"2.0","method":"_vendor/ping","params":{"n":%d}}`, i))
		a2c(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}`, i+2))
	}
	playThroughProxy(t, tr, acptest.WriteTranscript(t, tr))
}

// playThroughProxy plays tr through `permhost proxy -- fakeagent path`
// (path holds tr): this test is the client, the fake agent plays the agent
// side, and each checks it receives exactly the recorded bytes.
func playThroughProxy(t *testing.T, tr *acptest.Transcript, path string) {
	t.Helper()
	argv := append([]string{permhostBin, "proxy", "--log-level", "debug", "--"}, acptest.FakeAgent(t, path)...)
	proxy := acptest.Start(t, argv...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &acptest.Player{Side: acptest.Client, LineTimeout: 10 * time.Second, CloseAfterScript: true}
	if err := client.Play(ctx, tr, proxy.Stdout, proxy.Stdin); err != nil {
		t.Fatalf("client side: %v\npermhost and agent stderr:\n%s", err, proxy.Stderr())
	}
	// The client hung up after the last line; the fake agent then sees its
	// stdin close, checks nothing more arrived and exits 0, and the proxy
	// exits with the agent's status.
	if code, err := proxy.Wait(15 * time.Second); err != nil || code != 0 {
		t.Fatalf("permhost proxy exit %d, %v (a non-zero status means the fake agent saw a difference)\nstderr:\n%s",
			code, err, proxy.Stderr())
	}
}
