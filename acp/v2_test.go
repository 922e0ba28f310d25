package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The recorded v2 initialize of testdata/transcripts/v2 and the agents'
// answers (claude-agent-acp 0.101.0 trimmed).
const (
	v2Init        = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"permhost-acp-driver","version":"0.2.0"},"capabilities":{}}}`
	v2InitResult  = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"@agentclientprotocol/claude-agent-acp","title":"Claude Agent","version":"0.101.0"},"capabilities":{"session":{}},"authMethods":[]}}`
	v1InitResult  = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"0.101.0"},"authMethods":[]}}`
	v2NewSession  = `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev/project","mcpServers":[]}}`
	v2SessionNew  = `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-1","configOptions":[{"configId":"mode","name":"Mode","category":"mode","type":"select","currentValue":"default","options":[]}]}}`
	v2PermRequest = `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-1","title":"Run command?","description":"Remove the build dir?","subject":{"type":"tool_call","toolCall":{"toolCallId":"call_1","title":"rm -rf build","rawInput":{"command":"rm -rf build","cwd":"/home/dev/project"},"kind":"execute","status":"pending"}},"options":[{"optionId":"allow_once","name":"Yes, proceed","kind":"allow_once"},{"optionId":"cancel","name":"No","kind":"reject_once"}]}}`
)

// TestNegotiation runs the initialize exchange for each pair of what the
// editor asks and what the agent answers: what reaches the agent, what the
// editor gets, and the version the connection then speaks.
func TestNegotiation(t *testing.T) {
	for _, c := range []struct {
		name, init, agentGets, answer string
		version                       int  // the connection's, 0 when it fails closed
		clientSame                    bool // the editor gets the agent's answer as it is
	}{
		{"v2 editor, v2 agent", v2Init, v2Init, v2InitResult, 2, true},
		{"v2 editor, v1 agent", v2Init, v2Init, v1InitResult, 1, true},
		{"v3 editor in the v2 shape, v2 agent", strings.Replace(v2Init, `"protocolVersion":2`, `"protocolVersion":3`, 1),
			strings.Replace(v2Init, `"protocolVersion":2`, `"protocolVersion":3`, 1), v2InitResult, 2, true},
		{"v1 editor", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zed"}}}`,
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zed"}}}`, v1InitResult, 1, true},
		{"v1-shaped body asking 2 is asked down to 1", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"clientInfo":{"name":"zed"}}}`,
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zed"}}}`, v1InitResult, 1, true},
		{"v1 editor, agent answers 2", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zed"}}}`,
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zed"}}}`, v2InitResult, 0, false},
		{"v2 editor, agent answers 3", v2Init, v2Init, strings.Replace(v2InitResult, `"protocolVersion":2`, `"protocolVersion":3`, 1), 0, false},
		{"v2 editor, agent answers 0", v2Init, v2Init, strings.Replace(v2InitResult, `"protocolVersion":2`, `"protocolVersion":0`, 1), 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := make(chan *PermissionRequest, 1)
			h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
				got <- req
				return Response{Result: json.RawMessage(cancelledResult)}, nil
			})})
			h.sendClient(c.init + "\n")
			expect(t, "forwarded initialize", h.agentGets(), c.agentGets+"\n")
			h.sendAgent(c.answer + "\n")
			out := h.clientGets()
			if c.clientSame {
				expect(t, "the editor's answer", out, c.answer+"\n")
			} else {
				if !strings.Contains(out, `"id":0,"error":{"code":-32603`) || !strings.Contains(out, "permhost speaks ACP versions 1 to 2") {
					t.Fatalf("client got %q", out)
				}
				if err := waitFor(t, h.done, "Run"); !errors.Is(err, ErrProtocolVersion) {
					t.Fatalf("Run: %v", err)
				}
				h.done <- nil // for the cleanup
				return
			}
			requested, answered := h.proxy.state.negotiated()
			if answered != c.version || requested < answered {
				t.Errorf("negotiated: asked %d, answered %d; want %d", requested, answered, c.version)
			}
			h.sendAgent(permReq(`7`))
			req := waitFor(t, got, "request")
			if req.Session.ProtocolVersion != c.version {
				t.Errorf("the request's session speaks %d, want %d", req.Session.ProtocolVersion, c.version)
			}
			h.agentGets()
		})
	}
}

