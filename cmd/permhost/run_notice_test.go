package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/policy"
)

// governorEntries are decision-log entries of each kind the governor
// writes, and one it shows nothing of (a forwarded read).
func governorEntries() []policy.LogEntry {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []policy.LogEntry{
		{DecisionID: "d-1", Time: at, Session: "s", Outcome: "switched", DecidedBy: policy.ByModes, Reason: "mode auto decides by itself: everything",
			Mode: &policy.LogMode{Action: policy.ModeSwitch, Trigger: "session/new", From: "auto", To: "default", By: "session/set_config_option"}},
		{DecisionID: "d-2", Time: at, Session: "s", Outcome: "selected", DecidedBy: "builtin", ToolCall: policy.LogToolCall{ID: "p1", Title: "Approve Plan"},
			Mode: &policy.LogMode{Action: policy.ModeRemoveOptions, Trigger: "session/request_permission", Options: []string{"exit-plan-auto"}}},
		{DecisionID: "d-3", Time: at, Session: "s", Outcome: "refused", DecidedBy: "protect-secrets", Reason: "matches .env", Request: acp.MethodReadTextFile,
			ToolCall: policy.LogToolCall{ID: "permhost-d-3", Title: "Read /p/.env", Kind: "read"}},
		{DecisionID: "d-4", Time: at, Session: "s", Outcome: "forwarded", DecidedBy: "project-read", Request: acp.MethodReadTextFile,
			ToolCall: policy.LogToolCall{ID: "permhost-d-4", Title: "Read /p/a.txt", Kind: "read"}},
		{DecisionID: "d-5", Time: at, Session: "s", Outcome: "ran", DecidedBy: policy.ByAgent, Unasked: true, Reason: "the agent ran it with no permission request, mode auto",
			ToolCall: policy.LogToolCall{ID: "t9", Title: "rm -rf build", Kind: "execute", Status: "completed"}},
		{DecisionID: "d-6", Time: at, Session: "s", Outcome: "reversed", DecidedBy: policy.ByModes, Reason: "the agent switched to auto-edit by itself: edits",
			Mode: &policy.LogMode{Action: policy.ModeReverse, Trigger: "current_mode_update", From: "auto-edit", To: "default", By: "session/set_mode"}},
		{DecisionID: "d-7", Time: at, Session: "s", Outcome: "failed", DecidedBy: policy.ByModes, Reason: "the agent switched to yolo by itself and refused the switch back",
			Mode: &policy.LogMode{Action: policy.ModeReverse, Trigger: "current_mode_update", From: "yolo", To: "default", By: "session/set_mode", Error: "error -32603: no"}},
		{DecisionID: "d-8", Time: at, Session: "s", Outcome: "refused", DecidedBy: policy.ByModes, Reason: "the agent refused the switch to default",
			Mode: &policy.LogMode{Action: policy.ModeUngovernable, Trigger: "session/new", From: "auto", To: "default", Error: "error -32603: no"}},
		{DecisionID: "d-9", Time: at, Session: "s", Outcome: "refused", DecidedBy: policy.ByPerson, Reason: "not allowed", Request: acp.MethodWriteTextFile,
			ToolCall: policy.LogToolCall{ID: "permhost-d-9", Title: "Write /p/b.txt", Kind: "edit"}},
	}
}

// The governor's actions in the transcript, in the order they were handed
// over among the client's events; a forwarded read is the client's to show.
func TestRunPrinterNotices(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := newRunPrinter(&stdout, &stderr, false)
	defer p.close()
	entries := governorEntries()
	p.observe(entries[0])
	p.event(acp.Event{Kind: acp.EventMode, Mode: "default"})
	for _, e := range entries[1:] {
		p.observe(e)
	}
	p.stopped(acp.StopEndTurn)
	want := `• mode auto → default by permhost (session/set_config_option): mode auto decides by itself: everything
• mode default
  options removed: exit-plan-auto (they switch to a mode that decides by itself)
  fs read /p/.env refused by plugin protect-secrets: matches .env
! tool rm -rf build [execute] ran unasked: the agent ran it with no permission request, mode auto
• mode auto-edit → default by permhost (session/set_mode): the agent switched to auto-edit by itself: edits
• mode yolo: the agent switched to yolo by itself and refused the switch back (error -32603: no)
  fs write /p/b.txt refused by the decision on its permission request: not allowed
permhost run: turn ended: end_turn (0 tool calls, 0 permission decisions, 1 tool call run unasked)
`
	if got := stderr.String(); got != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
	}
}

