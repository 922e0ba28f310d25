package policy

import (
	"encoding/json"

	"github.com/permhost/permhost/acp"
)

// This file is [session] unasked = "cancel": a tool call that acts and ran
// with no permission request in a governed session ends the turn. permhost
// learns that a call ran unasked only when it completes (codex-acp
// announces a call in_progress before asking for it), so the call itself
// has run; ending the turn keeps the agent from running more. The agent
// gets session/cancel, handled as the editor's would be (Caller.Cancel
// Session); tool_call/cancel does not apply, the call having ended. The
// editor is told why in the session's own stream, just ahead of the update
// that showed the call ran (the governor sees an update before it is
// forwarded): a session/update agent_message_chunk whose text says it,
// with _meta.permhost.unasked naming the call, which every editor shows as
// the agent's text.

// endTurnUnasked ends the turn of u's session and tells the editor why.
func (g *governor) endTurnUnasked(u *acp.Update, c acp.Caller) {
	sid := u.SessionID
	if err := c.CancelSession(sid); err != nil {
		g.e.log.Warn("could not end the turn after an unasked tool call", "session", sid, "err", err)
		return
	}
	var tc struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(u.ToolCall, &tc) // merged state: strict JSON of the proxy's own
	what := clipTitle(tc.Title)
	if what == "" {
		what = u.ToolCallID
	}
	text := "permhost ended the turn: the agent ran \"" + what + "\" without asking for permission, so the policy never saw it ([session] unasked = \"cancel\")."
	if s := g.e.agentProfile(u.Session.Agent).Settings; s != nil {
		text += " This agent asks only as its own settings say; it asks before every call with " + s.Asks + "."
	}
	chunk := map[string]any{
		"sessionUpdate": "agent_message_chunk",
		"content":       map[string]string{"type": "text", "text": text},
		"_meta":         map[string]any{"permhost": map[string]string{"unasked": u.ToolCallID}},
	}
	if u.Session.ProtocolVersion >= 2 {
		// v2 content chunks belong to a message.
		chunk["messageId"] = "permhost-unasked-" + u.ToolCallID
	}
	params, err := json.Marshal(map[string]any{"sessionId": sid, "update": chunk})
	if err == nil {
		err = c.Notify(acp.MethodSessionUpdate, params)
	}
	if err != nil {
		g.e.log.Warn("could not tell the editor why the turn ended", "session", sid, "err", err)
	}
	g.e.log.Warn("ended the turn: the agent ran a tool call without asking ([session] unasked = \"cancel\")", "session", sid, "toolCall", u.ToolCallID)
}
