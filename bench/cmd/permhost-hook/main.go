// Command permhost-hook is the alternative permhost is measured against: a
// decision made by a program started for each request, which reads the
// request on stdin and prints the decision on stdout — how command hooks
// work in other coding agents. It decodes the whole request as permhost's
// plugins do and answers the same constant decision as
// testdata/wasm/good.wasm.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

func main() {
	in, err := io.ReadAll(io.LimitReader(os.Stdin, 4<<20))
	if err != nil {
		fmt.Fprintln(os.Stderr, "permhost-hook:", err)
		os.Exit(1)
	}
	var req struct {
		DecisionID string          `json:"decisionId"`
		ToolCall   json.RawMessage `json:"toolCall"`
		Options    []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
		Raw json.RawMessage `json:"raw"`
	}
	if err := json.Unmarshal(in, &req); err != nil {
		fmt.Fprintln(os.Stderr, "permhost-hook: bad request:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(map[string]string{"outcome": "abstain", "reason": "good fixture: constant decision"})
	os.Stdout.Write(append(out, '\n'))
}
