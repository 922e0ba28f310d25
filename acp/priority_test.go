package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestHeldStartAndBurst: the agent's session/new result is held while the
// governor switches the mode, and the agent sends 17 MiB of updates before
// it answers the switch. The updates fill the bound behind the held
// result: the hold gives way instead of stopping the proxy from reading
// the switch's answer, the switch succeeds, and the client gets every
// update and the governed result.
func TestHeldStartAndBurst(t *testing.T) {
	switched := make(chan error, 1)
	g := &testGovernor{}
	g.start = func(ctx context.Context, s *SessionStart, c Caller) (json.RawMessage, *RPCError) {
		a, err := c.Agent(ctx, MethodSessionSetMode, json.RawMessage(`{"sessionId":"s-1","modeId":"default"}`))
		if err == nil && a.Error != nil {
			err = a.Error
		}
		switched <- err
		return nil, nil
	}
	h := newHarness(t, Options{Governor: g})
	h.sendClient(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}` + "\n")
	h.agentGets()
	h.sendAgent(newSessionResult)
	id, method, _ := envelopeOf(t, h.agentGets())
	if method != MethodSessionSetMode {
		t.Fatalf("the agent got %s", method)
	}
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("y", 1000) + `"}}}}` + "\n"
	const n = 17 << 10 // 17 MiB and more
	got := make(chan [2]int, 1)
	go func() { // the client reads everything
		updates, results := 0, 0
		for updates < n || results < 1 {
			s, ok := <-h.toClient
			if !ok {
				break
			}
			switch s {
			case update:
				updates++
			case newSessionResult:
				results++
			}
		}
		got <- [2]int{updates, results}
	}()
	go func() {
		for range n {
			h.sendAgent(update)
		}
		h.sendAgent(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n")
	}()
	if err := waitFor(t, switched, "the mode switch"); err != nil {
		t.Fatalf("the switch: %v", err)
	}
	if c := waitFor(t, got, "the client's lines"); c != [2]int{n, 1} {
		t.Fatalf("the client got %d updates and %d results", c[0], c[1])
	}
}

// TestOwnPromptPassesHeldStart: permhost's own prompt to the client does
// not wait behind a session's start the governor holds (another session's
// switch, slow to answer): it is shown at once, and its answer reaches the
// governor while the start is still held.
func TestOwnPromptPassesHeldStart(t *testing.T) {
	release := make(chan struct{})
	g := ownPrompter()
	g.start = func(ctx context.Context, s *SessionStart, c Caller) (json.RawMessage, *RPCError) {
		<-release
		return nil, nil
	}
	h := newHarness(t, Options{Governor: g})
	h.sendClient(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}` + "\n")
	h.agentGets()
	h.sendAgent(newSessionResult, writeReq)
	id, method, _ := envelopeOf(t, h.clientGets())
	if method != MethodRequestPermission {
		t.Fatalf("the client got %s first", method)
	}
	h.sendClient(selected(id, "allow"))
	expect(t, "the prompt's answer", h.agentGets(), `{"jsonrpc":"2.0","id":0,"result":{"prompt":{"outcome":{"outcome":"selected","optionId":"allow"}}}}`+"\n")
	close(release)
	expect(t, "then the held result", h.clientGets(), newSessionResult)
}
