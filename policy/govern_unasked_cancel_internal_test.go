package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
)

// TestUnaskedCancel: with [session] unasked = "cancel", a call that acts
// and completes with no permission request ends the turn (session/cancel
// through the Caller) and the editor is told why in the session's stream,
// naming the setting that makes the agent ask when its profile knows one;
// an asked call, a read, and the same unasked call under "warn" do not.
func TestUnaskedCancel(t *testing.T) {
	kimiPeer := acp.Peer{Name: "Kimi Code CLI", Version: "0.38.0"}
	for _, tt := range []struct {
		name    string
		unasked string
		peer    acp.Peer
		version int
		cancels int
		want    []string
	}{
		{"cancel, v1, kimi", config.UnaskedCancel, kimiPeer, 1, 1, []string{
			`"sessionUpdate":"agent_message_chunk"`, `permhost ended the turn: the agent ran \"rm -rf build\" without asking`,
			`[session] unasked = \"cancel\"`, `default_permission_mode = \"manual\"`, `"_meta":{"permhost":{"unasked":"rm"}}`}},
		{"cancel, v2, claude", config.UnaskedCancel, claude101, 2, 1, []string{
			`"messageId":"permhost-unasked-rm"`, `permhost ended the turn`}},
		{"warn", config.UnaskedWarn, kimiPeer, 1, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := governing()
			s.Unasked = tt.unasked
			e, dlog, buf := govEngine(t, s)
			g := e.Governor()
			c := &fakeCaller{}
			si := acp.SessionInfo{ID: "s-1", Agent: tt.peer, Mode: "default", ProtocolVersion: tt.version}
			up := func(id, kind, status string, asked bool) {
				g.Update(&acp.Update{SessionID: "s-1", Session: si, Kind: "tool_call_update", ToolCallID: id, ToolKind: kind, Status: status, Asked: asked,
					ToolCall: json.RawMessage(`{"toolCallId":"` + id + `","title":"rm -rf build","rawInput":{"command":"rm -rf build"}}`)}, c)
			}
			up("asked", abi.KindExecute, "completed", true)
			up("read", abi.KindRead, "completed", false)
			if len(c.cancels) != 0 || len(c.notes) != 0 {
				t.Fatalf("before the unasked call: cancels %v, notes %v", c.cancels, c.notes)
			}
			up("rm", abi.KindExecute, "in_progress", false)
			up("rm", abi.KindExecute, "completed", false)
			dlog.Close()
			if len(c.cancels) != tt.cancels || (tt.cancels > 0 && c.cancels[0] != "s-1") {
				t.Fatalf("cancels %v, want %d for s-1", c.cancels, tt.cancels)
			}
			if tt.cancels == 0 {
				if len(c.notes) != 0 || strings.Contains(buf.String(), "ended the turn") {
					t.Errorf("warn told the editor %v; log %s", c.notes, buf.String())
				}
				return
			}
			if len(c.notes) != 1 {
				t.Fatalf("notes %v", c.notes)
			}
			for _, w := range tt.want {
				if !strings.Contains(c.notes[0], w) {
					t.Errorf("the editor was told %s\nwant %s", c.notes[0], w)
				}
			}
			if !strings.Contains(buf.String(), `permhost ended the turn (session/cancel)`) {
				t.Errorf("the log does not say the turn ended: %s", buf.String())
			}
		})
	}
}
