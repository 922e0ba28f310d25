package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/permhost/permhost/acp"
)

// The session/new result of claude-agent-acp 0.101 over ACP v2 in its
// default mode auto (testdata/transcripts/v2/claude101-v2-auto-mode.jsonl,
// seq 5, trimmed to the mode and model options): no modes, options named
// by configId.
const autoResultV2 = `{"sessionId":"s-1","configOptions":[{"name":"Mode","category":"mode","type":"select","currentValue":"auto","options":[{"value":"default","name":"Manual"},{"value":"acceptEdits","name":"Accept edits"},{"value":"plan","name":"Plan"},{"value":"auto","name":"Auto"}],"configId":"mode"},{"name":"Model","category":"model","type":"select","currentValue":"default","options":[{"value":"default","name":"Default"}],"configId":"model"}]}`

// TestSessionStartV2 governs a v2 session by its configOptions: a
// session in auto is moved to default with v2's
// session/set_config_option {configId, type:"id", value}, and the editor
// gets the result showing default; the editor's own switch of the v2 mode
// option to auto is refused and to plan passes.
func TestSessionStartV2(t *testing.T) {
	e, dlog, _ := govEngine(t, governing())
	defer dlog.Close()
	c := &fakeCaller{agent: accepts}
	s := &acp.SessionStart{Method: acp.MethodSessionNew, Result: json.RawMessage(autoResultV2),
		Session: acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: claude101, ProtocolVersion: 2}}
	res, rerr := e.Governor().SessionStart(context.Background(), s, c)
	if rerr != nil {
		t.Fatalf("refused: %s", rerr.Message)
	}
	if want := strings.Replace(autoResultV2, `"currentValue":"auto"`, `"currentValue":"default"`, 1); string(res) != want {
		t.Errorf("result\n got %s\nwant %s", res, want)
	}
	if got := strings.Join(c.calls, "\n"); got != `session/set_config_option {"sessionId":"s-1","configId":"mode","type":"id","value":"default"}` {
		t.Errorf("permhost's requests %q", got)
	}
	for _, tc := range []struct {
		value   string
		refused bool
	}{{"auto", true}, {"plan", false}} {
		params := `{"sessionId":"s-1","configId":"mode","type":"id","value":"` + tc.value + `"}`
		rerr := e.Governor().ClientRequest(&acp.ClientRequest{Method: acp.MethodSessionSetConfigOption, Params: json.RawMessage(params),
			Session: acp.SessionInfo{ID: "s-1", Agent: claude101, ProtocolVersion: 2}})
		if (rerr != nil) != tc.refused {
			t.Errorf("switch to %s: refusal %+v, want refused %v", tc.value, rerr, tc.refused)
		}
	}
}

// TestParamsRequestV2: `permhost test` reads a v2 request's params as the
// proxy does: the subject's tool call is the request's, a command
// subject is a shell action, and the plugins see the v2 fields.
func TestParamsRequestV2(t *testing.T) {
	for _, c := range []struct {
		params, command, cwd, title string
	}{
		{`{"sessionId":"s","title":"Run command?","description":"why","subject":{"type":"tool_call","toolCall":{"toolCallId":"c1","title":"rm -rf build","rawInput":{"command":"rm -rf build","cwd":"/p"},"kind":"execute","status":"pending"}},"options":[{"optionId":"a","name":"Yes","kind":"allow_once"}]}`,
			"rm -rf build", "/p", "Run command?"},
		{`{"sessionId":"s","title":"Run?","subject":{"type":"command","command":"make","cwd":"/p/sub"},"options":[{"optionId":"a","name":"Yes","kind":"allow_once"}]}`,
			"make", "/p/sub", "Run?"},
	} {
		pr, err := paramsRequest(json.RawMessage(c.params), acp.SessionInfo{Cwd: "/p", Agent: acp.Peer{Name: "@agentclientprotocol/codex-acp", Version: "2.6.0"}})
		if err != nil {
			t.Fatal(err)
		}
		req, err := BuildRequest(pr, "d", "/home/dev")
		if err != nil {
			t.Fatal(err)
		}
		if req.Title != c.title || req.Subject == nil || req.Action == nil || req.Action.Command != c.command || req.Action.Cwd != c.cwd || req.Shell == nil {
			t.Errorf("%s: %q %+v %+v", c.params, req.Title, req.Subject, req.Action)
		}
	}
}

// TestApprovalRequestV2: the permission request an approval stands for is
// in the connection's version: over v2 its tool call is the subject and
// the approval's message its title, and plugins see the same action.
func TestApprovalRequestV2(t *testing.T) {
	a := approval{message: "Allow the docs server to run search?", meta: json.RawMessage(`{"tool_params":{"q":"x"}}`),
		options: []acp.PermissionOption{{OptionID: "accept", Name: "Allow", Kind: "allow_once"}, {OptionID: "decline", Name: "Decline", Kind: "reject_once"}}}
	var reqs []string
	for _, v := range []int{1, 2} {
		r := &acp.AgentRequest{ID: json.RawMessage(`5`), Method: "elicitation/create", SessionID: "s-1",
			Session: acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: acp.Peer{Name: "@agentclientprotocol/codex-acp", Version: "2.6.0"}, ProtocolVersion: v}}
		pr := approvalRequest(r, a, "d-1")
		req, err := BuildRequest(pr, "d-1", "/home/dev")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case v == 1 && (req.Title != "" || req.Subject != nil || !strings.Contains(string(pr.Params), `"toolCall":{`)):
			t.Errorf("v1: %s", pr.Params)
		case v == 2 && (req.Title != a.message || req.Subject == nil || !strings.Contains(string(pr.Params), `,"subject":{"type":"tool_call","toolCall":{"toolCallId":"permhost-d-1"`) || strings.Contains(string(pr.Params), `"sessionId":"s-1","toolCall"`)):
			t.Errorf("v2: %s", pr.Params)
		}
		act, _ := json.Marshal(req.Action)
		tc, _ := json.Marshal(req.ToolCall)
		reqs = append(reqs, string(act)+string(tc))
	}
	if reqs[0] != reqs[1] {
		t.Errorf("v1 and v2 differ:\n%s\n%s", reqs[0], reqs[1])
	}
}
