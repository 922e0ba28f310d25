package abi_test

import (
	"encoding/json"
	"fmt"

	"github.com/permhost/permhost/abi"
)

// The options of a claude-agent-acp Bash request and of a codex-acp exec
// request, as the agents offer them.
var (
	claudeOptions = []abi.Option{
		{OptionID: "allow_always", Name: "Always Allow", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
	}
	codexOptions = []abi.Option{
		{OptionID: "approved", Name: "Yes, proceed", Kind: abi.OptionAllowOnce},
		{OptionID: "approved-execpolicy-amendment", Name: "Yes, and don't ask again for commands that start with `rm -rf build`", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "abort", Name: "No, and tell Codex what to do differently", Kind: abi.OptionRejectOnce},
	}
)

// A plugin says what it wants — allow once, reject always — and the host
// picks the offered option of that kind, whatever the agent calls it.
func ExampleDecision_Option() {
	decisions := []abi.Decision{
		{Outcome: abi.OutcomeAllow},
		{Outcome: abi.OutcomeAllow, Scope: abi.ScopeAlways},
		{Outcome: abi.OutcomeReject, Scope: abi.ScopeAlways}, // no reject_always: falls back to reject_once
		{Outcome: abi.OutcomeAsk},
	}
	for _, d := range decisions {
		c, _ := d.Option(claudeOptions)
		x, _ := d.Option(codexOptions)
		fmt.Printf("%-6s %-6s claude=%q codex=%q\n", d.Outcome, d.Scope, c.OptionID, x.OptionID)
	}
	// Output:
	// allow         claude="allow" codex="approved"
	// allow  always claude="allow_always" codex="approved-execpolicy-amendment"
	// reject always claude="reject" codex="abort"
	// ask           claude="" codex=""
}

// Validate refuses an answer that names an option the agent did not offer:
// such a decision is a plugin failure, never an allow.
func ExampleDecision_Validate() {
	for _, d := range []abi.Decision{
		{Outcome: abi.OutcomeSelect, OptionID: "approved"},
		{Outcome: abi.OutcomeSelect, OptionID: "allow"},
		{Outcome: "deny"},
	} {
		fmt.Println(d.Validate(claudeOptions))
	}
	// The SDK example agent offers no allow_always option.
	sdkOptions := []abi.Option{
		{OptionID: "allow", Name: "Allow this change", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Name: "Skip this change", Kind: abi.OptionRejectOnce},
	}
	fmt.Println(abi.Decision{Outcome: abi.OutcomeAllow, Scope: abi.ScopeAlways}.Validate(sdkOptions))
	// Output:
	// abi: option not offered: select "approved"
	// <nil>
	// abi: unknown outcome "deny"
	// abi: option not offered: allow always with no allow_always option
}

func ExampleVersion_Compatible() {
	host := abi.Current
	for _, plugin := range []abi.Version{{Major: 1, Minor: 0}, {Major: 1, Minor: 1}, {Major: 1, Minor: 5}, {Major: 1, Minor: 6}, {Major: 2, Minor: 0}} {
		fmt.Printf("plugin %s on host %s: %v\n", plugin, host, plugin.Compatible(host))
	}
	// Output:
	// plugin 1.0 on host 1.5: true
	// plugin 1.1 on host 1.5: true
	// plugin 1.5 on host 1.5: true
	// plugin 1.6 on host 1.5: false
	// plugin 2.0 on host 1.5: false
}

// A decision with an explanation, as a plugin writes it.
func ExampleDecision() {
	d := abi.Decision{
		Outcome: abi.OutcomeAbstain,
		Explanation: &abi.Explanation{
			Summary:   "Runs `rm -rf build` in /home/dev/project. Why: Remove build dir.",
			Risk:      "Recursively deletes files; this cannot be undone.",
			RiskLevel: abi.RiskHigh,
		},
	}
	b, _ := json.MarshalIndent(d, "", "  ")
	fmt.Println(string(b))
	// Output:
	// {
	//   "outcome": "abstain",
	//   "explanation": {
	//     "summary": "Runs `rm -rf build` in /home/dev/project. Why: Remove build dir.",
	//     "risk": "Recursively deletes files; this cannot be undone.",
	//     "riskLevel": "high"
	//   }
	// }
}
