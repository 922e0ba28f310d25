package acptest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestFakeAgentProcess connects the fake client directly to the fake agent
// running as a separate process: the harness without a proxy in between.
func TestFakeAgentProcess(t *testing.T) {
	for _, path := range TranscriptFiles(t) {
		tr, err := LoadTranscript(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			agent := Start(t, FakeAgent(t, path)...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := &Player{Side: Client, CloseAfterScript: true}
			if err := client.Play(ctx, tr, agent.Stdout, agent.Stdin); err != nil {
				t.Fatalf("client: %v", err)
			}
			code, err := agent.Wait(10 * time.Second)
			if err != nil || code != 0 {
				t.Fatalf("fake agent exit %d, %v; stderr:\n%s", code, err, agent.Stderr())
			}
		})
	}
}

func TestFakeAgentProcessReportsMismatch(t *testing.T) {
	tr := script(
		`client->agent {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"n":1.0}}`,
		`agent->client {"jsonrpc":"2.0","id":0,"result":{}}`,
	)
	agent := Start(t, FakeAgent(t, WriteTranscript(t, tr))...)
	// What a re-encoding proxy would send: the number rewritten.
	if _, err := agent.Stdin.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"n":1}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	code, err := agent.Wait(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	stderr := agent.Stderr()
	for _, want := range []string{"fakeagent script:", "seq 1 (client->agent) differs", "first difference at byte 61"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestFakeAgentProcessReportsEarlyHangUp(t *testing.T) {
	tr := script(
		`client->agent {"jsonrpc":"2.0","id":0,"method":"initialize"}`,
		`agent->client {"jsonrpc":"2.0","id":0,"result":{}}`,
	)
	agent := Start(t, FakeAgent(t, WriteTranscript(t, tr))...)
	agent.Stdin.Close()
	code, err := agent.Wait(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 || !strings.Contains(agent.Stderr(), "stream ended before the transcript did: waiting for seq 1") {
		t.Errorf("exit status %d, stderr:\n%s", code, agent.Stderr())
	}
}
