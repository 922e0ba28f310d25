package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/acp"
)

func TestRunUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	os.WriteFile(file, []byte("x"), 0o600)
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no agent", []string{"--prompt", "x"}, "no agent command given"},
		{"no prompt", []string{"--", "agent"}, "exactly one of --prompt and --prompt-file"},
		{"both prompts", []string{"--prompt", "x", "--prompt-file", file, "--", "agent"}, "exactly one of"},
		{"bad mode", []string{"--prompt", "x", "--on-undecided", "allow", "--", "agent"}, `--on-undecided "allow"`},
		{"negative timeout", []string{"--prompt", "x", "--permission-timeout", "-1s", "--", "agent"}, "must not be negative"},
		{"cwd is a file", []string{"--prompt", "x", "--cwd", file, "--", "agent"}, "is not a directory"},
		{"empty prompt file", []string{"--prompt-file", empty, "--", "agent"}, "is empty"},
		{"missing config", []string{"--prompt", "x", "--config", filepath.Join(dir, "none.toml"), "--", "agent"}, "cannot read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := runRun(context.Background(), tt.args, strings.NewReader(""), &bytes.Buffer{}, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

func TestRunAgentThatCannotStart(t *testing.T) {
	var stderr bytes.Buffer
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	code := runRun(context.Background(), []string{"--prompt", "x", "--cwd", t.TempDir(), "--", "/nonexistent/agent"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if code != exitRunAgent || !strings.Contains(stderr.String(), "starting the agent") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestReadPromptFile(t *testing.T) {
	got, err := readPromptFile("-", strings.NewReader("from stdin\n"))
	if err != nil || got != "from stdin\n" {
		t.Fatalf("readPromptFile(-) = %q, %v", got, err)
	}
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, bytes.Repeat([]byte("a"), maxPromptFile+1), 0o600)
	if _, err := readPromptFile(big, nil); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized prompt file: %v", err)
	}
}

func permEvent(outcome, id, kind, name, by, reason string, inTurn bool) acp.Event {
	return acp.Event{Kind: acp.EventPermission, Permission: &acp.PermissionEvent{
		ToolCallID: "t1", Title: "rm -rf build", Kind: "execute", Outcome: outcome, OptionID: id,
		OptionKind: kind, OptionName: name, DecidedBy: by, Reason: reason, InTurn: inTurn, Duration: 12345 * time.Microsecond, DurationMs: 12.345,
	}}
}

// The transcript a person reads: agent text on stdout, the rest on stderr.
func TestRunPrinterTranscript(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := newRunPrinter(&stdout, &stderr, false)
	tc := func(k acp.EventKind, status string) acp.Event {
		return acp.Event{Kind: k, ToolCall: &acp.ToolCallEvent{ID: "t1", Title: "rm -rf build", Kind: "execute", Status: status, RunBy: "agent"}}
	}
	for _, ev := range []acp.Event{
		{Kind: acp.EventText, Text: "Cleaning "},
		{Kind: acp.EventText, Text: "up.\n"},
		{Kind: acp.EventThought, Text: "should I\n"},
		{Kind: acp.EventThought, Text: " ask?"},
		tc(acp.EventToolCall, "pending"),
		permEvent("selected", "allow", "allow_once", "Allow", "team-rules", "npm test is fine", true),
		tc(acp.EventToolCallUpdate, "in_progress"),
		tc(acp.EventToolCallUpdate, "in_progress"),
		tc(acp.EventToolCallUpdate, "completed"),
		permEvent("selected", "reject", "reject_once", "Reject", "builtin", "no decision within 30s (--permission-timeout)", true),
		permEvent("cancelled", "", "", "", "person", "the person declined to choose", false),
		permEvent("cancelled", "", "", "", "cancel", "the turn was cancelled", true),
		{Kind: acp.EventFile, File: &acp.FileEvent{Method: acp.MethodReadTextFile, Path: "/p/a.txt", Bytes: 3}},
		{Kind: acp.EventFile, File: &acp.FileEvent{Method: acp.MethodWriteTextFile, Path: "/etc/x", Error: "outside"}},
		{Kind: acp.EventMode, Mode: "plan"},
		{Kind: acp.EventUpdate, Update: json.RawMessage(`{"sessionUpdate":"plan"}`)},
		{Kind: acp.EventText, Text: "Done"},
	} {
		p.event(ev)
	}
	p.stopped(acp.StopEndTurn)
	if got, want := stdout.String(), "Cleaning up.\nDone\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	want := `  (thinking) should I  ask?
• tool rm -rf build [execute] (pending)
? permission rm -rf build [execute] → allowed: "Allow" (allow_once) by plugin team-rules: npm test is fine [12.3ms]
  rm -rf build → in_progress
  rm -rf build → completed
? permission rm -rf build [execute] → rejected: "Reject" (reject_once) by the builtin fallback: no decision within 30s (--permission-timeout) [12.3ms]
? permission rm -rf build [execute] → cancelled by you: the person declined to choose [12.3ms] (after the turn)
? permission rm -rf build [execute] → cancelled by cancellation: the turn was cancelled [12.3ms]
  fs read /p/a.txt (3 bytes)
  fs write /etc/x refused: outside
• mode plan
permhost run: turn ended: end_turn (1 tool call, 4 permission decisions)
`
	if got := stderr.String(); got != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
	}
}

func TestRunPrinterJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := newRunPrinter(&stdout, &stderr, true)
	p.event(acp.Event{Kind: acp.EventText, Text: "a <b> & c"})
	p.event(permEvent("selected", "allow", "allow_once", "Allow", "team-rules", "ok", true))
	p.event(acp.Event{Kind: acp.EventStop, StopReason: "end_turn"})
	p.stopped(acp.StopEndTurn)
	p.fail("boom")
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 4 || stderr.String() != "permhost run: boom\n" {
		t.Fatalf("stdout:\n%s\nstderr: %q", stdout.String(), stderr.String())
	}
	if !strings.Contains(lines[0], `"text":"a <b> & c"`) {
		t.Errorf("HTML escaping in %s", lines[0])
	}
	var perm struct {
		Event      string
		Permission map[string]any
	}
	json.Unmarshal([]byte(lines[1]), &perm)
	if perm.Event != "permission" || perm.Permission["durationMs"] != 12.345 || perm.Permission["decidedBy"] != "team-rules" {
		t.Errorf("permission line %s", lines[1])
	}
	if lines[3] != `{"event":"error","message":"boom"}` {
		t.Errorf("error line %s", lines[3])
	}
}

// TestWho: the printed decider names a stored grant as a grant, not as a
// plugin called "grant:…".
func TestWho(t *testing.T) {
	for in, want := range map[string]string{
		"team-rules":       "plugin team-rules",
		"grant:g-1a2b3c4d": "grant g-1a2b3c4d",
		"builtin":          "the builtin fallback",
		"person":           "you",
		"":                 "cancellation",
	} {
		if got := who(in); got != want {
			t.Errorf("who(%q) = %q, want %q", in, got, want)
		}
	}
}
