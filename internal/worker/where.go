package worker

import (
	"context"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
)

// Loaded is a loaded plugin, in this process (a [*host.Plugin]) or behind
// the process wall (a [*Plugin]).
type Loaded interface {
	host.Decider
	Info() abi.Info
	SHA256() string
	Close(context.Context) error
}

// LoadWhere loads a plugin with opts behind the process wall when walled,
// else in this process with package host: whatever loads a plugin (the
// engine's members, a look at its configKeys, permhost eval) goes through
// here, so that a walled plugin is never run in-process.
func LoadWhere(ctx context.Context, opts host.Options, walled bool) (Loaded, error) {
	if walled {
		p, err := Load(ctx, Options{Plugin: opts})
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	p, err := host.Load(ctx, opts)
	if err != nil {
		return nil, err
	}
	return p, nil
}
