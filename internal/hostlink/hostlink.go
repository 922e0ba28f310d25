// Package hostlink lends internal/worker two of package host's unexported
// functions, so that a request crosses the process wall as the JSON its
// plugin reads: the parent encodes it as the host would, and the child's
// host hands those very bytes to the plugin, without decoding and encoding
// it again on the way (RATIONALE.md, "The process wall"). They are not
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
)
