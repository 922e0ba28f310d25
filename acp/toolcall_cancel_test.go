package acp

import (
	"strings"
	"testing"
)

// TestToolCallCancelAnswersItsHeldRequest: ACP v2's tool_call/cancel is
// forwarded, then the permission request permhost holds for that tool
// call (its handler still deciding) is answered cancelled, once, and its
// handler's context ends; a request for another tool call of the session
// is still held.
func TestToolCallCancelAnswersItsHeldRequest(t *testing.T) {
	b := newBlocking()
	h := newHarness(t, Options{Handler: b})
	h.sendAgent(permReq(`1`), strings.Replace(permReq(`2`), `"t1"`, `"t2"`, 1))
	waitFor(t, b.started, "handler 1")
	waitFor(t, b.started, "handler 2")
	cancel := `{"jsonrpc":"2.0","id":"c9","method":"tool_call/cancel","params":{"sessionId":"s-1","toolCallId":"t1"}}` + "\n"
	h.sendClient(cancel)
	expect(t, "tool_call/cancel is forwarded", h.agentGets(), cancel)
	expect(t, "the held request for t1 answered", h.agentGets(), cancelled(`1`))
	expect(t, "its handler cancelled", waitFor(t, b.cancelled, "cancellation"), `1`)
	h.syncBoth()

	// The other tool call's request is still held: the session's cancel
	// answers it now, and nothing more for 1.
	sc := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n"
	h.sendClient(sc)
	expect(t, "session/cancel", h.agentGets(), sc)
	expect(t, "t2's request, answered only now", h.agentGets(), cancelled(`2`))
	expect(t, "its handler cancelled only now", waitFor(t, b.cancelled, "cancellation"), `2`)
}
