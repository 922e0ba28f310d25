package pdk

import (
	"encoding/json"

	"github.com/permhost/permhost/abi"
)

// warmRequest touches every type of a Request, so that decoding it once
// builds encoding/json's per-type decoders.
const warmRequest = `{"abi":{"major":1,"minor":0},"decisionId":"w",
"session":{"id":"s","cwd":"/","mode":"m","agent":{"name":"a"},"client":{"name":"c"}},
"toolCall":{"id":"t","kind":"execute","rawInput":{"command":"x"},"content":[],"locations":[{"path":"/x","line":1}]},
"options":[{"optionId":"o","name":"n","kind":"allow_once","durable":false,
 "changes":{"known":true,"items":[{"type":"addRules","rules":[{"toolName":"Bash"}],"directories":["/"],"targets":[{"type":"tool","argv":["x"],"access":["read"]}]}]}}],
"shell":{"source":"x","parsed":true,"commands":[{"argv":["x"],"assignments":[{"name":"A","value":"1"}],"redirects":[{"op":">","target":"y","write":true}]}]},
"paths":[{"path":"/y","access":"write","insideCwd":true}],"raw":{},"config":{}}`

// warmUp decodes a request and encodes a decision once. The first use of
// encoding/json for a type costs milliseconds of reflection in wasm; paying
// it while the instance initialises keeps it out of the first decision's
// deadline when permhost initialises the instance ahead of time.
func warmUp() {
	var req abi.Request
	if json.Unmarshal([]byte(warmRequest), &req) != nil {
		return
	}
	marshal(abi.Decision{Outcome: abi.OutcomeAbstain, Explanation: &abi.Explanation{Summary: "s"}})
	marshal(abi.Info{Name: "n"})
}
