package answer_test

import (
	"fmt"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/answer"
)

var (
	known   = &abi.ChangeSet{Known: true, Source: "acp-meta", Items: []abi.Change{{Type: "setMode", Mode: "acceptEdits"}}}
	unknown = &abi.ChangeSet{Known: false, Invalid: "unknown change type"}

	claude = []abi.Option{
		{OptionID: "allow_always", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Kind: abi.OptionRejectOnce},
	}
	// The allow_once option whose changes failed validation comes first:
	// the agent's order must not make it the choice.
	mayChangeAnything = []abi.Option{
		{OptionID: "allow-and-more", Kind: abi.OptionAllowOnce, Durable: true, Changes: unknown},
		{OptionID: "allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Kind: abi.OptionRejectOnce},
	}
	onlyUnknownOnce = []abi.Option{
		{OptionID: "allow-and-more", Kind: abi.OptionAllowOnce, Durable: true, Changes: unknown},
		{OptionID: "reject-and-more", Kind: abi.OptionRejectOnce, Durable: true, Changes: unknown},
	}
	describedFirst = []abi.Option{
		{OptionID: "allow-with-rule", Kind: abi.OptionAllowOnce, Durable: true, Changes: known},
		{OptionID: "allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject-with-rule", Kind: abi.OptionRejectOnce, Durable: true, Changes: known},
		{OptionID: "reject", Kind: abi.OptionRejectOnce},
	}
	// ExitPlanMode: every option is durable (the request switches modes).
	exitPlan = []abi.Option{
		{OptionID: "acceptEdits", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "default", Kind: abi.OptionAllowOnce, Durable: true},
		{OptionID: "plan", Kind: abi.OptionRejectOnce, Durable: true},
	}
	alwaysKinds = []abi.Option{
		{OptionID: "always-unknown", Kind: abi.OptionAllowAlways, Durable: true, Changes: unknown},
		{OptionID: "always-described", Kind: abi.OptionAllowAlways, Durable: true, Changes: known},
		{OptionID: "always", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "never-unknown", Kind: abi.OptionRejectAlways, Durable: true, Changes: unknown},
		{OptionID: "reject", Kind: abi.OptionRejectOnce},
	}
)

var (
	allowOnce    = abi.Decision{Outcome: abi.OutcomeAllow}
	allowAlways  = abi.Decision{Outcome: abi.OutcomeAllow, Scope: abi.ScopeAlways}
	rejectOnce   = abi.Decision{Outcome: abi.OutcomeReject, Scope: abi.ScopeOnce}
	rejectAlways = abi.Decision{Outcome: abi.OutcomeReject, Scope: abi.ScopeAlways}
)

func TestChoose(t *testing.T) {
	tests := []struct {
		name    string
		options []abi.Option
		d       abi.Decision
		want    string // "" for none
	}{
		{"allow once: the plain allow_once", claude, allowOnce, "allow"},
		{"allow always: the allow_always", claude, allowAlways, "allow_always"},
		{"reject once", claude, rejectOnce, "reject"},
		{"reject always without reject_always: reject once", claude, rejectAlways, "reject"},
		{"allow once passes over an option that may change anything", mayChangeAnything, allowOnce, "allow"},
		{"allow once never picks an option that may change anything", onlyUnknownOnce, allowOnce, ""},
		{"reject once never picks an option that may change anything", onlyUnknownOnce, rejectOnce, ""},
		{"a select may name it", onlyUnknownOnce, abi.Decision{Outcome: abi.OutcomeSelect, OptionID: "allow-and-more"}, "allow-and-more"},
		{"plain before described changes", describedFirst, allowOnce, "allow"},
		{"plain reject before described changes", describedFirst, rejectOnce, "reject"},
		{"durable only when every one is: switch_mode allow", exitPlan, allowOnce, "default"},
		{"durable only when every one is: switch_mode reject", exitPlan, rejectOnce, "plan"},
		{"allow always skips unknown changes, agent's order after", alwaysKinds, allowAlways, "always-described"},
		{"reject always with only unknown reject_always: reject once", alwaysKinds, rejectAlways, "reject"},
		{"allow always with no allow_always", mayChangeAnything, allowAlways, ""},
		{"select of an id not offered", claude, abi.Decision{Outcome: abi.OutcomeSelect, OptionID: "yolo"}, ""},
		{"ask chooses none", claude, abi.Decision{Outcome: abi.OutcomeAsk}, ""},
		{"cancel chooses none", claude, abi.Decision{Outcome: abi.OutcomeCancel}, ""},
		{"abstain chooses none", claude, abi.Decision{Outcome: abi.OutcomeAbstain}, ""},
		{"nothing offered", nil, allowOnce, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, ok := answer.Choose(tt.options, tt.d)
			if got := idOf(o, ok); got != tt.want {
				t.Fatalf("Choose = %q, want %q", got, tt.want)
			}
			a, aok := tt.d.Option(tt.options)
			if idOf(a, aok) != tt.want {
				t.Fatalf("abi.Decision.Option = %q, want %q", idOf(a, aok), tt.want)
			}
		})
	}
}

func idOf(o abi.Option, ok bool) string {
	if !ok {
		return ""
	}
	return o.OptionID
}

// optionStates are every way an option can look to a chooser: each kind
// (and one the ABI does not know) with every combination of the Durable
// flag and of no, known or unknown changes, consistent or not.
func optionStates() []abi.Option {
	var out []abi.Option
	for _, kind := range []string{abi.OptionAllowOnce, abi.OptionAllowAlways, abi.OptionRejectOnce, abi.OptionRejectAlways, "ask_later"} {
		for _, durable := range []bool{false, true} {
			for _, cs := range []*abi.ChangeSet{nil, known, unknown} {
				out = append(out, abi.Option{Kind: kind, Durable: durable, Changes: cs})
			}
		}
	}
	return out
}

