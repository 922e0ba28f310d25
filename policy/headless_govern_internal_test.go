package policy

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
)

// observed collects what Options.Observe is given.
type observed struct {
	mu      sync.Mutex
	entries []LogEntry
}

func (o *observed) add(e LogEntry) { o.mu.Lock(); o.entries = append(o.entries, e); o.mu.Unlock() }

func (o *observed) all() []LogEntry {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.entries)
}

// claudeRequest is a permission request of claude-agent-acp 0.101 in
// session s-1 (cwd /p) as a ClientConn hands it to its handler.
func claudeRequest(t *testing.T, params string) *acp.PermissionRequest {
	t.Helper()
	var p struct {
		SessionID string                 `json:"sessionId"`
		ToolCall  json.RawMessage        `json:"toolCall"`
		Options   []acp.PermissionOption `json:"options"`
	}
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	var tc struct {
		ID string `json:"toolCallId"`
	}
	json.Unmarshal(p.ToolCall, &tc)
	return &acp.PermissionRequest{ID: json.RawMessage("0"), Params: json.RawMessage(params), SessionID: p.SessionID,
		ToolCallID: tc.ID, ToolCall: p.ToolCall, Options: p.Options,
		Session: acp.SessionInfo{ID: p.SessionID, Cwd: "/p", Mode: "plan", Agent: claude101}}
}

// ExitPlanMode as likeagent (and claude-agent-acp 0.101) asks it.
const exitPlanAuto = `{"toolCall":{"toolCallId":"toolu_plan","status":"pending","rawInput":{},"title":"Approve Plan","kind":"switch_mode"},"options":[{"optionId":"exit-plan-default","name":"Yes, manually approve edits","kind":"allow_once"},{"optionId":"exit-plan-auto","name":"Yes, and use auto mode","kind":"allow_always"},{"optionId":"reject","name":"No, keep planning","kind":"reject_once"}],"sessionId":"s-1"}`

// A Write of claude-agent-acp 0.101.
const claudeWrite = `{"toolCall":{"toolCallId":"toolu_w","status":"pending","rawInput":{"file_path":"/p/a.txt","content":"hi"},"title":"Write a.txt","kind":"edit","locations":[{"path":"/p/a.txt"}]},"options":[{"optionId":"allow-once","name":"Yes","kind":"allow_once"},{"optionId":"reject","name":"No","kind":"reject_once"}],"sessionId":"s-1"}`

// TestHeadlessGoverned: permhost run's handler does what [session] adds to
// a permission decision, as the proxy's does: with modes govern, the
// options switching into a deciding mode never reach the plugins and the
// entry records their removal; a call it allowed has its own file
// requests forwarded by the governor without asking the plugins again.
// Options.Observe is given each entry, the governor's too.
func TestHeadlessGoverned(t *testing.T) {
	p := &seeing{d: abi.Decision{Outcome: abi.OutcomeAbstain}}
	seen := &observed{}
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: governing()}
	e, err := New(context.Background(), Options{Config: cfg, Home: "/home/dev", Grants: t.TempDir() + "/g.json", Observe: seen.add,
		Members: []host.Member{{Name: "rules", Layer: host.LayerTeam, Policy: host.FailClosed, Plugin: p, Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	h, err := e.Headless(HeadlessOptions{})
	if err != nil {
		t.Fatal(err)
	}

	dec, err := h.DecidePermission(context.Background(), claudeRequest(t, exitPlanAuto))
	if err != nil || dec.OptionID != "reject" {
		t.Fatalf("ExitPlanMode: %+v %v", dec, err)
	}
	if got := optionIDsOf(p.seen[0].Options); slices.Contains(got, "exit-plan-auto") {
		t.Errorf("the plugin saw %v", got)
	}
	entries := seen.all()
	if len(entries) != 1 || entries[0].Mode == nil || entries[0].Mode.Action != ModeRemoveOptions ||
		!slices.Equal(entries[0].Mode.Options, []string{"exit-plan-auto"}) || entries[0].DecisionID != dec.DecisionID {
		t.Fatalf("observed %+v", entries)
	}

	p.d = abi.Decision{Outcome: abi.OutcomeAllow}
	if dec, err := h.DecidePermission(context.Background(), claudeRequest(t, claudeWrite)); err != nil || dec.OptionID != "allow-once" {
		t.Fatalf("the write: %+v %v", dec, err)
	}
	// The call's own write, which the plugin would now reject, is
	// forwarded by the allowance.
	p.d = abi.Decision{Outcome: abi.OutcomeReject, Reason: "no writes"}
	write := &acp.AgentRequest{ID: json.RawMessage(`7`), Method: acp.MethodWriteTextFile, SessionID: "s-1",
		Session: acp.SessionInfo{ID: "s-1", Cwd: "/p", Agent: claude101}, Params: json.RawMessage(`{"sessionId":"s-1","path":"/p/a.txt","content":"hi"}`)}
	c := &askingClient{}
	if r, err := e.Governor().AgentRequest(context.Background(), write, c, &fakeCaller{}); err != nil || r.Line == nil || c.asked != 1 || len(p.seen) != 2 {
		t.Fatalf("the allowed call's write: %+v %v, asked %d, plugins asked %d times", r, err, c.asked, len(p.seen))
	}
	// Another file is decided by the plugins: refused.
	write.Params = json.RawMessage(`{"sessionId":"s-1","path":"/p/b.txt","content":"hi"}`)
	if r, _ := e.Governor().AgentRequest(context.Background(), write, c, &fakeCaller{}); r.Error == nil || !strings.Contains(r.Error.Message, "no writes") {
		t.Fatalf("another write: %+v", r)
	}
	entries = seen.all()
	var fs []string
	for _, x := range entries {
		if x.Request != "" {
			fs = append(fs, x.Outcome+" "+x.DecidedBy)
		}
	}
	if len(entries) != 4 || len(fs) != 2 || !strings.HasPrefix(fs[0], "forwarded allowed:d-") || fs[1] != "refused rules" {
		t.Errorf("observed %d entries; file requests %v", len(entries), fs)
	}
}

// TestHeadlessModesPass: with modes = "pass" nothing is removed, so
// nothing is recorded as removed.
func TestHeadlessModesPass(t *testing.T) {
	p := &seeing{d: abi.Decision{Outcome: abi.OutcomeAbstain}}
	seen := &observed{}
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject,
		Session: config.Session{Modes: config.ModesPass, FS: config.FSPass, AllowAlways: config.AllowAlwaysAgent}}
	e, err := New(context.Background(), Options{Config: cfg, Home: "/home/dev", Observe: seen.add,
		Members: []host.Member{{Name: "rules", Layer: host.LayerTeam, Policy: host.FailClosed, Plugin: p, Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	h, _ := e.Headless(HeadlessOptions{})
	if _, err := h.DecidePermission(context.Background(), claudeRequest(t, exitPlanAuto)); err != nil {
		t.Fatal(err)
	}
	if got := optionIDsOf(p.seen[0].Options); !slices.Contains(got, "exit-plan-auto") {
		t.Errorf("the plugin saw %v", got)
	}
	if entries := seen.all(); len(entries) != 1 || entries[0].Mode != nil {
		t.Errorf("observed %+v", entries)
	}
}

func optionIDsOf(options []abi.Option) []string {
	var out []string
	for _, o := range options {
		out = append(out, o.OptionID)
	}
	return out
}
