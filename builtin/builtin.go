package builtin

import (
	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/answer"
)

// PersonOptions returns the options the fallback lets a person choose from:
// the one-time allow and reject options that make no durable change, in the
// agent's order and with the agent's ids. It returns an empty list when none
// is left (for example every option of a switch_mode request is durable):
// then only [Headless] may answer.
func PersonOptions(options []abi.Option) []abi.Option {
	return answer.Shown(options, true)
}

// Answer is the fallback's own answer to a request.
type Answer struct {
	// OptionID is the reject option chosen; empty when Cancelled.
	OptionID string
	// Cancelled is true when no one-time reject option was offered: the
	// agent is told the request was cancelled, which refuses it too.
	Cancelled bool
}

// Headless answers a request no person can see: the offered reject_once
// option a plugin's one-time reject would get (a plain one before a durable
// one, never one whose changes could not be validated), else cancelled. A
// reject_always option is never chosen because it would persist a rule the
// person did not ask for.
func Headless(options []abi.Option) Answer {
	if o, ok := answer.Refusal(options); ok {
		return Answer{OptionID: o.OptionID}
	}
	return Answer{Cancelled: true}
}
