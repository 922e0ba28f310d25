package answer_test

import (
	"fmt"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/answer"
)

func ids(opts []abi.Option) []string {
	out := []string{}
	for _, o := range opts {
		out = append(out, o.OptionID)
	}
	return out
}

func TestShown(t *testing.T) {
	codex := []abi.Option{
		{OptionID: "approved", Kind: abi.OptionAllowOnce},
		{OptionID: "approved-execpolicy-amendment", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "abort", Kind: abi.OptionRejectOnce},
	}
	// A hand-built request whose flags lie: kinds and changes still count.
	inconsistent := []abi.Option{
		{OptionID: "always", Kind: abi.OptionAllowAlways},
		{OptionID: "once-with-changes", Kind: abi.OptionAllowOnce, Changes: known},
		{OptionID: "custom", Kind: "ask_later"},
		{OptionID: "once", Kind: abi.OptionAllowOnce},
	}
	tests := []struct {
		name     string
		options  []abi.Option
		narrowed bool
		want     []string
	}{
		{"unnarrowed: every option", claude, false, []string{"allow_always", "allow", "reject"}},
		{"claude narrowed keeps allow and reject in order", claude, true, []string{"allow", "reject"}},
		{"codex narrowed drops the execpolicy amendment", codex, true, []string{"approved", "abort"}},
		{"switch_mode narrowed offers nothing", exitPlan, true, []string{}},
		{"changes of any kind are dropped", mayChangeAnything, true, []string{"allow", "reject"}},
		{"described changes are dropped", describedFirst, true, []string{"allow", "reject"}},
		{"flags that lie do not keep an option", inconsistent, true, []string{"once"}},
		{"no options", nil, true, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ids(answer.Shown(tt.options, tt.narrowed))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("Shown = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOffered(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want bool
	}{{"allow", true}, {"reject", true}, {"allow_always", true}, {"Allow", false}, {"made-up", false}, {"", false}} {
		if got := answer.Offered(claude, tt.id); got != tt.want {
			t.Errorf("Offered(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
	if answer.Offered(answer.Shown(claude, true), "allow_always") {
		t.Error("a narrowed choice still offers allow_always")
	}
}