// TestV2PermissionRequest reads v2 requests as the recordings shape them:
// the subject's tool call is the request's tool call, a command subject
// gives the command, an unknown subject type is kept, and a request that
// reads two ways is suspicious.
func TestV2PermissionRequest(t *testing.T) {
	got := make(chan *PermissionRequest, 1)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		got <- req
		return Response{Result: json.RawMessage(cancelledResult)}, nil
	})})
	h.sendClient(v2Init + "\n")
	h.agentGets()
	h.sendAgent(v2InitResult + "\n")
	h.clientGets()
	h.sendClient(v2NewSession + "\n")
	h.agentGets()
	h.sendAgent(v2SessionNew + "\n")
	h.clientGets()
	// The tool call exists only as tool_call_update in v2.
	h.sendAgent(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","kind":"execute","title":"Terminal","status":"in_progress","content":[{"type":"terminal","terminalId":"call_1"}]}}}` + "\n")
	h.clientGets()
	const opts = `"options":[{"optionId":"a","name":"Yes","kind":"allow_once"},{"optionId":"x","name":"Mine","kind":"_vendor_kind"}]`
	for _, c := range []struct {
		name, params string
		want         PermissionV2
		toolCallID   string
		toolCall     string
		suspicious   string
	}{
		{name: "tool_call subject", params: v2PermRequest[strings.Index(v2PermRequest, `"params":`)+9 : len(v2PermRequest)-1],
			want:       PermissionV2{Title: "Run command?", Description: "Remove the build dir?", SubjectType: SubjectToolCall},
			toolCallID: "call_1",
			toolCall:   `{"toolCallId":"call_1","kind":"execute","title":"rm -rf build","status":"pending","content":[{"type":"terminal","terminalId":"call_1"}],"rawInput":{"command":"rm -rf build","cwd":"/home/dev/project"}}`},
		{name: "command subject", params: `{"sessionId":"s-1","title":"Run?","subject":{"type":"command","command":"make test","cwd":"/home/dev/project/sub","toolCallId":"call_1"},` + opts + `}`,
			want:       PermissionV2{Title: "Run?", SubjectType: SubjectCommand, Command: "make test", Cwd: "/home/dev/project/sub"},
			toolCallID: "call_1",
			toolCall:   `{"toolCallId":"call_1","kind":"execute","title":"rm -rf build","status":"pending","content":[{"type":"terminal","terminalId":"call_1"}],"rawInput":{"command":"rm -rf build","cwd":"/home/dev/project"}}`},
		{name: "extension subject", params: `{"sessionId":"s-1","title":"Index?","subject":{"type":"_vendor/index","paths":["/"]},` + opts + `}`,
			want: PermissionV2{Title: "Index?", SubjectType: "_vendor/index"}},
		{name: "toolCall and subject", params: `{"sessionId":"s-1","title":"t","toolCall":{"toolCallId":"call_1"},"subject":{"type":"tool_call","toolCall":{"toolCallId":"call_2"}},` + opts + `}`,
			want: PermissionV2{Title: "t", SubjectType: SubjectToolCall}, toolCallID: "call_1", suspicious: "both toolCall and subject"},
		{name: "subject without type", params: `{"sessionId":"s-1","title":"t","subject":{"toolCall":{"toolCallId":"call_1"}},` + opts + `}`,
			suspicious: "subject: no type", want: PermissionV2{Title: "t"}},
		{name: "title of another case", params: `{"sessionId":"s-1","title":"t","Title":"u",` + opts + `}`,
			suspicious: "", want: PermissionV2{Title: "t"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			line := `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":` + c.params + `}`
			h.sendAgent(line + "\n")
			req := waitFor(t, got, "request")
			h.agentGets()
			if c.suspicious == "" && c.name == "title of another case" {
				if req.Suspicious == "" {
					t.Fatal("a key differing in case only is not suspicious")
				}
				return
			}
			if !strings.Contains(req.Suspicious, c.suspicious) || (c.suspicious == "") != (req.Suspicious == "") {
				t.Fatalf("Suspicious = %q, want %q", req.Suspicious, c.suspicious)
			}
			if req.Suspicious == "" {
				if c.want.SubjectType != "" && !strings.Contains(c.params, string(req.V2.Subject)) {
					t.Errorf("subject %s is not the request's", req.V2.Subject)
				}
				expect(t, "tool call", string(req.ToolCall), c.toolCall)
			}
			req.V2.Subject = nil
			if g, w := fmt.Sprintf("%+v", req.V2), fmt.Sprintf("%+v", c.want); g != w {
				t.Errorf("V2 = %+v, want %+v", req.V2, c.want)
			}
			expect(t, "tool call id", req.ToolCallID, c.toolCallID)
			expect(t, "mode from configOptions' configId", req.Session.Mode, "default")
			expect(t, "cwd", req.Session.Cwd, "/home/dev/project")
			if len(req.Options) != 2 && req.Suspicious == "" {
				t.Errorf("options %+v", req.Options)
			}
		})
	}
}

