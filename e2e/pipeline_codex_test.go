package e2e

import (
	"github.com/permhost/permhost/internal/acptest"
)

// Codex session ids and request ids (UUID strings, "id" written last), as
// codex-acp 0.16.0 sends them (acp-reference §9).
const (
	codexSession = "019ad2c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
	codexExecID  = `"7f3c2d1e-9a4b-4c1d-8e2f-0a1b2c3d4e5f"`
	codexPatchID = `"0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e"`
)

// codexTranscript is a scripted codex-acp turn in the shapes of
// acp-reference §9: an exec request asked before its tool_call (options
// approved / approved-execpolicy-amendment / abort, rawInput.command as
// bash -lc argv) whose _meta carries the agent's own keys (W3C trace
// context, a vendor key), then a patch request (approved / abort) that
// brings its own presentation record. Both are answered approved, and the
// turn ends end_turn.
func codexTranscript() *acptest.Transcript {
	tr := &acptest.Transcript{Name: "codex-scripted"}
	c2a := func(s string) { tr.Append(acptest.ClientToAgent, s) }
	a2c := func(s string) { tr.Append(acptest.AgentToClient, s) }
	c2a(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":false},"clientInfo":{"name":"permhost-e2e","version":"0.1.0"}}}`)
	a2c(`{"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"embeddedContext":true}},"agentInfo":{"name":"codex-acp","title":"Codex","version":"0.16.0"},"authMethods":[]},"jsonrpc":"2.0","id":0}`)
	c2a(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev/project","mcpServers":[]}}`)
	a2c(`{"result":{"sessionId":"` + codexSession + `","modes":{"currentModeId":"auto","availableModes":[{"id":"read-only","name":"Read Only"},{"id":"auto","name":"Default"},{"id":"full-access","name":"Full Access"}]}},"jsonrpc":"2.0","id":1}`)
	c2a(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + codexSession + `","prompt":[{"type":"text","text":"Remove the build dir, then write hello.txt."}]}}`)
	a2c(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + codexSession + `","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Removing build."}}}}`)
	a2c(`{"jsonrpc":"2.0","method":"session/request_permission","params":{"sessionId":"` + codexSession + `","toolCall":{"toolCallId":"call_exec_1","title":"rm -rf build","kind":"execute","status":"pending","rawInput":{"call_id":"call_exec_1","turn_id":"1","started_at_ms":1764463545000,"command":["/bin/bash","-lc","rm -rf build"],"cwd":"/home/dev/project","reason":null,"proposed_execpolicy_amendment":["rm","-rf","build"],"available_decisions":["approved","approved-execpolicy-amendment","abort"],"parsed_cmd":[{"type":"unknown","cmd":"rm -rf build"}]}},"options":[{"optionId":"approved","name":"Yes, proceed","kind":"allow_once"},{"optionId":"approved-execpolicy-amendment","name":"Yes, and don't ask again for commands that start with ` + "`rm -rf build`" + `","kind":"allow_always"},{"optionId":"abort","name":"No, and tell Codex what to do differently","kind":"reject_once"}],"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","codex":{"approvalKind":"exec","big":12345678901234567890}}},"id":` + codexExecID + `}`)
	c2a(`{"jsonrpc":"2.0","id":` + codexExecID + `,"result":{"outcome":{"outcome":"selected","optionId":"approved"}}}`)
	a2c(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + codexSession + `","update":{"sessionUpdate":"tool_call","toolCallId":"call_exec_1","title":"rm -rf build","kind":"execute","status":"in_progress"}}}`)
	a2c(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + codexSession + `","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_exec_1","status":"completed"}}}`)
	a2c(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + codexSession + `","update":{"sessionUpdate":"tool_call","toolCallId":"call_patch_1","title":"Edit /home/dev/project/hello.txt","kind":"edit","status":"pending","locations":[{"path":"/home/dev/project/hello.txt"}]}}}`)
	a2c(`{"jsonrpc":"2.0","method":"session/request_permission","params":{"sessionId":"` + codexSession + `","toolCall":{"toolCallId":"call_patch_1","title":"Edit /home/dev/project/hello.txt","kind":"edit","status":"pending","rawInput":{"call_id":"call_patch_1","changes":{"/home/dev/project/hello.txt":{"type":"add","content":"hello\n"}}},"content":[{"type":"diff","path":"/home/dev/project/hello.txt","newText":"hello\n"}],"locations":[{"path":"/home/dev/project/hello.txt"}]},"options":[{"optionId":"approved","name":"Yes","kind":"allow_once"},{"optionId":"abort","name":"No, and tell Codex what to do differently","kind":"reject_once"}],"_meta":{"permission":{"version":1,"title":"Apply a patch","description":"Codex wants to create hello.txt"}}},"id":` + codexPatchID + `}`)
	c2a(`{"jsonrpc":"2.0","id":` + codexPatchID + `,"result":{"outcome":{"outcome":"selected","optionId":"approved"}}}`)
	a2c(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + codexSession + `","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_patch_1","status":"completed"}}}`)
	a2c(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + codexSession + `","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done."}}}}`)
	a2c(`{"result":{"stopReason":"end_turn"},"jsonrpc":"2.0","id":2}`)
	return tr
}
