package profile

import (
	"testing"

	"github.com/permhost/permhost/abi"
)

func TestIsQuestion(t *testing.T) {
	opts := func(kv ...string) []abi.Option {
		var out []abi.Option
		for i := 0; i < len(kv); i += 2 {
			out = append(out, abi.Option{OptionID: kv[i], Kind: kv[i+1]})
		}
		return out
	}
	plan := opts("implement_plan", "allow_once", "revise_plan", "reject_once")
	for _, tt := range []struct {
		name string
		p    *Profile
		id   string
		kind string
		opts []abi.Option
		want bool
	}{
		{"codex's plan review", codex, "plan-review:x-plan", "switch_mode", plan, true},
		{"the same options elsewhere are not codex's", Generic, "plan-review:x-plan", "switch_mode", plan, false},
		{"codex's plan options under another kind", codex, "t", "execute", plan, false},
		{"an allow/reject request", codex, "t", "execute", opts("approved", "allow_once", "abort", "reject_once"), false},
		{"AskUserQuestion answers", Generic, "t", "other", opts("q0_opt0", "allow_once", "q0_opt1", "allow_once"), true},
		// Kimi Code 0.31's AskUserQuestion bridge (getpaseo/paseo#5092):
		// q0_opt_<j> answers and a q0_skip reject.
		{"Kimi Code's questions", Generic, "t", "other", opts("q0_opt_0", "allow_once", "q0_opt_1", "allow_once", "q0_skip", "reject_once"), true},
		{"answers under a kind that acts", Generic, "t", "edit", opts("q0_opt0", "allow_once"), false},
		{"an answer kind of the agent's own", Generic, "t", "", opts("index", "_consent"), true},
		{"one allow among answers", Generic, "t", "other", opts("q0_opt0", "allow_once", "allow", "allow_once"), false},
		{"no options", Generic, "t", "other", nil, false},
	} {
		if got := tt.p.IsQuestion(tt.id, tt.kind, tt.opts); got != tt.want {
			t.Errorf("%s: IsQuestion = %v, want %v", tt.name, got, tt.want)
		}
	}
}
