package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/prompt"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/policy"
)

// runPrinter shows a session's events: the transcript for a person (agent
// text on stdout, the rest on stderr) or JSON lines on stdout.
type runPrinter struct {
	mu     sync.Mutex
	stdout io.Writer
	stderr io.Writer
	json   *json.Encoder
	// sameTerminal is true when stdout and stderr are both a terminal:
	// a status line then starts on a fresh line after agent text.
	sameTerminal bool
	midText      bool // the last agent text did not end a line
	thinking     bool // a thought is being printed on stderr
	status       map[string]string
	tools        int
	decisions    int
	unasked      int
	notices      noticeQueue // run_notice.go
}

func newRunPrinter(stdout, stderr io.Writer, asJSON bool) *runPrinter {
	p := &runPrinter{stdout: stdout, stderr: stderr, status: map[string]string{}}
	p.notices.wake, p.notices.quit = make(chan struct{}, 1), make(chan struct{})
	if asJSON {
		p.json = json.NewEncoder(jsonOut{stdout})
		p.json.SetEscapeHTML(false)
	}
	o, ok1 := stdout.(*os.File)
	e, ok2 := stderr.(*os.File)
	p.sameTerminal = ok1 && ok2 && prompt.IsTerminal(o) && prompt.IsTerminal(e)
	go p.noticeLoop()
	return p
}

// event is the ClientConn's event callback: the event waits its turn
// behind the governor's notices observed before it (run_notice.go).
func (p *runPrinter) event(ev acp.Event) { p.push(shown{ev: &ev}) }

// show shows one of the client's events.
func (p *runPrinter) show(ev acp.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Kind {
	case acp.EventToolCall:
		p.tools++
	case acp.EventPermission:
		p.decisions++
	}
	if p.json != nil {
		_ = p.json.Encode(ev)
		return
	}
	switch ev.Kind {
	case acp.EventText:
		p.endThought()
		if ev.Text != "" {
			io.WriteString(p.stdout, safetext.TerminalLines(ev.Text))
			p.midText = !strings.HasSuffix(ev.Text, "\n")
		}
	case acp.EventThought:
		if !p.thinking {
			p.line("")
			io.WriteString(p.stderr, "  (thinking) ")
			p.thinking = true
		}
		io.WriteString(p.stderr, oneLine(ev.Text))
	case acp.EventToolCall:
		tc := ev.ToolCall
		p.status[tc.ID] = tc.Status
		p.line(fmt.Sprintf("• tool %s%s%s", title(tc.Title, tc.ID), kind(tc.Kind), state(tc.Status)))
	case acp.EventToolCallUpdate:
		tc := ev.ToolCall
		if tc.Status != "" && tc.Status != p.status[tc.ID] {
			p.status[tc.ID] = tc.Status
			p.line(fmt.Sprintf("  %s → %s", title(tc.Title, tc.ID), safetext.Terminal(tc.Status)))
		}
		if tc.Status == "completed" || tc.Status == "failed" {
			delete(p.status, tc.ID)
		}
	case acp.EventPermission:
		p.line(permissionLine(ev.Permission))
	case acp.EventFile:
		f := ev.File
		verb := "read"
		if f.Method == acp.MethodWriteTextFile {
			verb = "write"
		}
		if f.Error != "" {
			p.line(fmt.Sprintf("  fs %s %s refused: %s", verb, oneLine(f.Path), oneLine(f.Error)))
		} else {
			p.line(fmt.Sprintf("  fs %s %s (%s)", verb, oneLine(f.Path), count(f.Bytes, "byte")))
		}
	case acp.EventMode:
		p.line("• mode " + safetext.Terminal(ev.Mode))
	}
}

// permissionLine says what was asked, what was answered, who decided, why
// and in how long.
func permissionLine(pe *acp.PermissionEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "? permission %s%s → ", title(pe.Title, pe.ToolCallID), kind(pe.Kind))
	if pe.Outcome == "selected" {
		verb := "allowed"
		if strings.HasPrefix(pe.OptionKind, "reject") {
			verb = "rejected"
		}
		fmt.Fprintf(&b, "%s: \"%s\" (%s)", verb, safetext.Terminal(pe.OptionName), safetext.Terminal(pe.OptionKind))
	} else {
		b.WriteString("cancelled")
	}
	fmt.Fprintf(&b, " by %s", who(pe.DecidedBy))
	if pe.Reason != "" {
		fmt.Fprintf(&b, ": %s", oneLine(pe.Reason))
	}
	fmt.Fprintf(&b, " [%s]", pe.Duration.Round(100*time.Microsecond))
	if !pe.InTurn {
		b.WriteString(" (after the turn)")
	}
	return b.String()
}

func who(decidedBy string) string {
	switch decidedBy {
	case "builtin":
		return "the builtin fallback"
	case "person":
		return "you"
	case "cancel", "":
		return "cancellation"
	}
	if id, ok := strings.CutPrefix(decidedBy, policy.ByGrant); ok {
		return "grant " + safetext.Terminal(id) // a stored grant (permhost grants), not a plugin
	}
	return "plugin " + safetext.Terminal(decidedBy)
}

func title(t, id string) string {
	if t == "" {
		return safetext.Terminal(id)
	}
	return oneLine(t)
}

func kind(k string) string {
	if k == "" {
		return ""
	}
	return " [" + safetext.Terminal(k) + "]"
}

func state(s string) string {
	if s == "" {
		return ""
	}
	return " (" + safetext.Terminal(s) + ")"
}

// oneLine shows an agent's or a plugin's text on a status line: its line
// breaks and tabs as spaces, the rest as safetext renders it.
func oneLine(s string) string {
	return safetext.Terminal(spaces.Replace(s))
}

var spaces = strings.NewReplacer("\r\n", " ", "\n", " ", "\t", " ")

// line prints a status line on stderr, on a line of its own. p.mu is held.
func (p *runPrinter) line(s string) {
	p.endThought()
	if p.midText && p.sameTerminal {
		io.WriteString(p.stderr, "\n")
		p.midText = false
	}
	if s != "" {
		// The fields are rendered already; this catches the rest (an
		// error's text may quote the agent). Rendering is idempotent.
		fmt.Fprintln(p.stderr, safetext.TerminalLines(s))
	}
}

func (p *runPrinter) endThought() {
	if p.thinking {
		io.WriteString(p.stderr, "\n")
		p.thinking = false
	}
}

// note prints a message of permhost's own on stderr.
func (p *runPrinter) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line("permhost run: " + msg)
}

// fail reports why the run failed, after what is queued.
func (p *runPrinter) fail(msg string) {
	p.flush()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json != nil {
		_ = p.json.Encode(map[string]string{"event": "error", "message": msg})
	}
	p.line("permhost run: " + msg)
}

// stopped reports the stop reason, after what is queued.
func (p *runPrinter) stopped(reason string) {
	p.flush()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json != nil {
		return // the stop event is in the stream
	}
	if p.midText {
		// End the transcript's last line, on stdout itself: the text is done.
		io.WriteString(p.stdout, "\n")
		p.midText = false
	}
	unasked := ""
	if p.unasked > 0 {
		unasked = ", " + count(p.unasked, "tool call") + " run unasked"
	}
	p.line(fmt.Sprintf("permhost run: turn ended: %s (%s, %s%s)", safetext.Terminal(reason), count(p.tools, "tool call"), count(p.decisions, "permission decision"), unasked))
}
