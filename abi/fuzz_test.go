package abi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// FuzzDecision feeds plugin output — untrusted — through the host's checks
// and holds the security invariants: a decision that validates never names
// an option that was not offered, an allow never picks a reject option or a
// wider one than its scope, and a reject never picks an allow.
func FuzzDecision(f *testing.F) {
	f.Add(`{"outcome":"allow"}`, "allow_always,allow_once,reject_once")
	f.Add(`{"outcome":"allow","scope":"always"}`, "allow_once,reject_once")
	f.Add(`{"outcome":"select","optionId":"o1"}`, "allow_always,allow_once,reject_once")
	f.Add(`{"outcome":"reject","scope":"always"}`, "allow_once,reject_once,reject_always")
	f.Add(`{"outcome":"select","optionId":""}`, "")
	f.Add(`{"outcome":"abstain","explanation":{"riskLevel":"high"}}`, "allow_once")
	f.Fuzz(func(t *testing.T, output, kinds string) {
		var options []Option
		for i, k := range strings.Split(kinds, ",") {
			options = append(options, Option{OptionID: "o" + string(rune('0'+i%10)), Kind: k})
		}
		var d Decision
		if json.Unmarshal([]byte(output), &d) != nil || d.Validate(options) != nil {
			return
		}
		o, ok := d.Option(options)
		switch d.Outcome {
		case OutcomeAllow:
			want := OptionAllowOnce
			if d.Scope == ScopeAlways {
				want = OptionAllowAlways
			}
			if !ok || o.Kind != want {
				t.Fatalf("%s picks %+v (%v), want a %s option", output, o, ok, want)
			}
		case OutcomeSelect:
			if !ok || o.OptionID != d.OptionID {
				t.Fatalf("%s picks %+v (%v)", output, o, ok)
			}
		case OutcomeReject:
			if ok && o.Kind != OptionRejectOnce && o.Kind != OptionRejectAlways {
				t.Fatalf("%s picks %+v, not a reject", output, o)
			}
			if ok && d.Scope != ScopeAlways && o.Kind != OptionRejectOnce {
				t.Fatalf("a one-time reject %s picks %+v", output, o)
			}
		default:
			if ok {
				t.Fatalf("%s picks %+v, want none", output, o)
			}
		}
		if ok && !slices.ContainsFunc(options, func(x Option) bool { return x.OptionID == o.OptionID && x.Kind == o.Kind }) {
			t.Fatalf("%s picks %+v, which was not offered", output, o)
		}
	})
}