// With --json each notice is one event: mode (the action, the mode after
// it), fs (a refused request) or unasked (the tool call).
func TestRunPrinterNoticesJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := newRunPrinter(&stdout, &stderr, true)
	defer p.close()
	for _, e := range governorEntries() {
		p.observe(e)
	}
	p.flush()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	want := []string{
		`{"event":"mode","time":"2026-01-02T03:04:05Z","sessionId":"s","mode":"default","action":{"action":"switch","trigger":"session/new","from":"auto","to":"default","by":"session/set_config_option"},"outcome":"switched","decidedBy":"modes","reason":"mode auto decides by itself: everything","decisionId":"d-1"}`,
		`{"event":"mode","time":"2026-01-02T03:04:05Z","sessionId":"s","action":{"action":"remove-options","trigger":"session/request_permission","options":["exit-plan-auto"]},"outcome":"selected","decidedBy":"builtin","decisionId":"d-2"}`,
		`{"event":"fs","time":"2026-01-02T03:04:05Z","sessionId":"s","fs":{"method":"fs/read_text_file","path":"/p/.env","bytes":0,"error":"refused by plugin protect-secrets: matches .env"},"outcome":"refused","decidedBy":"protect-secrets","reason":"matches .env","decisionId":"d-3"}`,
		`{"event":"unasked","time":"2026-01-02T03:04:05Z","sessionId":"s","toolCall":{"toolCallId":"t9","title":"rm -rf build","kind":"execute","status":"completed"},"outcome":"ran","decidedBy":"agent","reason":"the agent ran it with no permission request, mode auto","decisionId":"d-5"}`,
		`{"event":"mode","time":"2026-01-02T03:04:05Z","sessionId":"s","mode":"default","action":{"action":"reverse","trigger":"current_mode_update","from":"auto-edit","to":"default","by":"session/set_mode"},"outcome":"reversed","decidedBy":"modes","reason":"the agent switched to auto-edit by itself: edits","decisionId":"d-6"}`,
		`{"event":"mode","time":"2026-01-02T03:04:05Z","sessionId":"s","mode":"yolo","action":{"action":"reverse","trigger":"current_mode_update","from":"yolo","to":"default","by":"session/set_mode","error":"error -32603: no"},"outcome":"failed","decidedBy":"modes","reason":"the agent switched to yolo by itself and refused the switch back","decisionId":"d-7"}`,
		`{"event":"mode","time":"2026-01-02T03:04:05Z","sessionId":"s","mode":"auto","action":{"action":"ungovernable","trigger":"session/new","from":"auto","to":"default","error":"error -32603: no"},"outcome":"refused","decidedBy":"modes","reason":"the agent refused the switch to default","decisionId":"d-8"}`,
		`{"event":"fs","time":"2026-01-02T03:04:05Z","sessionId":"s","fs":{"method":"fs/write_text_file","path":"/p/b.txt","bytes":0,"error":"refused by the decision on its permission request: not allowed"},"outcome":"refused","decidedBy":"person","reason":"not allowed","decisionId":"d-9"}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n%s\nwant:\n%s", i, lines[i], want[i])
		}
		if !json.Valid([]byte(lines[i])) {
			t.Errorf("line %d is not JSON", i)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr %q", stderr.String())
	}
}

// What the link makes of the errors the in-process proxy answers with.
func TestGovernedLinkErrors(t *testing.T) {
	ended := &governedLink{}
	ended.ended.Store(true)
	running := &governedLink{}
	proxyEnd := &acp.RPCError{Code: acp.CodeInternalError, Message: "permhost: the agent (pid 7) exited with status 3 before answering session/prompt"}
	agentOwn := &acp.RPCError{Code: acp.CodeInternalError, Message: "Internal error"}
	refused := &acp.RPCError{Code: acp.CodePolicyRefused, Message: "permhost: the session cannot be governed: ..."}
	for _, tc := range []struct {
		name              string
		link              *governedLink
		err               error
		agentEnded, ungov bool
	}{
		{"the agent ended", ended, fmt.Errorf("session/prompt: %w", proxyEnd), true, false},
		{"the agent's own error", ended, agentOwn, false, false},
		{"the agent still runs", running, proxyEnd, false, false},
		{"not governed", nil, proxyEnd, false, false},
		{"refused session", ended, fmt.Errorf("session/new: %w", refused), false, true},
		{"refused, not governed", nil, refused, false, false},
		{"another error", ended, errors.New("boom"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.link.agentEnded(tc.err); got != tc.agentEnded {
				t.Errorf("agentEnded %v", got)
			}
			if got := tc.link.ungoverned(tc.err); got != tc.ungov {
				t.Errorf("ungoverned %v", got)
			}
		})
	}
}
