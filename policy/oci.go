package policy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/config"
)

// ociTimeout bounds one look at a registry: at start, a registry that does
// not answer in time counts as down (the cached bundle is taken).
const ociTimeout = 30 * time.Second

func registryOf(ref *config.Bundle) bundle.Registry {
	return bundle.Registry{Ref: ref.OCI, PlainHTTP: ref.PlainHTTP, Timeout: ociTimeout}
}

// admitOCI pulls a bundle from its registry and admits it as a directory
// bundle is (bundle.LoadArchive: signature, pins, revision). When the
// registry is down, or serves a bundle that is refused (a rolled-back tag,
// a bad signature), the last good bundle remembered in the cache is
// admitted again instead, and the log says so; with none, the start fails.
func (e *Engine) admitOCI(ref *config.Bundle) (*source, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ociTimeout)
	defer cancel()
	reg := registryOf(ref)
	p, err := reg.Pull(ctx, e.ociCache)
	if err == nil {
		var m *config.BundleManifest
		if m, err = e.admitPulled(ref, p); err == nil {
			e.remember(ref, p)
			return &source{ref: ref, manifest: m, digest: p.Manifest}, nil
		}
	}
	last, lerr := e.ociCache.Last(ref.OCI)
	if lerr != nil {
		return nil, err
	}
	m, lerr := e.admitPulled(ref, last)
	if lerr != nil {
		return nil, errors.Join(err, fmt.Errorf("the cached last good bundle: %w", lerr))
	}
	s := &source{ref: ref, manifest: m, digest: last.Manifest}
	if errors.Is(err, bundle.ErrRegistry) {
		s.down = true
		e.log.Warn("bundle registry unreachable; using the cached bundle", "bundle", m.Name, "revision", m.Revision,
			"ref", ref.String(), "digest", last.Manifest, "err", err)
	} else {
		if p != nil {
			s.failed = p.Manifest
		}
		e.log.Error("bundle from registry refused; using the cached last good revision", "bundle", m.Name, "revision", m.Revision,
			"ref", ref.String(), "digest", last.Manifest, "err", err)
	}
	return s, nil
}

// admitPulled is bundle.Load for a pulled archive.
func (e *Engine) admitPulled(ref *config.Bundle, p *bundle.Pulled) (*config.BundleManifest, error) {
	return bundle.LoadArchive(e.ociCache.Dir(p.Layer), p.Archive, ref.TrustedKeys, e.state)
}

// remember records an admitted bundle as its reference's last good one. A
// cache that cannot be written costs only the next outage's fallback.
func (e *Engine) remember(ref *config.Bundle, p *bundle.Pulled) {
	if err := e.ociCache.Remember(ref.OCI, p); err != nil {
		e.log.Warn("bundle cache not written", "ref", ref.String(), "err", err)
	}
}

// refreshEvery refreshes bundle source i from its registry every period.
func (e *Engine) refreshEvery(ctx context.Context, i int, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.refreshOCI(ctx, i)
	}
}

// refreshOCI looks at bundle source i's tag and, when it names a manifest
// not seen yet, pulls, admits and loads it (every plugin) before taking
// it; anything failing keeps the last good revision. An unreachable
// registry is logged once, when it goes down, and once when it is back.
func (e *Engine) refreshOCI(ctx context.Context, i int) {
	e.mu.Lock()
	old := e.sources[i]
	e.mu.Unlock()
	reg := registryOf(old.ref)
	// The plugins loaded live on ctx; only the registry's answers are
	// bounded.
	rctx, cancel := context.WithTimeout(ctx, ociTimeout)
	defer cancel()
	d, err := reg.Resolve(rctx)
	if err == nil && (d == old.digest || d == old.failed) {
		e.reachable(old)
		return
	}
	var p *bundle.Pulled
	if err == nil {
		p, err = reg.Pull(rctx, e.ociCache)
	}
	if errors.Is(err, bundle.ErrRegistry) {
		if !old.down {
			old.down = true
			e.log.Warn("bundle registry unreachable; keeping the last good revision", "bundle", old.manifest.Name,
				"revision", old.manifest.Revision, "ref", old.ref.String(), "err", err)
		}
		return
	}
	e.reachable(old)
	if p != nil {
		d = p.Manifest // the tag may have moved since Resolve
	}
	s := &source{ref: old.ref, digest: d}
	if err == nil {
		s.manifest, err = e.admitPulled(old.ref, p)
	}
	if err == nil {
		err = e.loadStrict(ctx, s)
	}
	if err != nil {
		old.failed = d
		e.log.Error("bundle reload failed; keeping the last good revision", "bundle", old.manifest.Name,
			"revision", old.manifest.Revision, "ref", old.ref.String(), "digest", d, "err", err)
		return
	}
	e.remember(old.ref, p)
	e.mu.Lock()
	e.sources[i] = s
	e.mu.Unlock()
	e.rebuild()
	e.log.Info("bundle reloaded", "bundle", s.manifest.Name, "from", old.manifest.Revision, "to", s.manifest.Revision,
		"ref", old.ref.String(), "digest", d, "plugins", len(s.slots))
}

// reachable notes that source s's registry answered.
func (e *Engine) reachable(s *source) {
	if s.down {
		s.down = false
		e.log.Info("bundle registry reachable again", "bundle", s.manifest.Name, "ref", s.ref.String())
	}
}