// TestChooseAgreesWithABI holds abi.Decision.Option (what plugins and the
// host's output check use) and answer.Choose (what the host answers with)
// to the same choice on every set of up to three options, and checks the
// promises on each: only an offered option of the asked kind, never a
// durable one while a plain one of that kind is offered, never one that
// may change anything unless selected by name.
func TestChooseAgreesWithABI(t *testing.T) {
	states := optionStates()
	decisions := []abi.Decision{
		allowOnce, allowAlways, rejectOnce, rejectAlways,
		{Outcome: abi.OutcomeReject}, // scope empty means once
		{Outcome: abi.OutcomeSelect, OptionID: "o0"}, {Outcome: abi.OutcomeSelect, OptionID: "o2"},
		{Outcome: abi.OutcomeSelect, OptionID: "none"},
		{Outcome: abi.OutcomeAsk}, {Outcome: abi.OutcomeCancel}, {Outcome: abi.OutcomeAbstain}, {Outcome: "deny"},
	}
	sets := [][]abi.Option{nil}
	var grow func(prefix []abi.Option, n int)
	grow = func(prefix []abi.Option, n int) {
		if n == 0 {
			return
		}
		for _, s := range states {
			s.OptionID = fmt.Sprintf("o%d", len(prefix))
			set := append(append([]abi.Option(nil), prefix...), s)
			sets = append(sets, set)
			grow(set, n-1)
		}
	}
	grow(nil, 3)
	checked := 0
	for _, set := range sets {
		for _, d := range decisions {
			got, ok := answer.Choose(set, d)
			want, wok := d.Option(set)
			if ok != wok || got.OptionID != want.OptionID {
				t.Fatalf("options %+v, decision %+v: answer chose %q (%v), abi %q (%v)", set, d, got.OptionID, ok, want.OptionID, wok)
			}
			checked++
			if !ok {
				continue
			}
			if !answer.Offered(set, got.OptionID) {
				t.Fatalf("%+v chose %q, not offered", d, got.OptionID)
			}
			if d.Outcome == abi.OutcomeSelect {
				if got.OptionID != d.OptionID {
					t.Fatalf("select %q chose %q", d.OptionID, got.OptionID)
				}
				continue
			}
			if got.Changes != nil && !got.Changes.Known {
				t.Fatalf("options %+v, %+v chose %q whose changes are unknown", set, d, got.OptionID)
			}
			if !answer.Durable(got) {
				continue
			}
			for _, o := range set {
				if o.Kind == got.Kind && !answer.Durable(o) {
					t.Fatalf("options %+v, %+v chose durable %q over plain %q", set, d, got.OptionID, o.OptionID)
				}
			}
		}
	}
	if checked < 300000 {
		t.Fatalf("only %d cases checked", checked)
	}
}

func TestRefusal(t *testing.T) {
	tests := []struct {
		name    string
		options []abi.Option
		want    string
	}{
		{"claude", claude, "reject"},
		{"exit plan mode keeps planning", exitPlan, "plan"},
		{"reject_always is never chosen", []abi.Option{{OptionID: "never", Kind: abi.OptionRejectAlways, Durable: true}}, ""},
		{"a reject that may change anything is never chosen", onlyUnknownOnce, ""},
		{"plain before described", describedFirst, "reject"},
		{"nothing offered", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, ok := answer.Refusal(tt.options)
			if got := idOf(o, ok); got != tt.want {
				t.Fatalf("Refusal = %q, want %q", got, tt.want)
			}
			if ok && o.Kind != abi.OptionRejectOnce {
				t.Fatalf("Refusal chose %q of kind %s", o.OptionID, o.Kind)
			}
		})
	}
}

func TestAgree(t *testing.T) {
	once := abi.Option{OptionID: "allow", Kind: abi.OptionAllowOnce}
	always := abi.Option{OptionID: "allow_always", Kind: abi.OptionAllowAlways, Durable: true}
	other := abi.Option{OptionID: "allow-2", Kind: abi.OptionAllowOnce}
	reject := abi.Option{OptionID: "reject", Kind: abi.OptionRejectOnce}
	risky := abi.Option{OptionID: "allow-and-more", Kind: abi.OptionAllowOnce, Durable: true, Changes: unknown}
	tests := []struct {
		name   string
		chosen []abi.Option
		want   int
	}{
		{"one", []abi.Option{once}, 0},
		{"the same option", []abi.Option{once, once, once}, 0},
		{"once beats always", []abi.Option{always, once}, 1},
		{"once beats always, repeated", []abi.Option{always, once, always, once}, 1},
		{"two different once options conflict", []abi.Option{once, other}, -1},
		{"a selected reject against an allow conflicts", []abi.Option{once, reject}, -1},
		{"a once option that may change anything does not beat always", []abi.Option{always, risky}, -1},
		{"the same risky option twice (both selected it)", []abi.Option{risky, risky}, 0},
		{"nothing", nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answer.Agree(tt.chosen); got != tt.want {
				t.Fatalf("Agree = %d, want %d", got, tt.want)
			}
		})
	}
}

// A plugin's allow once never becomes an option that may change anything,
// even when the agent lists it first.
func ExampleChoose() {
	options := []abi.Option{
		{OptionID: "allow-and-update-settings", Kind: abi.OptionAllowOnce, Durable: true, Changes: &abi.ChangeSet{Known: false}},
		{OptionID: "allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Kind: abi.OptionRejectOnce},
	}
	o, _ := answer.Choose(options, abi.Decision{Outcome: abi.OutcomeAllow})
	fmt.Println(o.OptionID)
	// Output: allow
}
