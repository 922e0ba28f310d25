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

	"github.com/creack/pty"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/leader"
	"github.com/permhost/permhost/internal/prompt"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/policy"
)

// hostile is what an attacker (an agent, a worker, a plugin, a recording)
// appends to every field it supplies: a terminal title (OSC), a screen
// clear (CSI), a bell, a bidi override, a zero-width space, a line
// separator, a carriage return (to write over the line) and a byte of
// invalid UTF-8.
const hostile = "\x1b]2;pwned\x07\x1b[2J\u202e\u200b\u2028\r\xff"

// rawHostile are the pieces of hostile none of which may reach a person.
var rawHostile = []string{"\x1b", "\x07", "\u202e", "\u200b", "\u2028", "\xff"}

// h is a field's value: its name, so that the output shows which field is
// which, then hostile.
func h(field string) string { return field + hostile }

// checkShown fails t when out shows a piece of hostile raw, or anything
// else safetext escapes (beyond line ends), or when a field in want is not
// shown escaped. json is true for text that went through JSON, where
// invalid UTF-8 became U+FFFD before permhost read it.
func checkShown(t *testing.T, what, out string, json bool, want ...string) {
	t.Helper()
	for _, raw := range rawHostile {
		if i := strings.Index(out, raw); i >= 0 {
			t.Errorf("%s shows %q raw at %d:\n%q", what, raw, i, out)
		}
	}
	lines := strings.NewReplacer("\r\r\n", "\n", "\r\n", "\n").Replace(out)
	if got := safetext.TerminalLines(lines); got != lines {
		t.Errorf("%s holds what safetext escapes:\n%q", what, out)
	}
	suffix := hostile
	if json {
		suffix = strings.ToValidUTF8(hostile, "\ufffd")
	}
	for _, field := range want {
		if w := safetext.Terminal(field + suffix); !strings.Contains(out, w) {
			t.Errorf("%s lacks %s shown escaped (%q):\n%q", what, field, w, out)
		}
	}
}

