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
		// Kimi Code's plan review: plan_opt_{i} answers (allow_once), not
		// the generic shape.
		{"Kimi Code's plan review", kimi, "3:call_9", "", opts("plan_opt_0", "allow_once", "plan_opt_1", "allow_once", "plan_revise", "reject_once", "plan_reject_and_exit", "reject_once"), true},
		{"plan_ options elsewhere are not Kimi's", Generic, "3:call_9", "", opts("plan_opt_0", "allow_once", "plan_revise", "reject_once"), false},
		{"Kimi's plan prefix needs every option", kimi, "t", "", opts("plan_approve", "allow_once", "approve_once", "allow_once"), false},
		{"Vibe's teleport push", vibe, "teleport", "execute", opts("teleport_push_and_continue", "allow_once", "teleport_cancel", "reject_once"), true},
	} {
		if got := tt.p.IsQuestion(tt.id, tt.kind, tt.opts); got != tt.want {
			t.Errorf("%s: IsQuestion = %v, want %v", tt.name, got, tt.want)
		}
	}
}
