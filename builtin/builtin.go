package builtin

import "github.com/permhost/permhost/abi"

// PersonOptions returns the options the fallback lets a person choose from:
// the one-time allow and reject options that make no durable change, in the
// agent's order. It returns nil when none is left (for example every option of
// a switch_mode request is durable): then only [Headless] may answer.
func PersonOptions(options []abi.Option) []abi.Option {
	var kept []abi.Option
	for _, o := range options {
		if o.Durable {
			continue
		}
		if o.Kind == abi.OptionAllowOnce || o.Kind == abi.OptionRejectOnce {
			kept = append(kept, o)
		}
	}
	return kept
}

// Answer is the fallback's own answer to a request.
type Answer struct {
	// OptionID is the reject option chosen; empty when Cancelled.
	OptionID string
	// Cancelled is true when no one-time reject option was offered: the
	// agent is told the request was cancelled, which refuses it too.
	Cancelled bool
}

// Headless answers a request no person can see: the first offered
// reject_once option, else cancelled. A reject_always option is never chosen
// because it would persist a rule the person did not ask for.
func Headless(options []abi.Option) Answer {
	for _, o := range options {
		if o.Kind == abi.OptionRejectOnce {
			return Answer{OptionID: o.OptionID}
		}
	}
	return Answer{Cancelled: true}
}

// Permitted reports whether a person's answer naming optionID may reach the
// agent when the fallback restricted the choice to PersonOptions(options).
func Permitted(options []abi.Option, optionID string) bool {
	for _, o := range PersonOptions(options) {
		if o.OptionID == optionID {
			return true
		}
	}
	return false
}
