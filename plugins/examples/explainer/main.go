// Command explainer is a permhost plugin that never decides: it abstains
// with an explanation of the call — what it does and why the agent wants it,
// its risk in a few words and a risk level — which permhost shows when a
// person decides, like Claude Code's permission explainer.
package main

import (
	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/plugins/pdk"
)

func init() {
	pdk.Register(pdk.Plugin{
		Info: abi.Info{
			Name:        "explainer",
			Version:     "1.0.0",
			Description: "Abstains with an explanation: what the call does, why, its risk and a risk level.",
		},
		Decide: func(req abi.Request) (abi.Decision, error) {
			e := explain(req)
			return abi.Decision{Outcome: abi.OutcomeAbstain, Explanation: &e}, nil
		},
	})
}

func main() {}