// The transcript of permhost run (and of permhost demo, which runs it):
// every field of every event and notice.
func TestRunPrinterEscapesEveryField(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := newRunPrinter(&stdout, &stderr, false)
	defer p.close()
	for _, ev := range []acp.Event{
		{Kind: acp.EventText, Text: h("text") + "\n"},
		{Kind: acp.EventThought, Text: h("thought")},
		{Kind: acp.EventToolCall, ToolCall: &acp.ToolCallEvent{ID: h("id"), Kind: h("kind"), Status: h("status")}},
		{Kind: acp.EventToolCallUpdate, ToolCall: &acp.ToolCallEvent{ID: "t1", Title: h("title"), Status: h("status2")}},
		{Kind: acp.EventPermission, Permission: &acp.PermissionEvent{ToolCallID: "t1", Title: h("ptitle"), Kind: h("pkind"),
			Outcome: "selected", OptionID: h("oid"), OptionName: h("oname"), OptionKind: h("okind"), DecidedBy: h("plugin"), Reason: h("preason"), InTurn: true}},
		{Kind: acp.EventFile, File: &acp.FileEvent{Method: acp.MethodReadTextFile, Path: h("/read")}},
		{Kind: acp.EventFile, File: &acp.FileEvent{Method: acp.MethodWriteTextFile, Path: h("/write"), Error: h("ferror")}},
		{Kind: acp.EventMode, Mode: h("mode")},
	} {
		p.event(ev)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, e := range []policy.LogEntry{
		{Time: at, Outcome: "switched", DecidedBy: policy.ByModes, Reason: h("mreason"),
			Mode: &policy.LogMode{Action: policy.ModeSwitch, From: h("from"), To: h("to"), By: h("by")}},
		{Time: at, Outcome: "selected", Mode: &policy.LogMode{Action: policy.ModeRemoveOptions, Options: []string{h("removed")}}},
		{Time: at, Outcome: "failed", DecidedBy: policy.ByModes, Reason: h("rreason"),
			Mode: &policy.LogMode{Action: policy.ModeReverse, From: h("rfrom"), Error: h("merror")}},
		{Time: at, Outcome: "refused", DecidedBy: h("fsplugin"), Reason: h("fsreason"), Request: acp.MethodReadTextFile,
			ToolCall: policy.LogToolCall{Title: "Read " + h("/secret")}},
		{Time: at, Outcome: "ran", DecidedBy: policy.ByAgent, Unasked: true, Reason: h("ureason"),
			ToolCall: policy.LogToolCall{ID: "t9", Title: h("utitle"), Kind: h("ukind")}},
	} {
		p.observe(e)
	}
	p.stopped(h("stop"))
	checkShown(t, "stdout", stdout.String(), false, "text")
	checkShown(t, "stderr", stderr.String(), false, "thought", "id", "kind", "status", "title", "status2", "ptitle", "pkind",
		"oname", "okind", "plugin", "preason", "/read", "/write", "ferror", "mode", "mreason", "from", "to", "by", "removed",
		"rreason", "rfrom", "merror", "fsplugin", "fsreason", "/secret", "ureason", "utitle", "ukind", "stop")
}

// permhost leader: the line naming the worker and the question, on a real
// pseudo-terminal.
func TestLeaderPromptEscapesEveryField(t *testing.T) {
	scr, answer := leaderOnPTY(t, hostileLeaderPrompt())
	if answer != h("always") {
		t.Fatalf("answered %q", answer)
	}
	checkShown(t, "the leader's terminal", scr, false, "name", "agent", "session", "cwd", "title", "kind", "command",
		"/path", "access", "plugin", "summary", "risk", "why", "Always", "akind", "Yes", "ykind")
	if !strings.Contains(scr, safetext.Terminal(strings.ToUpper(h("level")))) {
		t.Errorf("the risk level is not shown escaped:\n%q", scr)
	}
}

// permhost check's report: the agent's names, its modes and its answers.
func TestCheckReportEscapesEveryField(t *testing.T) {
	var out bytes.Buffer
	printCheck(&out, checkReport{
		Agent:   acp.Peer{Name: h("name"), Title: h("title"), Version: h("version")},
		Profile: "generic", Session: h("session"), Cwd: h("cwd"),
		Modes:        []checkMode{{ID: h("mode"), Name: h("mname"), Current: true}, {ID: h("mode2"), Name: h("mname2"), Decides: h("decides")}},
		ConfigOption: h("option"), Target: h("target"), Switch: "config_option", Switched: h("switched"), Why: h("why"), Governable: true,
	})
	checkShown(t, "check's report", out.String(), false, "name", "title", "version", "session", "cwd", "mode", "mname",
		"mode2", "mname2", "option", "target", "switched", "why")
}

// permhost replay's tables: a recording's tool calls, options and answers.
func TestReplayEscapesEveryField(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "permhost.toml")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	rec := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":` + q(h("title")) + `,"kind":` + q(h("kind")) + `,"status":"pending"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":` + q(h("oid")) + `,"name":"Allow","kind":"allow_once"}]}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":` + q(h("oid")) + `}}}`,
	}, "\n") + "\n"
	file := filepath.Join(dir, "rec.jsonl")
	if err := os.WriteFile(file, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runReplay(context.Background(), []string{"--config", cfg, "--cache-dir", "off", file}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// A title is clipped to 40 characters: its name and the start of
	// hostile are enough to show it went through safetext.
	checkShown(t, "replay's table", stdout.String(), true, "kind", "oid")
	for _, field := range []string{"title"} {
		if w := safetext.Terminal(field + "\x1b]2;"); !strings.Contains(stdout.String(), w) {
			t.Errorf("replay's table lacks %s shown escaped (%q):\n%s", field, w, stdout.String())
		}
	}
	checkShown(t, "replay's stderr", stderr.String(), true)
}

func hostileLeaderPrompt() leader.Prompt {
	req := abi.Request{
		Session:  abi.Session{ID: h("rsession"), Cwd: h("rcwd")},
		ToolCall: abi.ToolCall{ID: h("tcid"), Title: h("title"), Kind: h("kind")},
		Shell:    &abi.Shell{Source: h("command")},
		Paths:    []abi.Path{{Path: h("/path"), Access: h("access")}},
	}
	opts := []abi.Option{
		{OptionID: h("always"), Name: h("Always"), Kind: h("akind")},
		{OptionID: h("yes"), Name: h("Yes"), Kind: h("ykind")},
	}
	req.Options = opts
	return leader.Prompt{
		Seq:          1,
		Worker:       leader.Worker{PID: 42, Name: h("name"), Agent: h("agent"), Session: h("session"), Cwd: h("cwd")},
		Request:      req,
		Options:      opts,
		Explanations: []leader.Explanation{{Plugin: h("plugin"), Summary: h("summary"), Risk: h("risk"), RiskLevel: h("level"), Reason: h("preason")}},
		Reason:       h("why"),
	}
}

// leaderOnPTY shows p as permhost leader does, on a pseudo-terminal, picks
// the first option and returns what the terminal showed and the answer.
func leaderOnPTY(t *testing.T, p leader.Prompt) (string, string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	chunks := make(chan []byte, 64)
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 4096)
			n, err := ptmx.Read(b)
			if n > 0 {
				chunks <- b[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	var scr bytes.Buffer
	waitUntil := func(what string, shown func(string) bool) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for !shown(scr.String()) {
			select {
			case b, ok := <-chunks:
				if !ok {
					t.Fatalf("the terminal closed before showing %s:\n%q", what, scr.String())
				}
				scr.Write(b)
			case <-timeout:
				t.Fatalf("the terminal never showed %s:\n%q", what, scr.String())
			}
		}
	}
	term, err := prompt.Open(tty, tty, prompt.Options{Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	tp := &terminalPerson{term: term, out: tty}
	type result struct {
		id  string
		err error
	}
	done := make(chan result, 1)
	go func() {
		id, err := tp.Ask(context.Background(), p)
		done <- result{id, err}
	}()
	waitUntil("the question", func(s string) bool { return strings.HasSuffix(s, "choice: ") })
	ptmx.Write([]byte("1"))
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	// Ask wrote the answer's line last, before it returned.
	waitUntil("the answer", func(s string) bool {
		i := strings.LastIndex(s, "→ ")
		return i >= 0 && strings.HasSuffix(s[i:], "\n")
	})
	return scr.String(), r.id
}

// JSON for a person (run --json, eval, plugins --json, replay --json,
// check --json, grants list --json): the same values, none of hostile raw.
func TestJSONOutputEscapesEveryField(t *testing.T) {
	ev := acp.Event{Kind: acp.EventPermission, Permission: &acp.PermissionEvent{ToolCallID: h("id"), Title: h("title"), Kind: h("kind"),
		Outcome: "selected", OptionID: h("oid"), OptionName: h("oname"), OptionKind: h("okind"), DecidedBy: h("plugin"), Reason: h("reason")}}
	var stdout, stderr bytes.Buffer
	p := newRunPrinter(&stdout, &stderr, true)
	p.event(ev)
	p.close()
	var out bytes.Buffer
	if err := writeJSON(&out, ev); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"run --json": stdout.String(), "writeJSON": out.String()} {
		checkShown(t, name, got, true)
		var back acp.Event
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, got)
		}
		if want := strings.ToValidUTF8(h("reason"), "\ufffd"); back.Permission == nil || back.Permission.Reason != want {
			t.Errorf("%s: the reason reads %+v, want %q", name, back.Permission, want)
		}
	}
}
