package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	sid          = "s-1"
	toolCallLine = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"rm","kind":"execute","status":"pending","rawInput":{},"_meta":{"claudeCode":{"toolName":"Bash"}}}}}` + "\n"
	toolUpdate   = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"rm -rf build","rawInput":{"command":"rm -rf build","n":12345678901234567890},"content":null}}}` + "\n"
	options      = `[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once","_meta":{"x":1}}]`
)

const cancelledResult = `{"outcome":{"outcome":"cancelled"}}`

func permReq(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"t1","status":"pending"},"options":` + options + `}}` + "\n"
}

func selected(id, opt string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"selected","optionId":"` + opt + `"}}}` + "\n"
}

func cancelled(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"cancelled"}}}` + "\n"
}

// answerWith is a handler that answers the agent itself.
func answerWith(result string) Handler {
	return HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		return Response{Result: json.RawMessage(result)}, nil
	})
}

func TestHandlerAnswersAgent(t *testing.T) {
	for _, id := range []string{`0`, `7`, `"perm-⚡-1"`, `9007199254740993`} {
		t.Run(id, func(t *testing.T) {
			h := newHarness(t, Options{Handler: answerWith(`{"outcome":{"outcome":"selected","optionId":"allow"}}`)})
			h.sendAgent(toolCallLine, permReq(id))
			expect(t, "client sees the tool call", h.clientGets(), toolCallLine)
			expect(t, "agent's answer", h.agentGets(), selected(id, "allow"))
			h.syncBoth() // the client saw nothing but the tool call and the marker
		})
	}
}

func TestHandlerFailuresBecomeCancelled(t *testing.T) {
	cases := map[string]Handler{
		"error": HandlerFunc(func(context.Context, *PermissionRequest, Client) (Response, error) {
			return Response{}, errors.New("plugin trapped")
		}),
		"panic": HandlerFunc(func(context.Context, *PermissionRequest, Client) (Response, error) {
			panic("boom")
		}),
		"option not offered": answerWith(`{"outcome":{"outcome":"selected","optionId":"allow_always"}}`),
		"no option id":       answerWith(`{"outcome":{"outcome":"selected"}}`),
		"unknown outcome":    answerWith(`{"outcome":{"outcome":"allow"}}`),
		"duplicate key":      answerWith(`{"outcome":{"outcome":"selected","optionId":"reject","optionId":"allow"}}`),
		"not JSON":           answerWith(`{"outcome":`),
		"empty response": HandlerFunc(func(context.Context, *PermissionRequest, Client) (Response, error) {
			return Response{}, nil
		}),
		"line for another id": HandlerFunc(func(context.Context, *PermissionRequest, Client) (Response, error) {
			return Response{Line: []byte(selected("99", "allow"))}, nil
		}),
	}
	for name, handler := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{Handler: handler})
			h.sendAgent(permReq(`3`))
			expect(t, "agent's answer", h.agentGets(), cancelled(`3`))
		})
	}
}

func TestForwardRelaysBothWays(t *testing.T) {
	h := newHarness(t, Options{})
	req := permReq(`"abc"`)
	h.sendAgent(req)
	expect(t, "client gets the request unchanged", h.clientGets(), req)
	// The agent gets the answer re-encoded from what was checked, its _meta
	// objects kept.
	h.sendClient(`{"result":{"outcome":{"optionId":"reject","outcome":"selected"},"_meta":{ "n" : 12345678901234567890 }},"id":"a\u0062c","jsonrpc":"2.0"}` + "\n")
	expect(t, "agent gets the answer re-encoded", h.agentGets(),
		`{"jsonrpc":"2.0","id":"abc","result":{"outcome":{"outcome":"selected","optionId":"reject"},"_meta":{"n":12345678901234567890}}}`+"\n")
	// An error answer is a refusal and passes too, re-encoded.
	h.sendAgent(permReq(`1`))
	h.clientGets()
	h.sendClient(`{"jsonrpc":"2.0","error":{"message":"no","code":-32603},"id":1.0}` + "\n")
	expect(t, "agent gets the error re-encoded", h.agentGets(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"no"}}`+"\n")
}

func TestForwardRejectsUnofferedClientAnswer(t *testing.T) {
	h := newHarness(t, Options{})
	h.sendAgent(permReq(`4`))
	h.clientGets()
	h.sendClient(selected(`4`, "allow_always"))
	expect(t, "agent's answer", h.agentGets(), cancelled(`4`))
}

// blockingHandler holds each request until its context is done and reports
// that it saw the cancellation.
type blockingHandler struct {
	started   chan *PermissionRequest
	cancelled chan string
}

func newBlocking() *blockingHandler {
	return &blockingHandler{started: make(chan *PermissionRequest, 10), cancelled: make(chan string, 10)}
}

