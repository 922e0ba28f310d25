package policy

import (
	"context"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
)

// loaded is a plugin as the engine holds it once it has loaded.
type loaded interface {
	host.Decider
	Info() abi.Info
	SHA256() string
	Close(context.Context) error
}

// loadPlugin loads pc, a plugin of source s, in this process or in a
// worker child, as its isolation says (isolation.go).
func (e *Engine) loadPlugin(ctx context.Context, s *source, pc config.Plugin) (loaded, error) {
	return loadAs(ctx, e.pluginOptions(pc), isolationOf(s, pc))
}

// pluginOptions is what the host loads pc with.
func (e *Engine) pluginOptions(pc config.Plugin) host.Options {
	path, wasm := pc.Module()
	return host.Options{
		Name: pc.Name, Path: path, Wasm: wasm, SHA256: pc.SHA256, Config: pc.Config,
		Limits: pc.SandboxLimits(), CacheDir: e.cacheDir, Logger: e.log,
		// The standard plugins are permhost's own code: trusted when the
		// bytes are the embedded ones, not a file or a bundle's.
		Trusted: pc.Std != "" && pc.Wasm == nil && wasm != nil,
	}
}
