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
	// Result as the proxy splits it: a reader of Result alone would see
	// an accept.
	return acp.Answer{Line: []byte(c.line), Result: json.RawMessage(`{"action":"accept","content":{"persist":"once"}}`)}, nil
}
func (lineClient) Notify(string, json.RawMessage) error { return nil }

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
