package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/config"
)

// TestPluginsSeeCommandsWhereverAgentsPutThem (#23 item 5): through the
// proxy, the plugins see the command of an agent that sends it only as
// JSON text in a tool call's content and as text in its permission request
// (kimi-cli 1.x, whose request's content replaces the call's), and of one
// whose rawInput is the arguments' JSON text (Mistral Vibe); the shell
// analysis then applies, and the agent gets the plugin's reject.
func TestPluginsSeeCommandsWhereverAgentsPutThem(t *testing.T) {
	for _, tt := range []struct {
		name, agentInfo, updates, request, reject string
	}{
		{"kimi-cli 1.x", `{"name":"Kimi Code CLI","version":"1.49.0"}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call","toolCallId":"turn/call_1","title":"Shell: rm -rf build","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"{\"command\": \"rm -rf build\"}"}}]}}}`,
			`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"turn/call_1","title":"Shell: rm -rf build","content":[{"type":"content","content":{"type":"text","text":"Requesting approval to perform: Run command ` + "`rm -rf build`" + `"}}]},"options":[{"optionId":"approve","name":"Approve once","kind":"allow_once"},{"optionId":"approve_for_session","name":"Approve for this session","kind":"allow_always"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`,
			"reject"},
		{"mistral vibe", `{"name":"@mistralai/mistral-vibe","title":"Mistral Vibe","version":"2.0.0"}`, "",
			`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"c1","title":"bash","kind":"execute","status":"pending","rawInput":"{\"command\":\"rm -rf build\",\"timeout\":null}"},"options":[{"optionId":"allow_once","name":"Allow once","kind":"allow_once"},{"optionId":"allow_always","name":"Allow for remainder of this session","kind":"allow_always"},{"optionId":"reject_once","name":"Deny","kind":"reject_once"}]}}`,
			"reject_once"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seen := make(chan abi.Request, 1)
			cfg := &config.Config{Strategy: config.StrategySequential, Session: config.Session{Reasons: config.ReasonsOff}}
			s := newEngine(t, cfg, member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no rm"}, seen: seen}))
			editor, agent := startProxy(t, s.engine.Handler())
			editor.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"ed","version":"1"}}}`)
			agent.next(t)
			agent.send(t, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":`+tt.agentInfo+`,"authMethods":[]}}`)
			editor.next(t)
			if tt.updates != "" {
				agent.send(t, tt.updates)
				editor.next(t)
			}
			agent.send(t, tt.request)
			var req abi.Request
			select {
			case req = <-seen:
			case <-time.After(10 * time.Second):
				t.Fatal("the plugin was not asked")
			}
			if req.Action.Family != abi.FamilyShell || req.Action.Command != "rm -rf build" || req.Shell == nil ||
				len(req.Shell.Commands) != 1 || strings.Join(req.Shell.Commands[0].Argv, " ") != "rm -rf build" {
				t.Errorf("the plugin saw action %+v, shell %+v", req.Action, req.Shell)
			}
			if got := agent.next(t); got != `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"`+tt.reject+`"}}}` {
				t.Errorf("the agent's answer = %s", got)
			}
		})
	}
}