func (b *blockingHandler) RequestPermission(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
	b.started <- req
	<-ctx.Done()
	b.cancelled <- string(req.ID)
	return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"allow"}}`)}, nil
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func TestSessionCancelAnswersHeldRequests(t *testing.T) {
	b := newBlocking()
	h := newHarness(t, Options{Handler: b})
	h.sendAgent(permReq(`1`), strings.Replace(permReq(`2`), `"s-1"`, `"other"`, 1))
	waitFor(t, b.started, "handler 1")
	waitFor(t, b.started, "handler 2")
	cancel := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n"
	h.sendClient(cancel)
	expect(t, "session/cancel is forwarded", h.agentGets(), cancel)
	expect(t, "held request answered", h.agentGets(), cancelled(`1`))
	expect(t, "handler context cancelled", waitFor(t, b.cancelled, "cancellation"), `1`)
	// The handler's late selection for 1 does not reach the agent, and the
	// other session's request is still held: it is the next thing its own
	// session's cancel answers.
	h.syncBoth()
	other := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"other"}}` + "\n"
	h.sendClient(other)
	expect(t, "the other session's cancel", h.agentGets(), other)
	expect(t, "its request, answered only now", h.agentGets(), cancelled(`2`))
	expect(t, "its handler cancelled only now", waitFor(t, b.cancelled, "cancellation"), `2`)
}

func TestSessionCancelWhileForwarded(t *testing.T) {
	h := newHarness(t, Options{})
	h.sendAgent(permReq(`5`), permReq(`6`))
	h.clientGets()
	h.clientGets()
	h.sendClient(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n")
	h.agentGets()
	// A selection after session/cancel is relayed as cancelled...
	h.sendClient(selected(`5`, "allow"))
	expect(t, "late selection", h.agentGets(), cancelled(`5`))
	// ...and the client's own cancelled answer is relayed verbatim.
	own := `{"jsonrpc":"2.0","id":6,"result":{"outcome":{"outcome":"cancelled"},"_meta":{"by":"editor"}}}` + "\n"
	h.sendClient(own)
	expect(t, "client's cancelled", h.agentGets(), own)
}

func TestAgentCancelRequest(t *testing.T) {
	b := newBlocking()
	var forwarding atomic.Bool
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		if forwarding.Load() {
			return forward.RequestPermission(ctx, req, c)
		}
		return b.RequestPermission(ctx, req, c)
	})})
	// Held by the handler: answered here, not forwarded.
	h.sendAgent(permReq(`"h"`))
	waitFor(t, b.started, "handler")
	h.sendAgent(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"h"}}` + "\n")
	expect(t, "held request answered", h.agentGets(), cancelled(`"h"`))
	waitFor(t, b.cancelled, "handler cancellation")
	h.syncBoth()

	// Forwarded to the client: the cancellation is the client's.
	forwarding.Store(true)
	h.sendAgent(permReq(`"f"`))
	h.clientGets()
	cr := `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"f"}}` + "\n"
	h.sendAgent(cr)
	expect(t, "client gets $/cancel_request", h.clientGets(), cr)
	h.sendClient(cancelled(`"f"`))
	expect(t, "client's answer", h.agentGets(), cancelled(`"f"`))
}

func TestAskWithdrawnOnContext(t *testing.T) {
	asked := make(chan error, 1)
	won := make(chan struct{}) // a plugin won the race, once the editor was asked
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		askCtx, cancel := context.WithCancel(ctx)
		go func() { <-won; cancel() }()
		_, err := c.Ask(askCtx, nil)
		asked <- err
		if err := c.Notify("session/update", json.RawMessage(`{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","_meta":{"permhost":{"decision":{"outcome":"reject"}}}}}`)); err != nil {
			return Response{}, err
		}
		return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
	})})
	h.sendAgent(permReq(`8`))
	expect(t, "client gets the request", h.clientGets(), permReq(`8`))
	close(won)
	expect(t, "client gets $/cancel_request", h.clientGets(), `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":8}}`+"\n")
	if err := waitFor(t, asked, "Ask"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Ask: %v, want context.Canceled", err)
	}
	expect(t, "notification", h.clientGets(), `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","_meta":{"permhost":{"decision":{"outcome":"reject"}}}}}}`+"\n")
	expect(t, "plugin's answer", h.agentGets(), selected(`8`, "reject"))
	// The editor's late answer is swallowed.
	h.sendClient(selected(`8`, "allow"))
	h.syncBoth()
}

