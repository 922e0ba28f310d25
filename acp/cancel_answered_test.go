package acp

import "testing"

// TestCancelRequestForAnAnsweredRequestStaysWithTheAgent: the recorded v2
// flow (session/cancel, then the agent's $/cancel_request for its open
// request) with the request held by permhost: the request is answered
// cancelled once, and the agent's $/cancel_request that follows is not
// forwarded — the editor never saw the id, which in v2 also names its own
// requests. A request shown to the editor still gets its $/cancel_request.
func TestCancelRequestForAnAnsweredRequestStaysWithTheAgent(t *testing.T) {
	b := newBlocking()
	h := newHarness(t, Options{Handler: b})
	h.sendAgent(permReq(`0`))
	waitFor(t, b.started, "handler")
	sc := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n"
	h.sendClient(sc)
	expect(t, "session/cancel", h.agentGets(), sc)
	expect(t, "the held request answered", h.agentGets(), cancelled(`0`))
	waitFor(t, b.cancelled, "handler cancellation")
	h.sendAgent(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}` + "\n")
	h.syncBoth() // the client got nothing: its marker comes first

	// Forwarded and open at the client: the cancellation is the client's.
	h2 := newHarness(t, Options{})
	h2.sendAgent(permReq(`0`))
	h2.clientGets()
	cr := `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}` + "\n"
	h2.sendAgent(cr)
	expect(t, "the client gets $/cancel_request", h2.clientGets(), cr)
}
