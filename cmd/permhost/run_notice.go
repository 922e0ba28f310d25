package main

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/policy"
)

// This file is what permhost run shows of the governor's actions, which
// the client never sees as messages: a mode action ([session] modes), a
// file request the policy refused before the client saw it ([session]
// fs), a tool call the agent ran unasked. They come from the decision log
// (policy.Options.Observe). The client's events and these notices wait in
// one queue, in the order they were handed over: the governor acts on an
// agent's message before the proxy forwards it, and the client's event for
// it comes later, so the transcript keeps the order of what the agent did;
// and a slow stdout never holds up the proxy's reading of the agent. (The
// client's own answer to a request the governor made up, and the
// governor's action on that answer, may be shown either way round: the
// client hands its events over from a goroutine of its own.)

// EventUnasked is the --json event of a tool call the agent ran with no
// permission request.
const EventUnasked acp.EventKind = "unasked"

// governedEvent is a --json event of the governor's: "mode" (Action set;
// Mode is the session's mode after it, "" when it did not change), "fs"
// (File: a request refused by the policy) or "unasked" (ToolCall).
type governedEvent struct {
	Kind       acp.EventKind   `json:"event"`
	Time       time.Time       `json:"time"`
	SessionID  string          `json:"sessionId,omitempty"`
	Mode       string          `json:"mode,omitempty"`
	Action     *policy.LogMode `json:"action,omitempty"`
	File       *acp.FileEvent  `json:"fs,omitempty"`
	ToolCall   *unaskedCall    `json:"toolCall,omitempty"`
	Outcome    string          `json:"outcome"`
	DecidedBy  string          `json:"decidedBy"`
	Reason     string          `json:"reason,omitempty"`
	DecisionID string          `json:"decisionId"`
}

// unaskedCall is the tool call of an "unasked" event.
type unaskedCall struct {
	ID     string `json:"toolCallId"`
	Title  string `json:"title,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Status string `json:"status,omitempty"`
}

// shown is one queued item: a client event or a notice.
type shown struct {
	ev    *acp.Event
	entry *policy.LogEntry
}

// noticeQueue holds the items handed over and not yet shown.
type noticeQueue struct {
	mu    sync.Mutex
	q     []shown
	show  sync.Mutex // held while showing, so that flush keeps the order
	wake  chan struct{}
	quit  chan struct{}
	close sync.Once
}

// isNotice reports whether an entry is shown as a notice.
func isNotice(e policy.LogEntry) bool {
	switch {
	case e.Mode != nil, e.Unasked:
		return true
	case e.Outcome == "refused":
		return e.Request == acp.MethodReadTextFile || e.Request == acp.MethodWriteTextFile || e.Request == acp.MethodTerminalCreate
	}
	return false
}

// observe is policy.Options.Observe.
func (p *runPrinter) observe(e policy.LogEntry) {
	if isNotice(e) {
		p.push(shown{entry: &e})
	}
}

func (p *runPrinter) push(item shown) {
	n := &p.notices
	n.mu.Lock()
	n.q = append(n.q, item)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (p *runPrinter) noticeLoop() {
	n := &p.notices
	for {
		select {
		case <-n.wake:
			p.flush()
		case <-n.quit:
			return
		}
	}
}

// flush shows everything queued.
func (p *runPrinter) flush() {
	n := &p.notices
	n.show.Lock()
	defer n.show.Unlock()
	for {
		n.mu.Lock()
		batch := n.q
		n.q = nil
		n.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, item := range batch {
			if item.ev != nil {
				p.show(*item.ev)
			} else {
				p.notice(*item.entry)
			}
		}
	}
}

// close shows what is queued and stops the printer's goroutine; what is
// handed over later is not shown. It is idempotent.
func (p *runPrinter) close() {
	p.notices.close.Do(func() { close(p.notices.quit) })
	p.flush()
}

// notice shows one entry.
func (p *runPrinter) notice(e policy.LogEntry) {
	ev := governedEvent{Time: e.Time, SessionID: e.Session, Outcome: e.Outcome, DecidedBy: e.DecidedBy, Reason: e.Reason, DecisionID: e.DecisionID}
	var line string
	switch {
	case e.Unasked:
		ev.Kind = EventUnasked
		ev.ToolCall = &unaskedCall{ID: e.ToolCall.ID, Title: e.ToolCall.Title, Kind: e.ToolCall.Kind, Status: e.ToolCall.Status}
		line = fmt.Sprintf("! tool %s%s ran unasked: %s", title(e.ToolCall.Title, e.ToolCall.ID), kind(e.ToolCall.Kind), oneLine(e.Reason))
	case e.Mode != nil:
		ev.Kind, ev.Action = acp.EventMode, e.Mode
		ev.Mode, line = modeNotice(e)
	default:
		ev.Kind = acp.EventFile
		path := fsPath(e)
		ev.File = &acp.FileEvent{Method: e.Request, Path: path, Error: refusedBy(e)}
		verb := map[string]string{acp.MethodReadTextFile: "fs read", acp.MethodWriteTextFile: "fs write", acp.MethodTerminalCreate: "terminal"}[e.Request]
		line = fmt.Sprintf("  %s %s %s", verb, oneLine(path), oneLine(refusedBy(e)))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Unasked {
		p.unasked++
	}
	if p.json != nil {
		_ = p.json.Encode(ev)
		return
	}
	if line != "" {
		p.line(line)
	}
}

// modeNotice is a mode action's mode after it and its transcript line.
func modeNotice(e policy.LogEntry) (string, string) {
	m := e.Mode
	by := ""
	if m.By != "" {
		by = " (" + safetext.Terminal(m.By) + ")"
	}
	why := oneLine(e.Reason)
	if m.Error != "" {
		why += " (" + oneLine(m.Error) + ")"
	}
	from, to := safetext.Terminal(m.From), safetext.Terminal(m.To)
	options := make([]string, len(m.Options))
	for i, o := range m.Options {
		options[i] = safetext.Terminal(o)
	}
	switch {
	case m.Action == policy.ModeRemoveOptions:
		return "", fmt.Sprintf("  options removed: %s (they switch to a mode that decides by itself)", strings.Join(options, ", "))
	case e.Outcome == "switched" || e.Outcome == "reversed":
		return m.To, fmt.Sprintf("• mode %s → %s by permhost%s: %s", from, to, by, why)
	case m.Action == policy.ModeUngovernable:
		// The run fails, saying why in its last line.
		return m.From, ""
	case m.Action == policy.ModeReverse:
		return m.From, fmt.Sprintf("• mode %s: %s", from, why)
	}
	return m.From, fmt.Sprintf("• mode %s → %s refused: %s", from, to, why)
}

// fsPath is the path (or a terminal's command) of a file request's entry:
// the title permhost gave the request it made up for the plugins ("Read
// PATH", "Write PATH", the command).
func fsPath(e policy.LogEntry) string {
	t := e.ToolCall.Title
	switch e.Request {
	case acp.MethodReadTextFile:
		return strings.TrimPrefix(t, "Read ")
	case acp.MethodWriteTextFile:
		return strings.TrimPrefix(t, "Write ")
	}
	return t
}

// refusedBy says who refused a file request, and why.
func refusedBy(e policy.LogEntry) string {
	var s string
	switch e.DecidedBy {
	case policy.ByPerson:
		// The governor asked run's client, whose headless policy answered
		// the permission request it was sent (its own line).
		s = "refused by the decision on its permission request"
	default:
		s = "refused by " + who(e.DecidedBy)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}
