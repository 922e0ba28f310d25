// Package hostlink lends internal/worker three of package host's unexported
// functions (and holds the decoding helpers both share), so that a request crosses the process wall as the JSON its
// plugin reads: the parent encodes it as the host would, and the child's
// host hands those very bytes to the plugin, without decoding and encoding
// it again on the way; and so that the child runs its guests on the
// goroutine that read the request (RATIONALE.md, "The process wall"). They are not
// exported by host because no embedder needs them. Package host sets the
// variables in its init; nothing else does.
package hostlink

import (
	"context"

	"github.com/permhost/permhost/abi"
)

var (
	// AppendRequest appends req's JSON to dst, the bytes the host gives a
	// plugin for it.
	AppendRequest func(dst []byte, req *abi.Request) ([]byte, error)
	// CallEncoded runs one decision of plugin, a *host.Plugin, on input,
	// a request AppendRequest encoded (without its Config when the plugin
	// has its own, which the host splices in) whose options are options,
	// as host.Plugin.Call would; it returns a host.Result.
	CallEncoded func(ctx context.Context, plugin any, input []byte, options []abi.Option) any
	// OnCallersGoroutine makes plugin, a *host.Plugin, run its guests on
	// the goroutine that calls it, without the host's hard deadline (the
	// hand-off to the instance's goroutine that returns a caller at the
	// deadline whatever the guest does): for a child whose parent enforces
	// that deadline itself. Call it before the plugin's first call.
	OnCallersGoroutine func(plugin any)
)

// Outcome is the outcome b spells, without an allocation for the ones
// abi names (a decision's usual values, read by host and the worker).
func Outcome(b []byte) abi.Outcome {
	switch string(b) {
	case string(abi.OutcomeAbstain):
		return abi.OutcomeAbstain
	case string(abi.OutcomeAllow):
		return abi.OutcomeAllow
	case string(abi.OutcomeReject):
		return abi.OutcomeReject
	case string(abi.OutcomeAsk):
		return abi.OutcomeAsk
	case string(abi.OutcomeSelect):
		return abi.OutcomeSelect
	case string(abi.OutcomeCancel):
		return abi.OutcomeCancel
	}
	return abi.Outcome(b)
}

// Scope is Outcome for a decision's scope.
func Scope(b []byte) abi.Scope {
	switch string(b) {
	case string(abi.ScopeOnce):
		return abi.ScopeOnce
	case string(abi.ScopeAlways):
		return abi.ScopeAlways
	}
	return abi.Scope(b)
}
