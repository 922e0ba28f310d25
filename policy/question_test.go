package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/prompt"
	"github.com/permhost/permhost/policy"
)

// codexPlanReview is codex-acp 2.6's plan review "Implement this plan?"
// (transcripts/v2/codexts-v2-plan-mode.jsonl, seq 18) in its v1 shape.
const codexPlanReview = `{"sessionId":"01a23309-0f21-7e43-b292-36d6b39badf1","toolCall":{"toolCallId":"plan-review:01a23309-0f7c-7761-b362-0e8fa6a592de-plan","kind":"switch_mode","status":"pending","rawInput":{"plan":"1. Remove the build dir.\n2. Write hello.txt.\n"}},"options":[{"optionId":"implement_plan","name":"Yes, implement this plan","kind":"allow_once"},{"optionId":"revise_plan","name":"No, and tell Codex what to do differently","kind":"reject_once"}]}`

func codexRequest(t *testing.T, params string) *acp.PermissionRequest {
	pr := permissionRequest(t, params)
	pr.Session.Agent = acp.Peer{Name: "@agentclientprotocol/codex-acp", Version: "2.6.0"}
	return pr
}

func TestBuildRequestQuestionFamily(t *testing.T) {
	for _, tt := range []struct {
		name   string
		pr     func(t *testing.T) *acp.PermissionRequest
		family string
	}{
		{"codex's plan review", func(t *testing.T) *acp.PermissionRequest { return codexRequest(t, codexPlanReview) }, abi.FamilyQuestion},
		{"claude's ExitPlanMode is a mode switch", func(t *testing.T) *acp.PermissionRequest { return permissionRequest(t, exitPlanMode) }, abi.FamilySwitchMode},
		{"a Bash call is a tool call", func(t *testing.T) *acp.PermissionRequest { return permissionRequest(t, claudeBash) }, abi.FamilyShell},
		{"AskUserQuestion answers", func(t *testing.T) *acp.PermissionRequest {
			return permissionRequest(t, `{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"Which database?","kind":"other"},"options":[{"optionId":"q0_opt0","name":"Postgres","kind":"allow_once"},{"optionId":"q0_opt1","name":"SQLite","kind":"allow_once"}]}`)
		}, abi.FamilyQuestion},
		{"answers that name a command are a tool call", func(t *testing.T) *acp.PermissionRequest {
			return permissionRequest(t, `{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"x","kind":"other","rawInput":{"command":"rm -rf /"}},"options":[{"optionId":"q0_opt0","name":"Yes","kind":"allow_once"}]}`)
		}, abi.FamilyOther},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := policy.BuildRequest(tt.pr(t), "d1", "/home/dev")
			if err != nil {
				t.Fatal(err)
			}
			if req.Action.Family != tt.family {
				t.Errorf("family %q, want %q", req.Action.Family, tt.family)
			}
		})
	}
}

// TestQuestionPassesToThePersonUntouched: in the proxy, codex's plan
// review reaches the editor as the agent sent it, whatever a plugin would
// say, and the person's answer is the agent's.
func TestQuestionPassesToThePersonUntouched(t *testing.T) {
	seen := make(chan abi.Request, 1)
	cfg := &config.Config{Strategy: config.StrategySequential, Session: config.Session{Modes: config.ModesGovern, AllowAlways: config.AllowAlwaysPermhost, Reasons: config.ReasonsSteer}}
	s := newEngine(t, cfg, member("reject-all", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no"}, seen: seen}))
	editor, agent := startProxy(t, s.engine.Handler())
	editor.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"ed","version":"1"}}}`)
	agent.next(t)
	agent.send(t, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"@agentclientprotocol/codex-acp","version":"2.6.0"},"authMethods":[],"_meta":{"steering":{"supported":true}}}}`)
	editor.next(t)

	line := `{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":` + codexPlanReview + `}`
	agent.send(t, line)
	if got := editor.next(t); got != line {
		t.Fatalf("the editor got\n%s\nwant the agent's bytes\n%s", got, line)
	}
	editor.send(t, `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"implement_plan"}}}`)
	if got := agent.next(t); got != `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"implement_plan"}}}` {
		t.Fatalf("the agent got %s", got)
	}
	select {
	case req := <-seen:
		t.Errorf("a plugin was asked about a question: %+v", req.Action)
	default:
	}
	e := s.entries(t)
	if len(e) != 1 || e[0]["decidedBy"] != "person" || e[0]["optionId"] != "implement_plan" || e[0]["mode"] != nil {
		t.Fatalf("log = %v", e)
	}
}