func TestPermissionRequestCarriesSessionState(t *testing.T) {
	got := make(chan *PermissionRequest, 1)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		got <- req
		return Response{Result: json.RawMessage(cancelledResult)}, nil
	})})
	h.sendClient(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zed","version":"1.0"}}}` + "\n")
	h.agentGets()
	h.sendAgent(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"claude-agent-acp","title":"Claude","version":"0.23.1"}}}` + "\n")
	h.clientGets()
	h.sendClient(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev/project","mcpServers":[]}}` + "\n")
	h.agentGets()
	h.sendAgent(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-1","modes":{"currentModeId":"default"}}}` + "\n")
	h.clientGets()
	h.sendClient(`{"jsonrpc":"2.0","id":2,"method":"session/set_mode","params":{"sessionId":"s-1","modeId":"plan"}}` + "\n")
	h.agentGets()
	h.sendAgent(`{"jsonrpc":"2.0","id":2,"result":{}}`+"\n", toolCallLine, toolUpdate, permReq(`0`))
	req := waitFor(t, got, "request")
	want := SessionInfo{ID: sid, Cwd: "/home/dev/project", Mode: "plan",
		Agent:           Peer{Name: "claude-agent-acp", Title: "Claude", Version: "0.23.1", Info: json.RawMessage(`{"name":"claude-agent-acp","title":"Claude","version":"0.23.1"}`)},
		Client:          Peer{Name: "zed", Version: "1.0", Info: json.RawMessage(`{"name":"zed","version":"1.0"}`)},
		ProtocolVersion: 1}
	gotJSON, _ := json.Marshal(req.Session)
	wantJSON, _ := json.Marshal(want)
	expect(t, "session", string(gotJSON)+string(req.Session.Agent.Info)+string(req.Session.Client.Info), string(wantJSON)+string(want.Agent.Info)+string(want.Client.Info))
	expect(t, "merged tool call", string(req.ToolCall), `{"toolCallId":"t1","title":"rm -rf build","kind":"execute","status":"pending","rawInput":{"command":"rm -rf build","n":12345678901234567890},"_meta":{"claudeCode":{"toolName":"Bash"}}}`)
	expect(t, "tool call id", req.ToolCallID, "t1")
	if len(req.Options) != 2 || req.Options[1].OptionID != "reject" || string(req.Options[1].Meta) != `{"x":1}` || req.Suspicious != "" {
		t.Fatalf("request: %+v", req)
	}
	// A current_mode_update changes the mode.
	h.sendAgent(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"current_mode_update","currentModeId":"acceptEdits"}}}`+"\n", permReq(`1`))
	expect(t, "mode", waitFor(t, got, "request").Session.Mode, "acceptEdits")
}

func TestSuspiciousRequests(t *testing.T) {
	got := make(chan *PermissionRequest, 1)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		got <- req
		return Response{Result: json.RawMessage(cancelledResult)}, nil
	})})
	for _, c := range []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s-1","sessionId":"s-2","options":[]}}`, `duplicate key "sessionId"`},
		{"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/request_permission\",\"params\":{\"sessionId\":\"s-1\",\"toolCall\":{\"toolCallId\":\"t\",\"title\":\"\xff\"},\"options\":[]}}", "invalid UTF-8"},
		{`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":5}}`, "params do not decode"},
		// Escaped method name: still a permission request.
		{`{"jsonrpc":"2.0","id":4,"method":"session\/request\u005fpermission","params":{"sessionId":"s-1","options":[]}}`, ""},
	} {
		h.sendAgent(c.line + "\n")
		req := waitFor(t, got, c.line)
		if !strings.HasPrefix(req.Suspicious, c.want) || (c.want == "" && req.Suspicious != "") {
			t.Errorf("%s: Suspicious = %q, want prefix %q", c.line, req.Suspicious, c.want)
		}
		h.agentGets()
	}
}

