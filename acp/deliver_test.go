package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// Client.Deliver settles the request and reserves its answer's place in
// one step, and records what the agent gets: the handler's answer when it is first,
// the cancelled outcome when a session/cancel (or $/cancel_request)
// answered the request before it. The handler's later return value, and a
// second Deliver, change nothing.
func TestDeliverReturnsWhatTheAgentGets(t *testing.T) {
	allow := Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"allow"}}`)}
	for _, tc := range []struct {
		name   string
		cancel string // what the client sends before the handler delivers; "" for nothing
		want   string
	}{
		{"first", "", selected(`3`, "allow")},
		{"after session/cancel", `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n", cancelled(`3`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, proceed := make(chan struct{}), make(chan struct{})
			sent := make(chan string, 2)
			h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
				at <- struct{}{}
				<-proceed
				for range 2 {
					if err := c.Deliver(allow, func(line []byte) { sent <- string(line) + "\n" }); err != nil {
						t.Errorf("Deliver: %v", err)
					}
				}
				return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
			})})
			h.sendAgent(permReq(`3`))
			<-at
			if tc.cancel != "" {
				h.sendClient(tc.cancel)
				expect(t, "the cancel", h.agentGets(), tc.cancel)
				expect(t, "the request answered", h.agentGets(), tc.want)
			}
			close(proceed)
			expect(t, "Deliver's line", <-sent, tc.want)
			expect(t, "the second Deliver's line", <-sent, tc.want)
			if tc.cancel == "" {
				expect(t, "the request answered", h.agentGets(), tc.want)
			}
			h.sendClient(`{"jsonrpc":"2.0","method":"_marker"}` + "\n")
			if got := h.agentGets(); !strings.Contains(got, "_marker") {
				t.Fatalf("the agent got a second answer: %s", got)
			}
		})
	}
}
