package e2e

import (
	"context"
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
			argv := append([]string{permhostBin, "proxy", "--log-level", "debug", "--"}, acptest.FakeAgent(t, path)...)
			proxy := acptest.Start(t, argv...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := &acptest.Player{Side: acptest.Client, LineTimeout: 10 * time.Second, CloseAfterScript: true}
			if err := client.Play(ctx, tr, proxy.Stdout, proxy.Stdin); err != nil {
				t.Fatalf("client side: %v\npermhost and agent stderr:\n%s", err, proxy.Stderr())
			}
			// The client hung up after the last line; the fake agent then sees
			// its stdin close, checks nothing more arrived and exits 0, and the
			// proxy exits with the agent's status.
			code, err := proxy.Wait(15 * time.Second)
			if err != nil || code != 0 {
				t.Fatalf("permhost proxy exit %d, %v (a non-zero status means the fake agent saw a difference)\nstderr:\n%s",
					code, err, proxy.Stderr())
			}
		})
	}
}
