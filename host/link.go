package host

import (
	"context"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/hostlink"
)

func init() {
	hostlink.AppendRequest = appendRequest
	hostlink.CallEncoded = func(ctx context.Context, plugin any, input []byte, options []abi.Option) any {
		return plugin.(*Plugin).callInput(ctx, input, options)
	}
	hostlink.OnCallersGoroutine = func(plugin any) { plugin.(*Plugin).onCallersGoroutine = true }
}

// callInput is Call on a request already encoded by appendRequest: input
// is what the plugin receives, but for the plugin's own config, spliced in
// as for any request. input is never reused by the host: a guest given up
// on may still read it.
func (p *Plugin) callInput(ctx context.Context, input []byte, options []abi.Option) Result {
	start := time.Now()
	r := &encodedRequest{base: input}
	r.req.Options = options
	var logs []Log
	d, e := p.call(ctx, start, r, &logs)
	res := Result{Decision: d, Logs: logs, Duration: time.Since(start)}
	if e != nil {
		res.Err = e
	}
	return res
}
