package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
)

var answerDecisions = []abi.Decision{
	{Outcome: abi.OutcomeAbstain},
	{Outcome: abi.OutcomeAllow, Scope: abi.ScopeAlways, Reason: "read-only: ls <dir> & co"},
	{Outcome: abi.OutcomeSelect, OptionID: "allow-once", Reason: "ünïcode ✓"},
	{Outcome: abi.OutcomeAsk, Explanation: &abi.Explanation{}},
	{Outcome: abi.OutcomeAsk, Explanation: &abi.Explanation{Risk: "writes /etc"}},
	{Outcome: abi.OutcomeAsk, Explanation: &abi.Explanation{Summary: "s", Risk: "r", RiskLevel: abi.RiskHigh}},
	{Outcome: abi.OutcomeAsk, Explanation: &abi.Explanation{Summary: "s", RiskLevel: abi.RiskLow}},
}

// TestAppendAnswer: the child's hand-written answer is the bytes
// encoding/json writes, and the parent's fast reader reads it back.
func TestAppendAnswer(t *testing.T) {
	for _, d := range answerDecisions {
		want, err := marshal(answerMsg{Decision: &d})
		require.NoError(t, err)
		got, ok := appendAnswer(nil, &d)
		require.True(t, ok, "%+v", d)
		assert.Equal(t, string(want), string(got))
		var back abi.Decision
		require.True(t, decodeAnswerFast(got, &back), "%s", got)
		assert.Equal(t, d, back)
	}
	// Strings that need escaping are left to encoding/json.
	for _, s := range []string{`a"b`, `a\b`, "a\nb", "a\u2028b", "a\xffb"} {
		_, ok := appendAnswer(nil, &abi.Decision{Outcome: abi.OutcomeReject, Reason: s})
		assert.False(t, ok, "%q", s)
	}
}

// TestDecodeAnswerFastRefuses: what is not the canonical form goes to the
// strict decoder, which refuses the dishonest ones (TestEvilChild; its
// select of an option not offered is canonical, and Validate refuses it).
func TestDecodeAnswerFastRefuses(t *testing.T) {
	for _, a := range append(mapValues(evilAnswers),
		`{"decision":{"outcome":"allow","scope":"once","scope":"always"},"failure":null}`,
		`{"decision":{"scope":"once","outcome":"allow"},"failure":null}`,
		`{"decision":{"outcome":"allow"},"failure":null,"x":1}`,
		`{"decision":{"outcome":"allow"},"failure":null} `,
		`{"decision":{"outcome":"all\u006fw"},"failure":null}`,
		"{\"decision\":{\"outcome\":\"allow\",\"reason\":\"\xff\"},\"failure\":null}",
		`{"decision":{"outcome":"allow","explanation":{"risk":"a","summary":"b"}},"failure":null}`,
		`{"decision":{"outcome":"allow","explanation":{,"risk":"a"}},"failure":null}`,
		`{"decision":{"outcome":"allow","explanation":null},"failure":null}`,
		`{"decision":{"outcome":"allow"},"failure":{"kind":"trap","message":"x"}}`,
		`{"decision":{"outcome":"allow},"failure":null}`,
	) {
		var d abi.Decision
		assert.False(t, decodeAnswerFast([]byte(a), &d), "%s", a)
	}
}

func mapValues(m map[string]string) []string {
	var v []string
	for k, s := range m {
		if k != "evil-unoffered" {
			v = append(v, s)
		}
	}
	return v
}

// FuzzDecodeAnswerFast: whatever the fast reader accepts, the strict
// decoder accepts too, with the same decision.
func FuzzDecodeAnswerFast(f *testing.F) {
	for _, d := range answerDecisions {
		b, _ := appendAnswer(nil, &d)
		f.Add(b)
	}
	for _, a := range evilAnswers {
		f.Add([]byte(a))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast abi.Decision
		if !decodeAnswerFast(b, &fast) {
			return
		}
		var a answerMsg
		if err := decodeStrict(b, &a, "decision", "failure"); err != nil {
			t.Fatalf("fast accepted %q, strict refused: %v", b, err)
		}
		if a.Failure != nil || a.Decision == nil {
			t.Fatalf("fast accepted %q, strict read %+v", b, a)
		}
		assert.Equal(t, *a.Decision, fast)
	})
}
