package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ACP v2 (-v2), as claude-agent-acp 0.101 and codex-acp 2.6 speak it
// (testdata/transcripts/v2): a client's initialize asking for version 2 or
// newer selects it and must carry "info" (else -32602, as both agents
// answer); the answer is v2's {protocolVersion:2, info, capabilities,
// authMethods}; sessions carry configOptions named by configId and no
// modes; session/set_mode is gone and session/set_config_option needs
// type "id"; session/prompt is answered at once with a messageId and the
// turn ends with state_update idle; tool calls exist only as
// tool_call_update; each permission request, sent right after
// state_update requires_action, has a title, codex's exec a description,
// and the tool call as a subject.

// v2Initialize answers a client's initialize as a v2-capable agent does,
// and reports whether it did (false: the agent goes on as in v1).
func (a *agent) v2Initialize(m msg) bool {
	if !a.serveV2 {
		return false
	}
	var p struct {
		ProtocolVersion int             `json:"protocolVersion"`
		Info            json.RawMessage `json:"info"`
	}
	json.Unmarshal(m.Params, &p)
	if p.ProtocolVersion < 2 {
		return false
	}
	if p.Info == nil {
		a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32602,"message":"invalid initialize params: path [\"info\"] expected object, received undefined"}}`)
		return true
	}
	a.v2 = true
	switch a.name {
	case "codex":
		a.respond(m.ID, `{"protocolVersion":2,"info":{"name":"@agentclientprotocol/codex-acp","title":"Codex","version":"2.6.0"},"capabilities":{"auth":{"_meta":{"authStatus":{}}},"providers":{},"session":{"prompt":{"embeddedContext":{},"image":{}},"mcp":{"stdio":{},"http":{}},"delete":{},"additionalDirectories":{},"fork":{}}},"authMethods":[],"_meta":{"steering":{"supported":true}}}`)
	default:
		a.respond(m.ID, `{"protocolVersion":2,"info":{"name":"@agentclientprotocol/claude-agent-acp","title":"Claude Agent","version":"0.101.0"},"capabilities":{"session":{"prompt":{"image":{},"embeddedContext":{}},"mcp":{"stdio":{},"http":{}},"delete":{},"fork":{},"additionalDirectories":{}},"providers":{},"_meta":{"claudeCode":{"promptQueueing":true},"authStatus":{}}},"authMethods":[]}`)
	}
	return true
}

// v2Prompt runs a prompt's steps the v2 way: the user message and the
// answer {messageId} first, then the steps, then state_update idle.
func (a *agent) v2Prompt(id json.RawMessage, text string, steps func()) {
	a.nextMsg++
	mid := q(fmt.Sprintf("msg-user-%d", a.nextMsg))
	a.update(`{"sessionUpdate":"user_message","messageId":` + mid + `,"content":[{"type":"text","text":` + q(text) + `}]}`)
	a.respond(id, `{"messageId":`+mid+`}`)
	a.update(`{"sessionUpdate":"state_update","state":"running"}`)
	steps()
	a.update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`)
}

// v2Request turns the v1 params of a permission request into v2's: the
// toolCall becomes the subject, with the title the agent gives.
func (a *agent) v2Request(kind, params string) string {
	var p struct {
		SessionID string          `json:"sessionId"`
		ToolCall  json.RawMessage `json:"toolCall"`
		Options   json.RawMessage `json:"options"`
	}
	json.Unmarshal([]byte(params), &p)
	var tc struct {
		Title string `json:"title"`
	}
	json.Unmarshal(p.ToolCall, &tc)
	head := `{"sessionId":` + q(p.SessionID) + `,"title":` + q(tc.Title)
	if a.name == "codex" {
		if kind == "run" {
			head = `{"sessionId":` + q(p.SessionID) + `,"title":"Run command?","description":"The model's reason."`
		} else {
			head = `{"sessionId":` + q(p.SessionID) + `,"title":"Make edits?"`
		}
	}
	return head + `,"subject":{"type":"tool_call","toolCall":` + string(p.ToolCall) + `},"options":` + string(p.Options) + `}`
}

// v2Update rewrites an update for v2: no tool_call, only
// tool_call_update.
func (a *agent) v2Update(u string) string {
	if !a.v2 {
		return u
	}
	return strings.Replace(u, `"sessionUpdate":"tool_call",`, `"sessionUpdate":"tool_call_update",`, 1)
}
