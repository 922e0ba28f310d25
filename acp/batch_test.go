package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Each element of an agent batch goes through the same path as a single
// line: a tool_call update earlier in the batch is merged into the
// permission request after it (escaped method name and all), a response
// clears the client's pending request (the client gets no error for it
// when the agent ends), and the batch goes on without the request.
func TestAgentBatchElementByElement(t *testing.T) {
	got := make(chan *PermissionRequest, 1)
	h := newHarness(t, Options{
		AgentExit: func(context.Context) string { return "the agent exited" },
		Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
			got <- req
			return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
		}),
	})
	prompt := `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}}` + "\n"
	other := `{"jsonrpc":"2.0","id":2,"method":"_vendor/x"}` + "\n"
	h.sendClient(prompt, other)
	expect(t, "prompt", h.agentGets(), prompt)
	expect(t, "other", h.agentGets(), other)
	update := strings.TrimSpace(toolUpdate)
	request := strings.Replace(strings.TrimSpace(permReq(`9`)), `"session/request_permission"`, `"session\u002frequest_permission"`, 1)
	response := `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`
	h.sendAgent("[" + update + "," + request + "," + response + "]\n")
	expect(t, "the batch without the request", h.clientGets(), "["+update+","+response+"]\n")
	req := waitFor(t, got, "the handler")
	if !strings.Contains(string(req.ToolCall), `"command":"rm -rf build"`) {
		t.Fatalf("the batch's update was not merged: %s", req.ToolCall)
	}
	expect(t, "answer", h.agentGets(), selected(`9`, "reject"))
	h.closeAgent()
	// The response in the batch answered the prompt: only the other
	// request gets an error (the prompt's would have come first).
	expect(t, "the error for the request left", h.clientGets(),
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"permhost: the agent exited before answering _vendor/x"}}`+"\n")
}

// An initialize answer inside a batch goes through the version gate: the
// client gets the batch with the element replaced by the error, and the
// proxy stops.
func TestBatchedInitializeGoesThroughTheGate(t *testing.T) {
	h := newHarness(t, Options{})
	h.sendClient(`[{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}},{"jsonrpc":"2.0","method":"_x"}]` + "\n")
	h.agentGets()
	h.sendAgent(`[{"jsonrpc":"2.0","method":"_before"},{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}]` + "\n")
	got := h.clientGets()
	if !strings.HasPrefix(got, `[{"jsonrpc":"2.0","method":"_before"},{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"permhost: the agent answered protocolVersion 2`) ||
		!strings.HasSuffix(got, "}}]\n") {
		t.Fatalf("client got %q", got)
	}
	if err := waitFor(t, h.done, "Run"); !errors.Is(err, ErrProtocolVersion) {
		t.Fatalf("Run: %v", err)
	}
	h.done <- nil
}

// Each element of a client batch goes through the same path too: requests
// become pending and teach session state, initialize is rewritten in
// place, an answer to a forwarded permission request is replaced in place
// by the agent's re-encoded answer, answers permhost drops leave the
// batch, and a batch left empty is not sent.
func TestClientBatchElementByElement(t *testing.T) {
	got := make(chan *PermissionRequest, 2)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		got <- req
		return forward.RequestPermission(ctx, req, c)
	})})
	h.sendClient(`[{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":3,"clientInfo":{"name":"zed"}}},` +
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev/p","mcpServers":[]}}]` + "\n")
	expect(t, "initialize rewritten in the batch", h.agentGets(), `[{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zed"}}},`+
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev/p","mcpServers":[]}}]`+"\n")
	h.sendAgent(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`+"\n", `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-1","modes":{"currentModeId":"plan"}}}`+"\n")
	h.clientGets()
	h.clientGets()
	h.sendAgent(permReq(`5`))
	if req := waitFor(t, got, "the request"); req.Session.Cwd != "/home/dev/p" || req.Session.Mode != "plan" || req.Session.Client.Name != "zed" {
		t.Fatalf("the batch's session/new taught nothing: %+v", req.Session)
	}
	h.clientGets()
	h.sendClient(`[{"jsonrpc":"2.0","method":"_a"},` + strings.TrimSpace(selected(`5`, "allow")) + `,{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}},{"jsonrpc":"2.0","method":"_b"}]` + "\r\n")
	expect(t, "the answer in its place, the second answer gone", h.agentGets(),
		`[{"jsonrpc":"2.0","method":"_a"},`+strings.TrimSpace(selected(`5`, "allow"))+`,{"jsonrpc":"2.0","method":"_b"}]`+"\r\n")
	// A batch of answers permhost drops leaves nothing to send.
	h.sendClient(`[` + strings.TrimSpace(selected(`5`, "allow")) + `]` + "\n")
	h.syncBoth()
}

// A client batch's session/cancel cancels the session's held requests
// once the batch is on its way: the agent gets the batch, then the
// cancelled outcome.
func TestClientBatchCancel(t *testing.T) {
	b := newBlocking()
	h := newHarness(t, Options{Handler: b})
	h.sendAgent(permReq(`2`))
	waitFor(t, b.started, "the handler")
	batch := `[{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}},{"jsonrpc":"2.0","method":"_after"}]` + "\n"
	h.sendClient(batch)
	expect(t, "the batch", h.agentGets(), batch)
	expect(t, "then the held request, cancelled", h.agentGets(), cancelled(`2`))
}

// A client batch holding an answer permhost drops keeps its other
// elements, whatever made the answer droppable (the simulation's f/batch,
// issue #19): an answer to a request the handler withdrew (the plugins won
// the race), a second answer to one already answered, and either with the
// client closing its output right after the batch, the agent's input then
// closed only once the batch is written; and an answer whose handler is
// still relaying it when the client closes goes out in the batch, in its
// place, before the agent's input is closed.
func TestClientBatchKeepsOthersWhenAnswerDropped(t *testing.T) {
	const note = `{"jsonrpc":"2.0","method":"_sim/note","params":{"tc":"t1"}}`
	for _, tc := range []struct {
		name string
		// withdraw: the handler withdraws the request before the client
		// answers; again: the client answered once before the batch.
		withdraw, again, close bool
	}{
		{name: "withdrawn", withdraw: true},
		{name: "withdrawn, then the client closes", withdraw: true, close: true},
		{name: "answered before", again: true},
		{name: "answered before, then the client closes", again: true, close: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withdraw, withdrawn := make(chan struct{}), make(chan struct{})
			h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
				actx, cancel := context.WithCancel(ctx)
				defer cancel()
				go func() {
					select {
					case <-withdraw:
						cancel()
					case <-actx.Done():
					}
				}()
				a, err := c.Ask(actx, nil)
				if err != nil {
					close(withdrawn)
					return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
				}
				return Response{Line: a.Line}, nil
			})})
			h.sendAgent(permReq(`4`))
			expect(t, "the request shown", h.clientGets(), permReq(`4`))
			if tc.withdraw {
				close(withdraw)
				<-withdrawn
				expect(t, "the withdrawal", h.clientGets(), `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":4}}`+"\n")
				expect(t, "the handler's answer", h.agentGets(), selected(`4`, "reject"))
			}
			if tc.again {
				h.sendClient(selected(`4`, "allow"))
				expect(t, "the first answer", h.agentGets(), selected(`4`, "allow"))
			}
			h.sendClient(`[` + note + `,` + strings.TrimSpace(selected(`4`, "allow")) + `]` + "\n")
			if tc.close {
				h.closeClient()
			}
			expect(t, "the batch without the dropped answer", h.agentGets(), `[`+note+`]`+"\n")
			if tc.close {
				if s, ok := <-h.toAgent; ok {
					t.Fatalf("after the batch the agent got %q", s)
				}
			} else {
				h.syncBoth()
			}
		})
	}
	t.Run("relayed after the client closed", func(t *testing.T) {
		relay := make(chan struct{})
		h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
			a, err := c.Ask(ctx, nil)
			if err != nil {
				return Response{}, err
			}
			<-relay
			return Response{Line: a.Line}, nil
		})})
		h.sendAgent(permReq(`4`))
		expect(t, "the request shown", h.clientGets(), permReq(`4`))
		answer := strings.TrimSpace(selected(`4`, "allow"))
		h.sendClient(`[` + note + `,` + answer + `]` + "\n")
		h.closeClient()
		close(relay)
		expect(t, "the whole batch, the answer in its place", h.agentGets(), `[`+note+`,`+answer+`]`+"\n")
		if s, ok := <-h.toAgent; ok {
			t.Fatalf("after the batch the agent got %q", s)
		}
	})
}