func TestProtocolVersion(t *testing.T) {
	h := newHarness(t, Options{})
	h.sendClient(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion": 2 ,"clientInfo":{"name":"n"}}}` + "\r\n")
	expect(t, "rewritten initialize", h.agentGets(), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion": 1 ,"clientInfo":{"name":"n"}}}`+"\r\n")
	h.sendAgent(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}` + "\n")
	got := h.clientGets()
	if !strings.Contains(got, `"id":0,"error":{"code":-32603`) || !strings.Contains(got, "protocolVersion 2") {
		t.Fatalf("client got %q", got)
	}
	if err := waitFor(t, h.done, "Run"); !errors.Is(err, ErrProtocolVersion) {
		t.Fatalf("Run: %v", err)
	}
	h.done <- nil // for the cleanup
}

func TestAgentExitAnswersPendingRequests(t *testing.T) {
	h := newHarness(t, Options{AgentExit: func(context.Context) string { return "the agent exited with status 3" }})
	h.sendClient(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`+"\n", `{"jsonrpc":"2.0","id":"x","method":"_vendor/thing"}`+"\n", `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`+"\n")
	h.agentGets()
	h.agentGets()
	h.agentGets()
	h.sendAgent(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}` + "\n")
	h.clientGets()
	h.closeAgent()
	expect(t, "first", h.clientGets(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"permhost: the agent exited with status 3 before answering session/prompt"}}`+"\n")
	expect(t, "second", h.clientGets(), `{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"permhost: the agent exited with status 3 before answering _vendor/thing"}}`+"\n")
	if err := waitFor(t, h.done, "Run"); err != nil {
		t.Fatal(err)
	}
	h.done <- nil
}

// An agent batch goes element by element through the same path as single
// lines and is forwarded as a batch without the permission request, which
// the handler answers.
func TestAgentBatchWithPermissionRequest(t *testing.T) {
	h := newHarness(t, Options{Handler: answerWith(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)})
	plain := `[{"jsonrpc":"2.0","method":"_a"},{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{}}]` + "\n"
	h.sendAgent(plain)
	expect(t, "plain batch, byte for byte", h.clientGets(), plain)
	h.sendAgent(`[ {"jsonrpc":"2.0","method":"_a"}, ` + strings.TrimSpace(permReq(`9`)) + ` ,{"jsonrpc":"2.0","id":10,"method":"fs/read_text_file"}]` + "\r\n")
	expect(t, "the batch without the request", h.clientGets(), `[{"jsonrpc":"2.0","method":"_a"},{"jsonrpc":"2.0","id":10,"method":"fs/read_text_file"}]`+"\r\n")
	expect(t, "answer", h.agentGets(), selected(`9`, "reject"))
	// A batch of permission requests alone leaves nothing to forward.
	h.sendAgent(`[` + strings.TrimSpace(permReq(`11`)) + `]` + "\n")
	expect(t, "answer", h.agentGets(), selected(`11`, "reject"))
	h.syncBoth()
}

func TestOwnMessageAfterUnterminatedLine(t *testing.T) {
	h := newHarness(t, Options{AgentExit: func(context.Context) string { return "gone" }})
	h.sendClient(`{"jsonrpc":"2.0","id":1,"method":"session/prompt"}` + "\n")
	h.agentGets()
	h.sendAgent(`not json, no newline`)
	h.closeAgent()
	expect(t, "unterminated line", h.clientGets(), "not json, no newline\n")
	expect(t, "error", h.clientGets(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"permhost: gone before answering session/prompt"}}`+"\n")
}

// Agents that offer session config options report the mode as the option of
// category "mode", and editors (told to prefer config options) change it
// with session/set_config_option: the mode follows each.
func TestModeFromConfigOptions(t *testing.T) {
	got := make(chan *PermissionRequest, 1)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		got <- req
		return Response{Result: json.RawMessage(cancelledResult)}, nil
	})})
	options := func(mode string) string {
		return `[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"opus","options":[]},` +
			`{"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"` + mode + `","options":[]}]`
	}
	modeNow := func(id string) string {
		t.Helper()
		h.sendAgent(permReq(id))
		mode := waitFor(t, got, "request "+id).Session.Mode
		expect(t, "the handler's answer", h.agentGets(), cancelled(id))
		return mode
	}
	roundTrip := func(request, answer string) {
		t.Helper()
		h.sendClient(request + "\n")
		h.agentGets()
		h.sendAgent(answer + "\n")
		h.clientGets()
	}
	roundTrip(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-1","configOptions":`+options("ask")+`}}`)
	expect(t, "mode from the session's config options", modeNow(`10`), "ask")

	roundTrip(`{"jsonrpc":"2.0","id":2,"method":"session/set_config_option","params":{"sessionId":"s-1","configId":"mode","value":"plan"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"configOptions":`+options("plan")+`}}`)
	expect(t, "mode from the set_config_option answer", modeNow(`11`), "plan")

	roundTrip(`{"jsonrpc":"2.0","id":3,"method":"session/set_config_option","params":{"sessionId":"s-1","configId":"mode","value":"code"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`)
	expect(t, "mode from the request, the answer listing nothing", modeNow(`12`), "code")

	roundTrip(`{"jsonrpc":"2.0","id":4,"method":"session/set_config_option","params":{"sessionId":"s-1","configId":"model","value":"haiku"}}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`)
	expect(t, "another option leaves the mode", modeNow(`13`), "code")

	roundTrip(`{"jsonrpc":"2.0","id":5,"method":"session/set_config_option","params":{"sessionId":"s-1","configId":"mode","value":"yolo"}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"no such mode"}}`)
	expect(t, "a refused change leaves the mode", modeNow(`14`), "code")

	h.sendAgent(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"config_option_update","configOptions":` + options("plan") + `}}}` + "\n")
	h.clientGets()
	expect(t, "mode from config_option_update", modeNow(`15`), "plan")
}
