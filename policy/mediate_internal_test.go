package policy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/config"
)

// lineClient answers with a whole response line.
type lineClient struct{ line string }

func (c lineClient) Ask(context.Context, json.RawMessage) (acp.Answer, error) {
	// Result as the proxy splits it (the exact key): a reader of Result
	// alone sees what the line's result says.
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(c.line), &m)
	return acp.Answer{Line: []byte(c.line), Result: m["result"]}, nil
}
func (lineClient) Notify(string, json.RawMessage) error { return nil }
func (lineClient) Deliver(r acp.Response, record func([]byte)) error {
	record([]byte(`{"jsonrpc":"2.0","id":1,"result":` + string(r.Result) + `}`))
	return nil
}

// TestApprovalAnswerReadWhole: the editor's answer to an approval is read
// as a whole line, strictly, like a permission answer: a line with an
// extra or repeated top-level key reaches the agent as cancel.
func TestApprovalAnswerReadWhole(t *testing.T) {
	const params = `{"sessionId":"s-1","message":"run tool","mode":"form","requestedSchema":{"type":"object","properties":{"persist":{"type":"string","oneOf":[{"const":"once","title":"Once"},{"const":"always","title":"Always"}]}}},"_meta":{"codex_approval_kind":"mcp_tool_call"}}`
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: governing()}
	e, err := New(context.Background(), Options{Config: cfg, Log: NewDecisionLog(&acptest.SyncBuffer{}, nil), Home: "/home/dev",
		Grants: t.TempDir() + "/g.json", Members: []host.Member{{Name: "admin", Layer: host.LayerAdmin, Policy: host.FailClosed, Plugin: &seeing{d: abi.Decision{Outcome: abi.OutcomeAsk}}, Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	g := e.Governor()
	r := &acp.AgentRequest{ID: json.RawMessage(`7`), Method: acp.MethodElicitationCreate, SessionID: "s-1", Params: json.RawMessage(params),
		Session: acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: acp.Peer{Name: "codex-acp", Version: "0.16.0"}}}
	if !g.Intercepts(r) {
		t.Fatal("the approval was not taken")
	}
	const accept = `{"action":"accept","content":{"persist":"once"}}`
	for _, tc := range []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":7,"result":` + accept + `}`, accept},
		{`{"jsonrpc":"2.0","id":7,"result":` + accept + `,"extra":1}`, `{"action":"cancel"}`},
		{`{"jsonrpc":"2.0","id":7,"result":` + accept + `,"Result":{"action":"decline"}}`, `{"action":"cancel"}`},
		{`{"jsonrpc":"1.0","id":7,"result":` + accept + `}`, `{"action":"cancel"}`},
	} {
		reply, err := g.AgentRequest(context.Background(), r, lineClient{tc.line}, &fakeCaller{})
		if err != nil || string(reply.Result) != tc.want {
			t.Errorf("%s reached the agent as %s (%v), want %s", tc.line, reply.Result, err, tc.want)
		}
	}
}

// askOnce asks for a person on a permission request (options "once" and
// "no") and rejects anything else (a governed file or terminal request).
type askOnce struct{ fs int }

func (p *askOnce) Call(_ context.Context, req abi.Request) host.Result {
	for _, o := range req.Options {
		if o.OptionID == "once" {
			return host.Result{Decision: abi.Decision{Outcome: abi.OutcomeAsk}}
		}
	}
	p.fs++
	return host.Result{Decision: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no commands"}}
}

// TestNoAllowanceFromUnreadAnswer: an editor's allow the agent does not
// get (a key ACP does not define) records no allowance: the call's
// terminal/create of the same command still goes to the plugins, which
// refuse it. (It was recorded from the result member read alone, and the
// terminal ran without the plugins.)
func TestNoAllowanceFromUnreadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		allowed    bool
	}{
		{"strict allow", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"once"}}}`, true},
		{"extra top-level key", `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"once"}},"extra":1}`, false},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"once"}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &askOnce{}
			cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: governing()}
			e, err := New(context.Background(), Options{Config: cfg, Log: NewDecisionLog(&acptest.SyncBuffer{}, nil), Home: "/home/dev", Grants: t.TempDir() + "/g.json",
				Members: []host.Member{{Name: "rules", Layer: host.LayerTeam, Policy: host.FailClosed, Plugin: p, Version: "1"}}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(context.Background())
			s := acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: acp.Peer{Name: "unknown-agent"}}
			toolCall := `{"toolCallId":"call-make","title":"make clean","kind":"execute","status":"pending","rawInput":{"command":"make clean","cwd":"/p"}}`
			params := `{"sessionId":"s-1","toolCall":` + toolCall + `,"options":[{"optionId":"once","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}`
			pr := &acp.PermissionRequest{ID: json.RawMessage(`1`), Params: json.RawMessage(params), SessionID: "s-1", ToolCallID: "call-make",
				ToolCall: json.RawMessage(toolCall), Options: []acp.PermissionOption{{OptionID: "once", Name: "Allow", Kind: abi.OptionAllowOnce},
					{OptionID: "no", Name: "Reject", Kind: abi.OptionRejectOnce}}, Session: s}
			resp, err := e.Handler().RequestPermission(context.Background(), pr, lineClient{tc.line})
			if err != nil {
				t.Fatal(err)
			}
			if allowed := string(resp.Result) == `{"outcome":{"outcome":"selected","optionId":"once"}}`; allowed != tc.allowed {
				t.Fatalf("the agent gets %s", resp.Result)
			}
			r, err := e.Governor().AgentRequest(context.Background(), &acp.AgentRequest{ID: json.RawMessage(`7`), Method: acp.MethodTerminalCreate, SessionID: "s-1", Session: s,
				Params: json.RawMessage(`{"sessionId":"s-1","command":"make","args":["clean"],"cwd":"/p"}`)}, &askingClient{}, &fakeCaller{})
			if err != nil {
				t.Fatal(err)
			}
			if forwarded := r.Error == nil; forwarded != tc.allowed || (p.fs == 0) != tc.allowed {
				t.Errorf("terminal/create forwarded %v after the agent got %s (plugins asked %d times)", forwarded, resp.Result, p.fs)
			}
		})
	}
}
