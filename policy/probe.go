package policy

import (
	"context"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
)

// Probe is what one plugin did with a probe request.
type Probe struct {
	Plugin string
	Result host.Result
}

// Probe runs req through each plugin of the chain on its own, after it has
// loaded (or failed to), whatever the chain's strategy would skip, so that
// a front end can tell before any agent runs which plugins fail a
// decision. It returns the plugins in chain order.
func (e *Engine) Probe(ctx context.Context, req abi.Request) []Probe {
	g := e.acquire()
	if g == nil {
		return nil
	}
	defer e.releaseGen(g)
	req = e.pluginView(req)
	out := make([]Probe, 0, len(g.slots))
	for _, s := range g.slots {
		select {
		case <-s.done:
		case <-ctx.Done():
		}
		out = append(out, Probe{Plugin: s.pc.Name, Result: s.Call(ctx, req)})
	}
	return out
}
