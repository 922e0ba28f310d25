package policy

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/jsontext"
	"github.com/permhost/permhost/internal/profile"
)

// FuzzWithCurrentMode: whatever an agent's session result, the one
// permhost forwards is strict JSON whose current mode (both ways) is the
// governed one, and nothing but those values changed.
func FuzzWithCurrentMode(f *testing.F) {
	f.Add([]byte(autoResult), "default")
	f.Add([]byte(`{"modes":{"currentModeId":"a","availableModes":[{"id":"a"},{"id":"b"}]}}`), "b")
	f.Add([]byte(`{"configOptions":[{"id":"mode","category":"mode","currentValue":"x","options":[{"value":"x"},{"value":"y"}]}]}`), "y\u2028\"")
	f.Fuzz(func(t *testing.T, result []byte, mode string) {
		if !utf8.ValidString(mode) {
			return // a mode permhost switches to is one the agent offered, read strictly
		}
		before, err := profile.ReadSessionModes(result)
		if err != nil {
			return
		}
		out, err := withCurrentMode(result, mode)
		if err != nil {
			return
		}
		if err := jsontext.Check(out); err != nil {
			t.Fatalf("not strict JSON: %v\n%s", err, out)
		}
		after, err := profile.ReadSessionModes(out)
		if err != nil {
			t.Fatal(err)
		}
		if before.Current != "" && after.Current != mode {
			t.Fatalf("current %q, want %q\n%s", after.Current, mode, out)
		}
		if len(after.Offered) != len(before.Offered) || after.ConfigOption != before.ConfigOption || after.SetMode != before.SetMode {
			t.Fatalf("the offered modes changed:\n%s\n%s", result, out)
		}
		again, err := withCurrentMode(out, before.Current)
		if err == nil && before.Current != "" && jsontext.Check(again) != nil {
			t.Fatal("a second rewrite is not strict JSON")
		}
	})
}

// FuzzReadApprovalAnswer: an editor's answer to an approval reaches the
// agent only as one of the shown choices, re-encoded as strict JSON.
func FuzzReadApprovalAnswer(f *testing.F) {
	f.Add([]byte(`{"action":"accept","content":{"persist":"once"}}`))
	f.Add([]byte(`{"action":"decline"}`))
	f.Add([]byte(`{"action":"accept","content":{"persist":"always"}}`))
	a := approval{persist: []choice{{"once", "o"}, {"always", "a"}}, others: []string{"note"}}
	shown := []abi.Option{{OptionID: "once"}, {OptionID: "decline"}}
	f.Fuzz(func(t *testing.T, result []byte) {
		action, option, out, ok := readApprovalAnswer(json.RawMessage(result), a, shown)
		if !ok {
			return
		}
		if err := jsontext.Check(out); err != nil {
			t.Fatalf("not strict JSON: %s", out)
		}
		switch action {
		case "accept":
			if option != "once" {
				t.Fatalf("accepted with %q, not shown", option)
			}
		case "decline", "cancel":
		default:
			t.Fatalf("action %q", action)
		}
	})
}
