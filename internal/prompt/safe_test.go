//go:build linux

package prompt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/safetext"
)

// hostile is what an attacker appends to every field: a terminal title
// (OSC), a screen clear (CSI), a bell, a bidi override, a zero-width
// space, a line separator, a carriage return (to write over the line) and
// a byte of invalid UTF-8.
const hostile = "\x1b]2;pwned\x07\x1b[2J\u202e\u200b\u2028\r\xff"

// rawHostile are the pieces of hostile none of which may reach a screen.
var rawHostile = []string{"\x1b", "\x07", "\u202e", "\u200b", "\u2028", "\xff"}

// hostileQuestion fills every string field with hostile, each after a
// name of its own, so that the screen shows which field is which.
func hostileQuestion() Question {
	h := func(field string) string { return field + hostile }
	return Question{
		Title:   h("title"),
		Kind:    h("kind"),
		Command: h("command") + "\n" + h("command2"),
		Paths:   []Path{{Path: h("/path"), Access: h("access"), Outside: true}},
		Explanations: []Explanation{
			{Plugin: h("plugin"), Summary: h("summary"), Risk: h("risk"), RiskLevel: h("level")},
			{Plugin: h("plugin2"), Reason: h("preason")},
		},
		Reason:   h("reason"),
		Deadline: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC),
		Expiry:   h("expiry"),
		Options: []Option{
			{ID: h("id1"), Name: h("name1"), Kind: h("okind1")},
			{ID: h("id2"), Kind: h("okind2")}, // no name: the id is shown
		},
	}
}

// checkScreen fails t when screen shows a piece of hostile raw, or
// anything else a terminal would act on, or when a field in want is not
// shown escaped.
func checkScreen(t *testing.T, screen string, want ...string) {
	t.Helper()
	for _, raw := range rawHostile {
		if i := strings.Index(screen, raw); i >= 0 {
			t.Errorf("the screen shows %q raw at %d: %q", raw, i, screen)
		}
	}
	// The terminal's own line ends ("\r\r\n" once the line discipline
	// has turned the prompt's "\r\n" into it) are the prompt's.
	lines := strings.NewReplacer("\r\r\n", "\n", "\r\n", "\n").Replace(screen)
	if got := safetext.TerminalLines(lines); got != lines {
		t.Errorf("the screen holds what safetext escapes: %q", screen)
	}
	for _, field := range want {
		if w := safetext.Terminal(field + hostile); !strings.Contains(screen, w) {
			t.Errorf("the screen lacks %s shown escaped (%q): %q", field, w, screen)
		}
	}
}

// fields are the fields of hostileQuestion the screen shows as they are
// (the risk level is shown upper case, checked on its own).
var fields = []string{"title", "kind", "command", "command2", "/path", "access", "plugin", "summary", "risk", "plugin2", "preason", "reason", "expiry", "name1", "okind1", "id2", "okind2"}

func TestRenderEscapesEveryField(t *testing.T) {
	got := render(hostileQuestion(), -1)
	checkScreen(t, got, fields...)
	if !strings.Contains(got, `[LEVEL\x1b]2;PWNED\a\x1b[2J\u202e\u200b\u2028\r`) {
		t.Errorf("the risk level is not shown escaped: %q", got)
	}
}

// TestAskOnATerminalEscapesEveryField reads what a real pseudo-terminal
// shows, through its line discipline, up to the answer's echo.
func TestAskOnATerminalEscapesEveryField(t *testing.T) {
	term, ptmx, scr := newPTY(t, Options{Grace: -1})
	ch := ask(term, context.Background(), hostileQuestion())
	scr.waitFor(t, "choice: ", 1)
	ptmx.Write([]byte("1"))
	if a := waitAnswer(t, ch); a.err != nil || a.id != "id1"+hostile {
		t.Fatalf("Ask = %+v", a)
	}
	scr.waitFor(t, "→ name1", 1)
	checkScreen(t, scr.String(), append(fields, "→ name1")...)
}
