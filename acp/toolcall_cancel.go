package acp

// This file is ACP v2's tool_call/cancel: the client cancels one tool call
// (only one whose update advertised capabilities.cancel; the agent answers
// -32602 otherwise). It is forwarded as it is; the tool call's permission
// request permhost holds (plugins deciding) is answered cancelled once the
// request is queued for the agent, as session/cancel does for a whole
// session, so the agent never gets an allow for a call the client
// cancelled. A request already shown to the client is the client's to
// answer; a selected answer to it is relayed as cancelled. The agent's
// $/cancel_request for it, if it sends one, finds it answered: one answer
// only.

// MethodToolCallCancel is ACP v2's client request cancelling one tool call.
const MethodToolCallCancel = "tool_call/cancel"

// cancelToolCall answers cancelled to the permission requests for the tool
// call params name (sessionId, toolCallId) that a handler holds, and marks
// those shown to the client as cancelled.
func (p *Proxy) cancelToolCall(params []byte) {
	f, ok := fields(params, "sessionId", "toolCallId")
	if !ok {
		return
	}
	sessionID, toolCallID := stringOf(f["sessionId"]), stringOf(f["toolCallId"])
	if sessionID == "" || toolCallID == "" {
		return
	}
	p.cancelHeld("tool_call/cancel", func(pp *permission) bool {
		return pp.req.SessionID == sessionID && pp.req.ToolCallID == toolCallID
	})
}
