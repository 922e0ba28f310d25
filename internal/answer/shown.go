package answer

import "github.com/permhost/permhost/abi"

// Shown returns the options a person may choose from. Unnarrowed, that is
// every offered option. Narrowed — the builtin fallback governs (a plugin
// with failure policy closed failed) or an admin-layer plugin asked — only
// the one-time options that make no durable change are left: allow_once
// and reject_once options that are not [Durable], with the agent's ids and
// in the agent's order, so that the editor's answer names one of the
// agent's own options. The result is empty when nothing is left (every
// option of a switch_mode request is durable): then no person may be asked
// and [Refusal] answers.
func Shown(options []abi.Option, narrowed bool) []abi.Option {
	if !narrowed {
		return options
	}
	kept := []abi.Option{}
	for _, o := range options {
		if !Durable(o) {
			kept = append(kept, o)
		}
	}
	return kept
}

// Offered reports whether id names one of options: an answer that names
// anything else never reaches the agent.
func Offered(options []abi.Option, id string) bool {
	for _, o := range options {
		if o.OptionID == id {
			return true
		}
	}
	return false
}
