package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/profile"
)

// logged reads the decision log's mode entries.
func loggedModes(t *testing.T, dlog *DecisionLog, buf *acptest.SyncBuffer) []LogEntry {
	t.Helper()
	dlog.Close()
	var out []LogEntry
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var e LogEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e.Mode != nil {
			out = append(out, e)
		}
	}
	return out
}

// TestModeLogIsWhatWasSent: every mode action's log entry is read back
// from what the peer got (policy/mediate.go): the mode a switch or a
// reversal logs is the one the editor is shown, and a refusal logs the
// error message the editor is refused with.
func TestModeLogIsWhatWasSent(t *testing.T) {
	refuses := func(string, json.RawMessage) (acp.Answer, error) {
		return acp.Answer{Error: &acp.RPCError{Code: -32602, Message: "no"}}, nil
	}
	for _, tc := range []struct {
		name    string
		action  string
		outcome string
		// run does the action and returns what the editor got: a mode
		// shown (or the one a refused switch was to), and a refusal's
		// message.
		run func(t *testing.T, g acp.Governor) (mode, refusal string)
	}{
		{"switch", ModeSwitch, "switched", func(t *testing.T, g acp.Governor) (string, string) {
			res, rerr := g.SessionStart(context.Background(), &acp.SessionStart{Method: acp.MethodSessionNew, Result: json.RawMessage(autoResult),
				Session: acp.SessionInfo{ID: "s-1", Agent: claude101}}, &fakeCaller{agent: accepts})
			if rerr != nil {
				t.Fatal(rerr.Message)
			}
			m, err := profile.ReadSessionModes(res)
			if err != nil {
				t.Fatal(err)
			}
			return m.Current, ""
		}},
		{"ungovernable", ModeUngovernable, "refused", func(t *testing.T, g acp.Governor) (string, string) {
			_, rerr := g.SessionStart(context.Background(), &acp.SessionStart{Method: acp.MethodSessionNew, Result: json.RawMessage(autoResult),
				Session: acp.SessionInfo{ID: "s-1", Agent: claude101}}, &fakeCaller{agent: refuses})
			if rerr == nil {
				t.Fatal("not refused")
			}
			return "default", rerr.Message // the switch refused
		}},
		{"refuse", ModeRefuse, "refused", func(t *testing.T, g acp.Governor) (string, string) {
			rerr := g.ClientRequest(&acp.ClientRequest{Method: acp.MethodSessionSetMode, Params: json.RawMessage(`{"sessionId":"s-1","modeId":"bypassPermissions"}`),
				Session: acp.SessionInfo{ID: "s-1", Agent: claude101}})
			if rerr == nil {
				t.Fatal("not refused")
			}
			return "bypassPermissions", rerr.Message
		}},
		{"reverse", ModeReverse, "reversed", func(t *testing.T, g acp.Governor) (string, string) {
			c := reverse(t, g, accepts)
			var u struct {
				Update struct {
					CurrentModeID string `json:"currentModeId"`
				} `json:"update"`
			}
			if err := json.Unmarshal([]byte(c.notes[0]), &u); err != nil {
				t.Fatal(err)
			}
			return u.Update.CurrentModeID, ""
		}},
		{"reverse refused", ModeReverse, "failed", func(t *testing.T, g acp.Governor) (string, string) {
			c := reverse(t, g, func(string, json.RawMessage) (acp.Answer, error) { return acp.Answer{}, errors.New("gone") })
			msg, ok := strings.CutPrefix(c.holds[len(c.holds)-1], "refuse s-1: ")
			if !ok {
				t.Fatalf("holds %q", c.holds)
			}
			return "default", msg // the switch back refused
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, dlog, buf := govEngine(t, governing())
			mode, refusal := tc.run(t, e.Governor())
			entries := loggedModes(t, dlog, buf)
			if len(entries) != 1 {
				t.Fatalf("%d mode entries: %+v", len(entries), entries)
			}
			got := entries[0]
			if got.Mode.Action != tc.action || got.Outcome != tc.outcome || got.Mode.To != mode || got.Mode.Refusal != refusal {
				t.Errorf("logged %s %s to %q refusal %q; the editor got mode %q, refusal %q", got.Mode.Action, got.Outcome, got.Mode.To, got.Mode.Refusal, mode, refusal)
			}
		})
	}
}

// reverse has a qwen session in default switch itself to auto-edit,
// permhost's switch back answered by agent; it returns once the session
// is released.
func reverse(t *testing.T, g acp.Governor, agent func(string, json.RawMessage) (acp.Answer, error)) *fakeCaller {
	t.Helper()
	c := &fakeCaller{agent: agent}
	qs := acp.SessionInfo{ID: "s-1", Agent: qwenPeer}
	if _, rerr := g.SessionStart(context.Background(), &acp.SessionStart{Method: acp.MethodSessionNew, Result: json.RawMessage(qwenDefault), Session: qs}, c); rerr != nil {
		t.Fatal(rerr)
	}
	c.released = make(chan struct{}, 1)
	g.Update(&acp.Update{SessionID: "s-1", Session: qs, Kind: "current_mode_update", ModeID: "auto-edit"}, c)
	select {
	case <-c.released:
	case <-time.After(time.Minute): // a hang guard, not a margin
		t.Fatal("the session was never released")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c
}
