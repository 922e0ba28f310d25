package policy

import (
	"context"
	"sync"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
)

// CheckPluginKeys reads the keys each of plugins that has a configuration
// table declares — from the compile cache's remembered description or the
// standard plugins' built-in list, else by loading the plugin — and returns the keys of those tables
// it does not declare ([config.CheckConfigKeys]), in file order. A plugin
// that cannot be loaded is skipped: what is wrong with it is reported
// elsewhere. It is for a configuration that already has mistakes, so that
// one round of fixing finds them all; an [Engine] checks the plugins it
// loads itself ([Engine.CheckConfig]).
func CheckPluginKeys(ctx context.Context, plugins []config.Plugin, cacheDir string) []*config.Error {
	found := make([][]*config.Error, len(plugins))
	var wg sync.WaitGroup
	for i, pc := range plugins {
		if len(pc.Config) == 0 || pc.Path == "" {
			continue
		}
		if sha, err := pc.Digest(); err == nil {
			keys, ok := knownConfigKeys(cacheDir, pc.Path, sha)
			if ok {
				found[i] = config.CheckConfigKeys(pc, keys)
				problems, checked := host.CachedConfigCheck(cacheDir, sha, pc.Config)
				found[i] = append(found[i], problemsOf(pc, problems)...)
				if checked || len(found[i]) > 0 {
					continue
				}
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, wasm := pc.Module()
			p, err := loadAs(ctx, host.Options{Name: pc.Name, Path: path, Wasm: wasm, SHA256: pc.SHA256, Config: pc.Config,
				Limits: pc.SandboxLimits(), CacheDir: cacheDir, PoolSize: 1}, isolationOf(&source{}, pc))
			if err != nil {
				return
			}
			defer p.Close(context.WithoutCancel(ctx))
			found[i] = append(config.CheckConfigKeys(pc, p.Info().ConfigKeys), problemsOf(pc, configProblems(p))...)
		}()
	}
	wg.Wait()
	var out []*config.Error
	for _, f := range found {
		out = append(out, f...)
	}
	return out
}

// configProblems returns what p's permhost_check_config found wrong with
// its configuration at load (in this process or behind the process wall).
func configProblems(p any) []abi.ConfigProblem {
	if c, ok := p.(interface{ ConfigProblems() []abi.ConfigProblem }); ok {
		return c.ConfigProblems()
	}
	return nil
}

// problemsOf places each problem a plugin found in its configuration on
// the configuration file's line, as a mistake of the file.
func problemsOf(pc config.Plugin, problems []abi.ConfigProblem) []*config.Error {
	var out []*config.Error
	for _, pr := range problems {
		out = append(out, config.PluginProblem(pc, pr.Key, pr.Message, pr.Suggestion))
	}
	return out
}
