package e2e

import (
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/permhost/permhost/internal/safetext"
)

// hostileRaw are the pieces of the runagent's "hostile" mode none of which
// may reach the person's terminal raw.
var hostileRaw = []string{"\x1b", "\x07", "\u202e", "\u200b", "\u2028"}

// The real binary on a real pseudo-terminal (stdin, stdout and stderr):
// an agent that puts terminal escapes, a bidi override, a zero-width space,
// a line separator and a carriage return in its text, its tool call's
// title, kind and command and its options' names and kinds gets none of
// them onto the screen raw; each is shown escaped.
func TestRunTerminalShowsNoEscapes(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "")
	c := e.cmd([]string{"--on-undecided", "prompt", "--prompt-grace", "0", "--permission-timeout", "20s"},
		runAgent(t), "-mode", "hostile", "-report", e.report)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	c.Stdin, c.Stdout, c.Stderr = tty, tty, tty
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	r := &terminalRun{c: c, ptmx: ptmx}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			r.mu.Lock()
			r.screen.Write(b[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if !r.showsSoon("choice: ") {
		t.Fatalf("no prompt on the terminal:\n%q", r)
	}
	r.ptmx.Write([]byte("2")) // the second option: allow
	if code := waitExit(t, c); code != 0 {
		t.Fatalf("exit %d\n%q", code, r)
	}
	if got := permissionAnswer(t, e.agentGot()); got != "allow" {
		t.Fatalf("the agent got %q, want allow\n%q", got, r)
	}
	// The run's last line: everything before it is on the screen.
	if !r.showsSoon("permhost run: turn ended") {
		t.Fatalf("the run's end is not on the terminal:\n%q", r)
	}
	screen := r.String()
	for _, raw := range hostileRaw {
		if i := strings.Index(screen, raw); i >= 0 {
			t.Errorf("the terminal shows %q raw at %d:\n%q", raw, i, screen)
		}
	}
	hostile := "\x1b]2;pwned\x07\x1b[2J\u202e\u200b\u2028\r"
	// The text's carriage return is its line end's ("\r\n"), kept.
	if w := safetext.Terminal("text" + strings.TrimSuffix(hostile, "\r")); !strings.Contains(screen, w) {
		t.Errorf("the terminal does not show the agent's text escaped (%q):\n%q", w, screen)
	}
	for _, field := range []string{"title", "kind", "command", "name1", "name2", "name3", "kind1", "kind2", "kind3"} {
		if w := safetext.Terminal(field + hostile); !strings.Contains(screen, w) {
			t.Errorf("the terminal does not show the agent's %s escaped (%q):\n%q", field, w, screen)
		}
	}
}
