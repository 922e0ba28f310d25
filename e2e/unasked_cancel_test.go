package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnaskedCancelEndsTheTurn (#23 item 5): Kimi Code reports its mode
// "default" while its own default_permission_mode runs every call unasked.
// With [session] unasked = "cancel" the first acting call that ran unasked
// in the governed session ends the turn: the agent gets session/cancel
// once the call's completion shows it ran, and the editor gets, just ahead
// of that completion, an agent_message_chunk saying why and naming the
// setting that makes Kimi ask. With the default (warn) neither happens.
func TestUnaskedCancelEndsTheTurn(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, session string
		cancel        bool
	}{
		{"cancel", `unasked = "cancel"`, true},
		{"warn by default", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := startLikeWith(t, likeOpts{agent: "kimi", plugins: protectSecrets, session: tt.session})
			asked := r.prompt(allowOnce(t), "run: rm -rf build")
			if ev := r.lastEvents(1)[0]; len(asked) != 0 || ev.Asked || !ev.Ran {
				t.Fatalf("asked %d; the agent: %+v", len(asked), ev)
			}
			done, _ := r.client.waitFor("the call's completion", func(m *wireMsg) bool {
				return m.Method == "session/update" && strings.Contains(string(m.Params), `"status":"completed"`)
			})
			isNote := func(m *wireMsg) bool {
				return m.Method == "session/update" && strings.Contains(string(m.Params), "permhost ended the turn")
			}
			if !tt.cancel {
				r.finish()
				if r.client.index(isNote) >= 0 || len(r.reportLines(`"method":"session/cancel"`)) != 0 {
					t.Errorf("warn ended the turn; the agent read %v", r.reportLines(`"method":"session/cancel"`))
				}
				return
			}
			i, note := r.client.waitFor("why the turn ended", isNote)
			var p struct {
				SessionID string `json:"sessionId"`
				Update    struct {
					SessionUpdate string `json:"sessionUpdate"`
					Content       struct{ Type, Text string }
					Meta          struct {
						Permhost struct {
							Unasked string `json:"unasked"`
						} `json:"permhost"`
					} `json:"_meta"`
				} `json:"update"`
			}
			if err := json.Unmarshal(note.Params, &p); err != nil {
				t.Fatal(err)
			}
			// The governor sees an update before it is forwarded: the note
			// comes just ahead of the completion that revealed the run.
			if i != done-1 || p.SessionID != r.session || p.Update.SessionUpdate != "agent_message_chunk" || p.Update.Content.Type != "text" ||
				!strings.Contains(p.Update.Content.Text, `the agent ran "rm -rf build" without asking`) ||
				!strings.Contains(p.Update.Content.Text, `default_permission_mode = "manual"`) || p.Update.Meta.Permhost.Unasked == "" {
				t.Errorf("the editor was told (at %d, the completion at %d) %s", i, done, note.Raw)
			}
			r.finish()
			cancels := r.reportLines(`"method":"session/cancel"`, r.session)
			if len(cancels) != 1 {
				t.Fatalf("the agent read %d session/cancel: %v", len(cancels), r.readReport())
			}
			un := r.entries("unasked", isUnasked)
			if len(un) != 1 || !strings.Contains(un[0]["reason"].(string), `[session] unasked = "cancel": permhost ended the turn`) {
				t.Errorf("the unasked entries: %v", un)
			}
		})
	}
}

// TestCheckAgentThatDecidesBySettings (#23 item 5): permhost check does not
// call Kimi Code "governable: yes": its mode reads default whatever its own
// settings decide; check names the setting that makes it ask and what
// [session] unasked does.
func TestCheckAgentThatDecidesBySettings(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "permhost.toml")
	if err := os.WriteFile(cfg, []byte("[session]\nmodes = \"govern\"\nunasked = \"cancel\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCheck(t, "--config", cfg, "--", likeAgent(t), "-agent", "kimi")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"agent: Kimi Code CLI 0.38.0",
		"kimi-code: Kimi Code CLI (kimi acp)",
		"governable: only as the agent's own settings allow — the current mode default asks; but 0.x: every session starts with the permission mode default_permission_mode names",
		`the agent asks before every call only with: default_permission_mode = "manual" in ~/.kimi-code/config.toml`,
		`a call it runs unasked in a governed session: [session] unasked = "cancel" (the first one ends the turn and the editor is told why)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "governable: yes") {
		t.Errorf("check says governable: yes:\n%s", out)
	}
	_, out, _ = runCheck(t, "--json", "--", likeAgent(t), "-agent", "kimi")
	var rep struct {
		Profile  string `json:"profile"`
		AsksWith string `json:"asksWith"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Profile != "kimi-code" ||
		!bytes.Contains([]byte(rep.AsksWith), []byte(`default_permission_mode = "manual"`)) {
		t.Errorf("--json: %v %s", err, out)
	}
}
