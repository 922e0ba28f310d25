package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/acptest"
)

// startSDKPipeline starts the ACP SDK's example agent behind
// `permhost proxy --config cfg` and opens a session, like startSDK.
func startSDKPipeline(t *testing.T, cfg string, answer func(s *sdkSession, req *acptest.Message) any) *sdkSession {
	t.Helper()
	argv := append([]string{permhostBin, "proxy", "--log-level", "debug", "--shutdown-grace", "2s", "--config", cfg, "--"}, acptest.SDKAgent(t)...)
	return openSDKSession(t, argv, answer)
}

// readDecisions reads a decision log once it has n lines.
func readDecisions(t *testing.T, path string, n int) []logLine {
	t.Helper()
	r := &pipelineRun{t: t, log: path}
	var out []logLine
	for _, e := range r.decisions(n) {
		out = append(out, e)
	}
	return out
}

// TestPipelineSDKAgentRejected: plan-mode rejects the example agent's edit.
// The agent receives `reject` and takes its skip path (the "I'll skip the
// configuration update" message, no completed call_2), the turn ends
// end_turn, and the client saw permhost's tool_call_update and no request.
func TestPipelineSDKAgentRejected(t *testing.T) {
	t.Parallel()
	cfg, log := writeConfig(t, "sequential", pluginSpec{name: "plan-mode", path: warmPlugin(t, examplePlugin(t, "plan-mode")), timeout: "5s", policy: "closed"})
	s := startSDKPipeline(t, cfg, func(s *sdkSession, req *acptest.Message) any {
		s.t.Errorf("the client was asked: %s", req.Raw)
		return selectAllow
	})
	if got := s.prompt("Please clean the build directory."); got != "end_turn" {
		s.fatalf("stopReason %q, want end_turn", got)
	}
	var decision *acptest.Message
	for _, m := range s.conn.Notifications("session/update") {
		if bytes.Contains(m.Raw, []byte(`"permhost":{"decision"`)) {
			decision = m
		}
	}
	if decision == nil {
		s.fatalf("the client saw no tool_call_update with permhost's decision")
	}
	var p struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
			ToolCallID    string `json:"toolCallId"`
			Title         string `json:"title"`
			Kind          string `json:"kind"`
			Meta          struct {
				Permhost struct {
					Decision permhostDecision `json:"decision"`
				} `json:"permhost"`
			} `json:"_meta"`
		} `json:"update"`
	}
	if err := json.Unmarshal(decision.Params, &p); err != nil {
		s.fatalf("decision update: %v", err)
	}
	u := p.Update
	if u.SessionUpdate != "tool_call_update" || u.ToolCallID != "call_2" || u.Title != "Modifying critical configuration file" || u.Kind != "edit" {
		s.t.Errorf("decision update %+v, want call_2's tool-call fields", u)
	}
	if d := u.Meta.Permhost.Decision; d.Outcome != "reject" || d.OptionID != "reject" || d.DecidedBy != "plan-mode" || d.Reason == "" {
		s.t.Errorf("decision %+v, want plan-mode's reject", d)
	}
	updates := s.updatesAfter(decision.Raw)
	if configApplied(updates) {
		s.fatalf("the agent applied the edit after a reject")
	}
	skipped := false
	for _, upd := range updates {
		if c, ok := upd["content"].(map[string]any); ok && strings.Contains(c["text"].(string), "skip the configuration update") {
			skipped = true
		}
	}
	if !skipped {
		s.fatalf("no skip message after the decision: the agent did not receive `reject`")
	}
	e := readDecisions(t, log, 1)[0]
	if e.DecidedBy != "plan-mode" || e.OptionID != "reject" || e.ToolCall.ID != "call_2" {
		t.Errorf("log: %+v", e)
	}
	s.stop()
}

// TestPipelineSDKAgentAbstain: with good.wasm abstaining, the client is
// asked (with permhost's _meta), its `allow` reaches the agent, which
// applies the edit and ends the turn end_turn.
func TestPipelineSDKAgentAbstain(t *testing.T) {
	t.Parallel()
	cfg, log := writeConfig(t, "sequential", pluginSpec{name: "good", path: wasmFixture("good"), timeout: "2s", policy: "closed"})
	s := startSDKPipeline(t, cfg, func(*sdkSession, *acptest.Message) any { return selectAllow })
	if got := s.prompt("Please clean the build directory."); got != "end_turn" {
		s.fatalf("stopReason %q, want end_turn", got)
	}
	req := s.permission()
	checkRequest(s, req)
	var p struct {
		Meta struct {
			Permhost struct {
				DecisionID string `json:"decisionId"`
			} `json:"permhost"`
			Permission struct {
				Version int    `json:"version"`
				Title   string `json:"title"`
			} `json:"permission"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.Meta.Permhost.DecisionID == "" ||
		p.Meta.Permission.Version != 1 || p.Meta.Permission.Title != "Modifying critical configuration file" {
		s.t.Errorf("request _meta %+v (%v): want permhost's decisionId and the presentation record", p.Meta, err)
	}
	if !configApplied(s.updatesAfter(req.Raw)) {
		s.fatalf("no completed call_2 after the allow: the answer did not reach the agent")
	}
	e := readDecisions(t, log, 1)[0]
	if e.DecisionID != p.Meta.Permhost.DecisionID || e.DecidedBy != "person" || e.OptionID != "allow" {
		t.Errorf("log: %+v", e)
	}
	s.stop()
}
