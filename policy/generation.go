package policy

import (
	"context"

	"github.com/permhost/permhost/host"
)

// generation is one chain and the slots it is made of. The engine's
// current generation holds one reference, each decision running on it
// another; a generation replaced by a bundle reload is retired once its
// last decision ends, and releases its slots then, so that the plugins of
// the old revision are closed exactly when nothing can call them any more
// (RATIONALE.md, "Bundle reloads close what they replace").
type generation struct {
	chain *host.Chain
	slots []*slot
	refs  int // guarded by Engine.mu
}

func newGeneration(chain *host.Chain, slots []*slot) *generation {
	g := &generation{chain: chain, slots: slots, refs: 1}
	for _, s := range slots {
		s.hold()
	}
	return g
}

// acquire returns the current generation with a reference for the caller,
// or nil once the engine is closed.
func (e *Engine) acquire() *generation {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.current
	if g != nil {
		g.refs++
	}
	return g
}

// releaseGen drops one reference to g; the last releases its slots.
func (e *Engine) releaseGen(g *generation) {
	e.mu.Lock()
	g.refs--
	last := g.refs == 0
	e.mu.Unlock()
	if last {
		for _, s := range g.slots {
			s.release()
		}
	}
}

// install makes g the current generation and retires the one before.
func (e *Engine) install(g *generation) {
	e.mu.Lock()
	old := e.current
	if e.closed {
		e.mu.Unlock()
		e.releaseGen(g)
		return
	}
	e.current = g
	e.mu.Unlock()
	if old != nil {
		e.releaseGen(old)
	}
}

// track registers a slot so that Close closes it; false once the engine is
// closed. loading counts the slot's loading goroutine.
func (e *Engine) track(s *slot, loading bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.slots[s] = struct{}{}
	if loading {
		e.loaders.Add(1)
	}
	return true
}

// closeSlot closes a slot no generation holds, in the background so that
// the decision that released it is not held up. After Close began, Close
// closes it.
func (e *Engine) closeSlot(s *slot) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	delete(e.slots, s)
	e.closers.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.closers.Done()
		if err := s.close(context.Background()); err != nil {
			e.log.Warn("closing a retired plugin", "plugin", s.pc.Name, "err", err)
		}
	}()
}