// TestQuestionFallbackNeverAllows: a question the person does not answer
// in time gets the reject option, never implement_plan.
func TestQuestionFallbackNeverAllows(t *testing.T) {
	cfg := &config.Config{Strategy: config.StrategySequential, PersonTimeout: 1}
	s := newEngine(t, cfg, member("allow-all", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}))
	c := &fakeClient{answer: func(ctx context.Context, _ json.RawMessage) (acp.Answer, error) {
		<-ctx.Done()
		return acp.Answer{}, ctx.Err()
	}}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), codexRequest(t, codexPlanReview), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"revise_plan"}}` {
		t.Fatalf("agent got %s", got)
	}
	if len(c.asked) != 1 || c.asked[0] != nil {
		t.Errorf("the editor was asked %q, want the agent's own line", c.asked)
	}
}

// TestHeadlessOnQuestion: permhost run answers a question by [headless]
// on_question, never by a plugin; cancel by default.
func TestHeadlessOnQuestion(t *testing.T) {
	tests := []struct {
		name, cfg, opt string
		ask            func(context.Context, prompt.Question) (prompt.Answer, error)
		want           string // option id; "" is cancelled
		decidedBy      string
	}{
		{"default: cancel", "", "", nil, "", "builtin"},
		{"reject", config.UndecidedReject, "", nil, "revise_plan", "builtin"},
		{"the option beats the config", config.UndecidedReject, config.UndecidedCancel, nil, "", "builtin"},
		{"prompt: the person answers", config.UndecidedPrompt, "", func(_ context.Context, q prompt.Question) (prompt.Answer, error) {
			if len(q.Options) != 2 {
				return prompt.Answer{}, errors.New("options were narrowed")
			}
			return prompt.Answer{ID: "implement_plan"}, nil
		}, "implement_plan", "person"},
		{"prompt without a terminal: cancel", config.UndecidedPrompt, "", nil, "", "builtin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedPrompt, OnQuestion: tt.cfg}
			s := newEngine(t, cfg, member("allow-all", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}))
			h, err := s.engine.Headless(policy.HeadlessOptions{OnQuestion: tt.opt, AskReason: tt.ask})
			if err != nil {
				t.Fatal(err)
			}
			dec, err := h.DecidePermission(context.Background(), codexRequest(t, codexPlanReview))
			if err != nil {
				t.Fatal(err)
			}
			if dec.OptionID != tt.want || dec.DecidedBy != tt.decidedBy {
				t.Errorf("decision = %+v, want %q by %s", dec, tt.want, tt.decidedBy)
			}
			if tt.decidedBy == "builtin" && !strings.Contains(dec.Reason, "on_question") {
				t.Errorf("reason %q does not name the rule", dec.Reason)
			}
		})
	}
}

// TestHeadlessReasonTyped: a person's reject with a reason at the terminal
// is followed by the steering request carrying the person's words.
func TestHeadlessReasonTyped(t *testing.T) {
	cfg := &config.Config{Strategy: config.StrategySequential, Session: config.Session{Reasons: config.ReasonsSteer}}
	s := newEngine(t, cfg)
	h, err := s.engine.Headless(policy.HeadlessOptions{OnUndecided: config.UndecidedPrompt,
		AskReason: func(context.Context, prompt.Question) (prompt.Answer, error) {
			return prompt.Answer{ID: "reject", Reason: "use make clean instead"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	pr := permissionRequest(t, claudeBash)
	pr.Session.Steering = true
	dec, err := h.DecidePermission(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	if dec.OptionID != "reject" || dec.FollowUp == nil || dec.FollowUp.Method != "_session/steering" {
		t.Fatalf("decision = %+v", dec)
	}
	var p struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct{ Type, Text string }
	}
	if err := json.Unmarshal(dec.FollowUp.Params, &p); err != nil {
		t.Fatal(err)
	}
	if p.SessionID != pr.SessionID || len(p.Prompt) != 1 || p.Prompt[0].Text != "The user rejected this tool call and said: use make clean instead (tool call: rm -rf build)" {
		t.Errorf("steering params = %s", dec.FollowUp.Params)
	}

	// Without a typed reason a person's reject says all it means to.
	h, _ = s.engine.Headless(policy.HeadlessOptions{OnUndecided: config.UndecidedPrompt,
		AskReason: func(context.Context, prompt.Question) (prompt.Answer, error) { return prompt.Answer{ID: "reject"}, nil }})
	if dec, _ := h.DecidePermission(context.Background(), pr); dec.FollowUp != nil {
		t.Errorf("a bare reject is followed by %s", dec.FollowUp.Params)
	}
}
