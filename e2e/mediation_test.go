package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestEditorAnswerReadOnce: through the binary, an editor's answer with a
// key ACP does not define (here at the top level) is no allow: the agent
// gets the builtin fallback's reject and does not run the call, and the
// decision log records what the agent got, not the allow a reader of the
// result member alone would see. (The log said "selected allow by person"
// while the agent got cancelled.)
func TestEditorAnswerReadOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, from, to string }{
		{"extra top-level key", `, "jsonrpc": "2.0"}`, `, "jsonrpc": "2.0", "extra": 1}`},
		{"case-variant optionId", `"optionId": `, `"OptionId": "reject", "optionId": `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startLike(t, "claude101", "")
			allow := r.client.answer
			r.client.answer = func(m *wireMsg) []byte {
				line := allow(m)
				if !bytes.Contains(line, []byte(tc.from)) {
					t.Errorf("the editor's answer %s has no %s", line, tc.from)
				}
				return bytes.Replace(line, []byte(tc.from), []byte(tc.to), 1)
			}
			r.prompt(allowOnce(t), "run: rm -rf build")
			ev := r.lastEvents(1)[0]
			if !ev.Asked || ev.Ran {
				t.Fatalf("the agent: %+v, want asked and not run", ev)
			}
			e := r.entries("of the request", func(m map[string]any) bool { return m["person"] != nil })[0]
			got := r.reportLines(`"outcome"`, `"result"`)
			if len(got) != 1 {
				t.Fatalf("the agent read %v, want one answer", got)
			}
			var a struct {
				Result struct {
					Outcome struct{ Outcome, OptionID string }
				}
			}
			if err := json.Unmarshal([]byte(got[0]), &a); err != nil {
				t.Fatal(err)
			}
			o := a.Result.Outcome
			if e["outcome"] != o.Outcome || (o.OptionID != "" && e["optionId"] != o.OptionID) || strings.HasPrefix(o.OptionID, "allow") {
				t.Errorf("the agent got %+v, the log records %v %v (decidedBy %v)", o, e["outcome"], e["optionId"], e["decidedBy"])
			}
			r.finish()
		})
	}
}