// TestV2RequestForwardedByteExact: without a handler of its own the proxy
// shows the editor the agent's v2 request byte for byte (title,
// description, subject, custom kinds), and the agent gets the editor's
// answer in the one outcome shape v1 and v2 share.
func TestV2RequestForwardedByteExact(t *testing.T) {
	h := newHarness(t, Options{})
	h.sendClient(v2Init + "\n")
	h.agentGets()
	h.sendAgent(v2InitResult + "\n")
	h.clientGets()
	line := `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-1","title":"Run?","description":"Why \u00e9","subject":{"type":"_vendor/thing","x":[1, 2]},"options":[{"optionId":"o","name":"Mine","kind":"_vendor_kind"},{"optionId":"a","name":"Yes","kind":"allow_once"}]}}`
	h.sendAgent(line + "\n")
	expect(t, "the editor's request", h.clientGets(), line+"\n")
	h.sendClient(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"a"}}}` + "\n")
	expect(t, "the agent's answer", h.agentGets(), `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"a"}}}`+"\n")
	// A custom outcome kind (v2 allows "_…" ones) is no answer permhost
	// can check: the agent is told cancelled.
	h.sendAgent(strings.Replace(line, `"id":0`, `"id":1`, 1) + "\n")
	h.clientGets()
	h.sendClient(`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"_vendor_allow","optionId":"a"}}}` + "\n")
	expect(t, "the agent's answer to a custom outcome", h.agentGets(), `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}`+"\n")
}

// FuzzV2PermissionParams: whatever a permission request's params hold, the
// proxy reads them without panicking, and a request it does not find
// suspicious has one reading: a subject it kept is valid JSON with a type,
// and a tool_call subject's tool call is what the request's tool call
// merges.
func FuzzV2PermissionParams(f *testing.F) {
	f.Add([]byte(v2PermRequest[strings.Index(v2PermRequest, `"params":`)+9 : len(v2PermRequest)-1]))
	f.Add([]byte(`{"sessionId":"s","title":"t","subject":{"type":"command","command":"ls","cwd":"/p","toolCallId":"c"},"options":[]}`))
	f.Add([]byte(`{"sessionId":"s","title":"t","subject":{"type":"_x","y":1},"options":[{"optionId":"o","name":"n","kind":"_k"}]}`))
	f.Add([]byte(`{"subject":{"type":"tool_call","toolCall":{"toolCallId":"a"}},"toolCall":{"toolCallId":"b"}}`))
	f.Fuzz(func(t *testing.T, params []byte) {
		line := append(append([]byte(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":`), params...), '}')
		d := decode(line)
		if d.method != MethodRequestPermission {
			return
		}
		s := newState(0, 0, 0)
		req := s.permissionRequest(d, line)
		if req.Suspicious != "" {
			return
		}
		v := req.V2
		if (v.Subject == nil) != (v.SubjectType == "") {
			t.Fatalf("subject %q of type %q", v.Subject, v.SubjectType)
		}
		if v.Subject != nil && !json.Valid(v.Subject) {
			t.Fatalf("subject %q is not JSON", v.Subject)
		}
		if v.SubjectType != SubjectCommand && (v.Command != "" || v.Cwd != "") {
			t.Fatalf("a %q subject with a command %q %q", v.SubjectType, v.Command, v.Cwd)
		}
		if v.SubjectType == SubjectToolCall && req.ToolCallID != "" && req.ToolCall == nil {
			t.Fatalf("tool call %q not merged", req.ToolCallID)
		}
	})
}
