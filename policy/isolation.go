package policy

import (
	"context"

	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/worker"
)

// isolationOf is where pc, of source s, runs: a bundle's plugins where the
// user's [[bundle]] entry says (by default in a process of their own), the
// configuration's own where each says (by default in-process).
func isolationOf(s *source, pc config.Plugin) string {
	if s.ref != nil {
		if s.ref.Isolation == config.IsolationInProcess {
			return config.IsolationInProcess
		}
		return config.IsolationProcess
	}
	if pc.Isolation == config.IsolationProcess {
		return config.IsolationProcess
	}
	return config.IsolationInProcess
}

// loadAs loads a plugin with opts in this process or, for
// IsolationProcess, in a worker child (worker.LoadWhere): whatever the
// engine loads (a decision's plugin, a look at its configKeys) goes through
// here.
func loadAs(ctx context.Context, opts host.Options, isolation string) (loaded, error) {
	p, err := worker.LoadWhere(ctx, opts, isolation == config.IsolationProcess)
	if err != nil {
		return nil, err
	}
	return p, nil
}
