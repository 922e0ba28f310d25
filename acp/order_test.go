package acp

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// gatedForward forwards each request to the client and, once the client has
// answered, holds its answer until gate is closed.
func gatedForward(answered *atomic.Int32, gate <-chan struct{}) Handler {
	return HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		a, err := c.Ask(ctx, nil)
		if err != nil {
			return Response{}, err
		}
		answered.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
			return Response{}, ctx.Err()
		}
		return Response{Line: a.Line}, nil
	})
}

// oneGatedRequest is a proxy whose handler forwards each request and holds
// the client's answer until gate is closed, with request 1 forwarded to the
// client already.
func oneGatedRequest(t *testing.T) (h *harness, answered *atomic.Int32, gate chan struct{}) {
	answered, gate = new(atomic.Int32), make(chan struct{})
	h = newHarness(t, Options{Handler: gatedForward(answered, gate)})
	h.sendAgent(permReq(`1`))
	h.clientGets()
	return h, answered, gate
}

// The client's answers reach their handlers even while no handler has
// relayed its answer yet: reading from the client never waits for a
// handler. (Waiting for each handler in turn, as permhost once did, made
// this test wait 2 s per answer.) The agent still gets the answers and the
// client's later line in the client's order.
func TestClientAnswersDoNotWaitForHandlers(t *testing.T) {
	const n = 50
	var answered atomic.Int32
	gate := make(chan struct{})
	h := newHarness(t, Options{Handler: gatedForward(&answered, gate)})
	for i := range n {
		h.sendAgent(permReq(strconv.Itoa(i)))
	}
	for range n {
		h.clientGets()
	}
	for i := range n {
		h.sendClient(selected(strconv.Itoa(i), "allow"))
	}
	const after = `{"jsonrpc":"2.0","method":"_test/after"}` + "\n"
	h.sendClient(after)
	deadline := time.Now().Add(10 * time.Second)
	for answered.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d handlers got the client's answer: the proxy waits for a handler before reading on", answered.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	close(gate)
	for i := range n {
		expect(t, fmt.Sprintf("answer %d", i), h.agentGets(), selected(strconv.Itoa(i), "allow"))
	}
	expect(t, "the client's later line, after the answers", h.agentGets(), after)
}

// A handler that is slow to relay the answer holds the client's later lines
// (not the permission answer's place) until it does; the client's end of
// input then waits for them too.
func TestLaterLinesWaitBehindTheAnswer(t *testing.T) {
	h, answered, gate := oneGatedRequest(t)
	later := []string{
		`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}}` + "\n",
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"other"}}` + "\n",
		`{"jsonrpc":"2.0","method":"_x/unterminated"}`,
	}
	h.sendClient(selected(`1`, "reject"))
	h.sendClient(later...)
	h.closeClient()
	for answered.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	select {
	case l := <-h.toAgent:
		t.Fatalf("the agent got %q before the answer was relayed", l)
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	expect(t, "answer first", h.agentGets(), selected(`1`, "reject"))
	for _, l := range later {
		expect(t, "later line", h.agentGets(), l)
	}
	if l, ok := <-h.toAgent; ok {
		t.Fatalf("the agent got %q after the client's last line", l)
	}
}

// A handler that never relays the answer holds the client's later lines for
// answerOrderWait at most; its answer, when it comes, still reaches the
// agent.
func TestSlowHandlerReleasesLaterLines(t *testing.T) {
	if testing.Short() {
		t.Skip("waits answerOrderWait")
	}
	h, _, gate := oneGatedRequest(t)
	const after = `{"jsonrpc":"2.0","method":"_test/after"}` + "\n"
	start := time.Now()
	h.sendClient(selected(`1`, "allow"), after)
	expect(t, "later line, released", h.agentGets(), after)
	if waited := time.Since(start); waited < answerOrderWait/2 {
		t.Fatalf("the later line was released after %v, before the handler answered and well before answerOrderWait", waited)
	}
	close(gate)
	expect(t, "the answer, late", h.agentGets(), selected(`1`, "allow"))
}

const sessionCancel = `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n"

// answerThenCancel has the client answer request 1 and cancel the session
// at once, lets the gated handlers relay, and checks that the agent gets the
// answer as given and then the cancel.
func answerThenCancel(t *testing.T, h *harness, answered *atomic.Int32, gate chan struct{}, option string) {
	t.Helper()
	h.sendClient(selected(`1`, option), sessionCancel)
	for answered.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the cancel be read
	close(gate)
	expect(t, "the answer as given", h.agentGets(), selected(`1`, option))
	expect(t, "then the cancel", h.agentGets(), sessionCancel)
}

// The client answers, then cancels the session before the handler has
// relayed the answer: the agent gets the answer as given, then the cancel,
// as the client sent them (not a cancelled outcome the client never sent).
func TestAnswerThenSessionCancelKeepsTheAnswer(t *testing.T) {
	h, answered, gate := oneGatedRequest(t)
	answerThenCancel(t, h, answered, gate, "allow")
}

// Behind a held answer, the client's session/cancel and the cancelled
// outcomes it causes for requests still with their handlers reach the agent
// in that order, after the answer.
func TestSessionCancelBehindAnAnswerKeepsOrder(t *testing.T) {
	var answered atomic.Int32
	gate := make(chan struct{})
	forward := gatedForward(&answered, gate)
	started := make(chan struct{}, 1)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		if string(req.ID) == "2" { // a handler still deciding
			started <- struct{}{}
			<-ctx.Done()
			return Response{}, ctx.Err()
		}
		return forward.RequestPermission(ctx, req, c)
	})})
	h.sendAgent(permReq(`1`), permReq(`2`))
	h.clientGets()
	<-started
	answerThenCancel(t, h, &answered, gate, "reject")
	expect(t, "the outcome the cancel caused", h.agentGets(), cancelled(`2`))
}
