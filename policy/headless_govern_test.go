package policy_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

// governedRun is an engine of permhost run whose one plugin decides what
// decide returns, and records the options it saw and what Observe got.
type governedRun struct {
	engine  *policy.Engine
	mu      sync.Mutex
	decide  abi.Decision
	saw     [][]string // the option ids of each request the plugin saw
	entries []policy.LogEntry
}

func newGovernedRun(t *testing.T, s config.Session) *governedRun {
	t.Helper()
	g := &governedRun{decide: abi.Decision{Outcome: abi.OutcomeAbstain}}
	plugin := decides(func(_ context.Context, req abi.Request) host.Result {
		g.mu.Lock()
		defer g.mu.Unlock()
		var ids []string
		for _, o := range req.Options {
			ids = append(ids, o.OptionID)
		}
		g.saw = append(g.saw, ids)
		return host.Result{Decision: g.decide}
	})
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: s}
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, Via: "run", Home: "/home/dev", Grants: t.TempDir() + "/g.json",
		Members: []host.Member{{Name: "rules", Layer: host.LayerTeam, Policy: host.FailClosed, Plugin: plugin, Version: "1"}},
		Observe: func(e policy.LogEntry) { g.mu.Lock(); g.entries = append(g.entries, e); g.mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	g.engine = e
	return g
}

func (g *governedRun) set(d abi.Decision) { g.mu.Lock(); g.decide = d; g.mu.Unlock() }

func (g *governedRun) observed() ([]policy.LogEntry, [][]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.entries), slices.Clone(g.saw)
}

var claude101Peer = acp.Peer{Name: "@agentclientprotocol/claude-agent-acp", Version: "0.101.0"}

// claudeRequest is a request of claude-agent-acp 0.101 in session s1
// (cwd /p), as run's ClientConn hands it to its handler.
func claudeRequest(t *testing.T, params, toolCallID string) *acp.PermissionRequest {
	pr := permissionRequest(t, params)
	pr.ToolCallID = toolCallID
	pr.Session.Agent, pr.Session.Cwd = claude101Peer, "/p"
	return pr
}

// ExitPlanMode as claude-agent-acp 0.101 asks it (likeagent's shape).
const exitPlanAuto = `{"toolCall":{"toolCallId":"toolu_plan","status":"pending","rawInput":{},"title":"Approve Plan","kind":"switch_mode"},"options":[{"optionId":"exit-plan-default","name":"Yes, manually approve edits","kind":"allow_once"},{"optionId":"exit-plan-auto","name":"Yes, and use auto mode","kind":"allow_always"},{"optionId":"reject","name":"No, keep planning","kind":"reject_once"}],"sessionId":"s1"}`

// A Write of claude-agent-acp 0.101.
const claudeWrite = `{"toolCall":{"toolCallId":"toolu_w","status":"pending","rawInput":{"file_path":"/p/a.txt","content":"hi"},"title":"Write a.txt","kind":"edit","locations":[{"path":"/p/a.txt"}]},"options":[{"optionId":"allow-once","name":"Yes","kind":"allow_once"},{"optionId":"reject","name":"No","kind":"reject_once"}],"sessionId":"s1"}`

// TestHeadlessGoverned: permhost run's handler does what [session] adds to
// a permission decision, as the proxy's does: with modes govern, the
// options switching into a deciding mode never reach the plugins and the
// entry records their removal; a call it allowed has its own file
// requests forwarded by the governor without asking the plugins again.
// Options.Observe is given every entry, the governor's too. With
// modes = "pass" nothing is removed.
func TestHeadlessGoverned(t *testing.T) {
	g := newGovernedRun(t, config.Session{Modes: config.ModesGovern, FS: config.FSGovern, AllowAlways: config.AllowAlwaysPermhost})
	h, err := g.engine.Headless(policy.HeadlessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := h.DecidePermission(context.Background(), claudeRequest(t, exitPlanAuto, "toolu_plan"))
	if err != nil || dec.OptionID != "reject" {
		t.Fatalf("ExitPlanMode: %+v %v", dec, err)
	}
	entries, saw := g.observed()
	if len(saw) != 1 || slices.Contains(saw[0], "exit-plan-auto") {
		t.Errorf("the plugin saw %v", saw)
	}
	if len(entries) != 1 || entries[0].Mode == nil || entries[0].Mode.Action != policy.ModeRemoveOptions ||
		!slices.Equal(entries[0].Mode.Options, []string{"exit-plan-auto"}) || entries[0].DecisionID != dec.DecisionID {
		t.Fatalf("observed %+v", entries)
	}

	g.set(abi.Decision{Outcome: abi.OutcomeAllow})
	if dec, err := h.DecidePermission(context.Background(), claudeRequest(t, claudeWrite, "toolu_w")); err != nil || dec.OptionID != "allow-once" {
		t.Fatalf("the write: %+v %v", dec, err)
	}
	// The call's own write, which the plugin would now reject, is
	// forwarded by the allowance; another file is decided by the plugin.
	g.set(abi.Decision{Outcome: abi.OutcomeReject, Reason: "no writes"})
	write := &acp.AgentRequest{ID: json.RawMessage(`7`), Method: acp.MethodWriteTextFile, SessionID: "s1",
		Session: acp.SessionInfo{ID: "s1", Cwd: "/p", Agent: claude101Peer}, Params: json.RawMessage(`{"sessionId":"s1","path":"/p/a.txt","content":"hi"}`)}
	c := &fakeClient{answer: func(context.Context, json.RawMessage) (acp.Answer, error) {
		return acp.Answer{Line: []byte(`{"jsonrpc":"2.0","id":7,"result":null}`)}, nil
	}}
	if r, err := g.engine.Governor().AgentRequest(context.Background(), write, c, nil); err != nil || r.Line == nil {
		t.Fatalf("the allowed call's write: %+v %v", r, err)
	}
	write.Params = json.RawMessage(`{"sessionId":"s1","path":"/p/b.txt","content":"hi"}`)
	if r, _ := g.engine.Governor().AgentRequest(context.Background(), write, c, nil); r.Error == nil || !strings.Contains(r.Error.Message, "no writes") {
		t.Fatalf("another write: %+v", r)
	}
	entries, saw = g.observed()
	var fs []string
	for _, x := range entries {
		if x.Request != "" {
			fs = append(fs, x.Outcome+" "+x.DecidedBy)
		}
	}
	if len(saw) != 3 || len(c.asked) != 1 || len(entries) != 4 || len(fs) != 2 || !strings.HasPrefix(fs[0], "forwarded allowed:d-") || fs[1] != "refused rules" {
		t.Errorf("plugin asked %d times, editor %d; observed %d entries; file requests %v", len(saw), len(c.asked), len(entries), fs)
	}

	pass := newGovernedRun(t, config.Session{Modes: config.ModesPass, FS: config.FSPass, AllowAlways: config.AllowAlwaysAgent})
	h, _ = pass.engine.Headless(policy.HeadlessOptions{})
	if _, err := h.DecidePermission(context.Background(), claudeRequest(t, exitPlanAuto, "toolu_plan")); err != nil {
		t.Fatal(err)
	}
	if entries, saw := pass.observed(); len(saw) != 1 || !slices.Contains(saw[0], "exit-plan-auto") || len(entries) != 1 || entries[0].Mode != nil {
		t.Errorf("modes = pass: the plugin saw %v; observed %+v", saw, entries)
	}
}
