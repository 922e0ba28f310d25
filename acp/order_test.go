package acp

import (
	"context"
	"fmt"
	"strconv"
	"testing"
)

// gatedForward forwards each request to the client and, once the client has
// answered, reports it on answered and holds its answer until gate is
// closed.
func gatedForward(answered chan<- string, gate <-chan struct{}) Handler {
	return HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		a, err := c.Ask(ctx, nil)
		if err != nil {
			return Response{}, err
		}
		answered <- string(req.ID)
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
// client already. clientDone is closed once the proxy has read the client's
// end of input: every line before it has been read and queued by then.
func oneGatedRequest(t *testing.T) (h *harness, answered chan string, gate, clientDone chan struct{}) {
	answered, gate, clientDone = make(chan string, 100), make(chan struct{}), make(chan struct{})
	h = newHarness(t, Options{Handler: gatedForward(answered, gate), ClientDone: func() { close(clientDone) }})
	h.sendAgent(permReq(`1`))
	h.clientGets()
	return h, answered, gate, clientDone
}

// The client's answers reach their handlers even while no handler has
// relayed its answer yet: reading from the client never waits for a
// handler. (Waiting for each handler in turn, as permhost once did, made
// this test wait 2 s per answer.) The agent still gets the answers and the
// client's later line in the client's order.
func TestClientAnswersDoNotWaitForHandlers(t *testing.T) {
	const n = 50
	answered := make(chan string, n)
	gate := make(chan struct{})
	h := newHarness(t, Options{Handler: gatedForward(answered, gate)})
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
	// Every handler gets its answer while none has relayed one: a proxy
	// that waited for each handler in turn would never get past the first.
	for i := range n {
		waitFor(t, answered, fmt.Sprintf("handler %d of %d", i+1, n))
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
	h, answered, gate, clientDone := oneGatedRequest(t)
	later := []string{
		`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}}` + "\n",
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"other"}}` + "\n",
		`{"jsonrpc":"2.0","method":"_x/unterminated"}`,
	}
	h.sendClient(selected(`1`, "reject"))
	h.sendClient(later...)
	h.closeClient()
	waitFor(t, answered, "the handler")
	<-clientDone // every later line is read and queued behind the answer
	close(gate)
	expect(t, "answer first", h.agentGets(), selected(`1`, "reject"))
	for _, l := range later {
		expect(t, "later line", h.agentGets(), l)
	}
	if l, ok := <-h.toAgent; ok {
		t.Fatalf("the agent got %q after the client's last line", l)
	}
}

// A handler that never relays the answer holds the client's later lines
// for answerOrderWait at most; its answer, when it comes, still reaches the
// agent.
func TestSlowHandlerReleasesLaterLines(t *testing.T) {
	if testing.Short() {
		t.Skip("waits answerOrderWait")
	}
	h, answered, gate, _ := oneGatedRequest(t)
	const after = `{"jsonrpc":"2.0","method":"_test/after"}` + "\n"
	h.sendClient(selected(`1`, "allow"), after)
	waitFor(t, answered, "the handler")
	expect(t, "later line, released while the handler holds the answer", h.agentGets(), after)
	close(gate)
	expect(t, "the answer, late", h.agentGets(), selected(`1`, "allow"))
}

const sessionCancel = `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n"

// answerThenCancel has the client answer request 1 and cancel the session
// at once while request 2 of the same session is still with its handler;
// once that handler saw the cancel (the proxy read it), the gated handler
// relays, and the agent gets the answer as given, then the cancel, then
// request 2's cancelled outcome.
func answerThenCancel(t *testing.T, option string) {
	t.Helper()
	answered, gate := make(chan string, 1), make(chan struct{})
	forward := gatedForward(answered, gate)
	started, stopped := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		if string(req.ID) == "2" { // a handler still deciding
			started <- struct{}{}
			<-ctx.Done()
			close(stopped)
			return Response{}, ctx.Err()
		}
		return forward.RequestPermission(ctx, req, c)
	})})
	h.sendAgent(permReq(`1`), permReq(`2`))
	h.clientGets()
	<-started
	h.sendClient(selected(`1`, option), sessionCancel)
	waitFor(t, answered, "the handler of request 1")
	waitFor(t, stopped, "the cancel to reach request 2")
	close(gate)
	expect(t, "the answer as given", h.agentGets(), selected(`1`, option))
	expect(t, "then the cancel", h.agentGets(), sessionCancel)
	expect(t, "then the outcome the cancel caused", h.agentGets(), cancelled(`2`))
}

// The client answers, then cancels the session before the handler has
// relayed the answer: the agent gets the answer as given, then the cancel,
// as the client sent them (not a cancelled outcome the client never sent).
func TestAnswerThenSessionCancelKeepsTheAnswer(t *testing.T) {
	answerThenCancel(t, "allow")
}

// Behind a held answer, the client's session/cancel and the cancelled
// outcomes it causes for requests still with their handlers reach the agent
// in that order, after the answer.
func TestSessionCancelBehindAnAnswerKeepsOrder(t *testing.T) {
	answerThenCancel(t, "reject")
}
