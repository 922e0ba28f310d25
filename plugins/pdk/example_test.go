package pdk_test

import (
	"fmt"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/plugins/pdk"
)

// A decide function is plain Go: Handle shows what permhost_decide returns
// for it, without building to wasm.
func ExampleHandle() {
	plugin := pdk.Plugin{
		Info: abi.Info{Name: "no-rm"},
		Decide: func(req abi.Request) (abi.Decision, error) {
			if req.Shell != nil {
				for _, c := range req.Shell.Commands {
					if len(c.Argv) > 0 && c.Argv[0] == "rm" {
						return abi.Decision{Outcome: abi.OutcomeReject, Reason: "rm is not allowed"}, nil
					}
				}
			}
			return abi.Decision{Outcome: abi.OutcomeAbstain}, nil
		},
	}
	out, err := pdk.Handle(plugin, []byte(`{
		"toolCall": {"id": "toolu_01", "kind": "execute", "title": "rm -rf build"},
		"shell": {"source": "rm -rf build", "parsed": true, "commands": [{"argv": ["rm", "-rf", "build"]}]},
		"options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
		            {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}`))
	fmt.Println(string(out), err)
	// Output: {"outcome":"reject","reason":"rm is not allowed"} <nil>
}
