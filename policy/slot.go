package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
)

// Backoff of the background retries of a plugin that failed to load.
const (
	retryFirst = time.Second
	retryMax   = 5 * time.Minute
)

// slot is one configured plugin in the chain ([host.Loading]): it loads in
// the background, and a decision waits for its first load only until
// until (load_wait after the load began); a plugin that failed to load is
// retried in the background with backoff, never on a decision's path, and
// fails every call with its last load error meanwhile. A slot is held by
// every generation (chain) it is part of and closes its plugin once the
// last of them is retired (generation.go).
type slot struct {
	e     *Engine
	src   *source
	pc    config.Plugin
	done  chan struct{} // closed when the first load attempt ended
	until time.Time
	stop  context.CancelFunc // ends loading and retrying

	mu     sync.Mutex
	plugin loaded // nil until loaded
	err    error  // the last load failure, a *host.Error wrapping host.ErrNotLoaded and the cause
	holds  int    // generations holding the slot
	closed bool
}

// newSlot makes the slot of pc and starts loading it.
func (e *Engine) newSlot(ctx context.Context, src *source, pc config.Plugin) *slot {
	s := &slot{e: e, src: src, pc: pc, done: make(chan struct{}), until: time.Now().Add(e.loadWait)}
	ctx, s.stop = context.WithCancel(ctx)
	if !e.track(s, true) {
		s.stop()
		s.err = &host.Error{Kind: host.KindLoad, Plugin: pc.Name, Err: host.ErrClosed}
		close(s.done)
		return s
	}
	go s.load(ctx)
	return s
}

// newLoadedSlot makes the slot of a plugin already loaded (a bundle reload
// loads every plugin before it takes the new revision).
func (e *Engine) newLoadedSlot(src *source, pc config.Plugin, p loaded) *slot {
	s := &slot{e: e, src: src, pc: pc, done: make(chan struct{}), until: time.Now(), stop: func() {}, plugin: p}
	close(s.done)
	if !e.track(s, false) {
		s.closed = true
		p.Close(context.Background())
	}
	return s
}

// load loads the plugin, then retries until it loads or the slot closes.
// A plugin whose configuration has keys it does not declare is not
// retried: the same module would refuse the same file.
func (s *slot) load(ctx context.Context) {
	defer s.e.loaders.Done()
	first := true
	wait := retryFirst
	for attempt := 1; ; attempt++ {
		var ended chan struct{}
		if first {
			ended = make(chan struct{})
			s.e.watchSlowLoad(s, ended)
		}
		p, err := s.e.loader(ctx, s.src, s.pc)
		if ended != nil {
			close(ended)
		}
		late := false
		if err == nil {
			if err, late = s.e.checkKeys(s.pc, p); err != nil {
				p.Close(context.WithoutCancel(ctx))
			}
		}
		if err == nil {
			s.mu.Lock()
			closed := s.closed
			if !closed {
				s.plugin, s.err = p, nil
			}
			s.mu.Unlock()
			if closed {
				p.Close(context.Background())
			} else if attempt == 1 {
				s.e.log.Debug("plugin loaded", "plugin", s.pc.Name, "version", p.Info().Version, "sha256", p.SHA256())
			} else {
				s.e.log.Info("plugin loaded", "plugin", s.pc.Name, "attempt", attempt, "version", p.Info().Version, "sha256", p.SHA256())
			}
			if first {
				close(s.done)
			}
			return
		}
		kind, cause := host.KindLoad, err
		var he *host.Error
		if errors.As(err, &he) {
			kind, cause = he.Kind, he.Err
		}
		retried := !errors.Is(err, config.ErrInvalid) && ctx.Err() == nil
		note := ""
		if retried {
			note = " (retried in the background)"
		}
		s.mu.Lock()
		s.err = &host.Error{Kind: kind, Plugin: s.pc.Name, Err: fmt.Errorf("%w%s: %w", host.ErrNotLoaded, note, cause)}
		s.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			// The engine is closing (the agent exited while plugins were
			// still compiling): the load was stopped, it did not fail.
			s.e.log.Debug("plugin load stopped: permhost is shutting down", "plugin", s.pc.Name)
		case errors.Is(err, config.ErrInvalid) && !late:
			// CheckConfig reports it, with the file's other mistakes.
			s.e.log.Debug("plugin configuration has mistakes", "plugin", s.pc.Name, "err", err)
		case errors.Is(err, config.ErrInvalid):
			s.e.log.Error("plugin configuration has mistakes (keys the plugin does not declare, or what its own check found); its failure policy applies to every request",
				"plugin", s.pc.Name, "policy", s.pc.FailurePolicy, "err", err)
		case first && environmental(err):
			s.e.log.Error("plugin failed to load; its failure policy applies to every request until a retry succeeds",
				"plugin", s.pc.Name, "policy", s.pc.FailurePolicy, "retry", wait, "err", err)
		case first:
			s.e.log.Error("plugin failed to load; its failure policy applies to every request until its module file changes",
				"plugin", s.pc.Name, "policy", s.pc.FailurePolicy, "err", err)
		default:
			s.e.log.Debug("plugin failed to load again", "plugin", s.pc.Name, "attempt", attempt, "retry", wait, "err", err)
		}
		if first {
			close(s.done)
			first = false
		}
		if !retried {
			return
		}
		// A failure of the module itself (over a limit, a start function
		// that loops or traps, a wrong ABI) would only repeat, at the cost
		// of its init budget in CPU each time: it is tried again once its
		// file changes. Only a failure of the file system is retried as
		// it is.
		again, stamp := environmental(err), moduleStamp(s.pc)
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.e.after(wait):
			}
			wait = min(2*wait, retryMax)
			if again || moduleStamp(s.pc) != stamp {
				break
			}
		}
	}
}

// environmental reports whether a load failure came from the file system
// (the module missing or unreadable, the compile cache raced by another
// process) rather than from the module.
func environmental(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se)
}

// moduleStamp identifies the module file as it is now, so that a retry
// notices a new one.
func moduleStamp(pc config.Plugin) string {
	if pc.Wasm != nil {
		// A bundle's module, as verified: a new file is a new revision,
		// which the bundle's reload reads.
		return "verified bytes"
	}
	if pc.Std != "" {
		return "std:" + pc.Std
	}
	fi, err := os.Stat(pc.Path)
	if err != nil {
		return "unreadable"
	}
	return fmt.Sprint(fi.Size(), " ", fi.ModTime().UnixNano(), " ", fi.Mode())
}

// Loaded implements host.Loading.
func (s *slot) Loaded() (<-chan struct{}, time.Time) { return s.done, s.until }

// Plugin implements host.Loading: the loaded plugin when it runs in this
// process.
func (s *slot) Plugin() *host.Plugin {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, _ := s.plugin.(*host.Plugin)
	return p
}

// Info and SHA256 are the loaded plugin's, for the decision log; empty
// while it is not loaded.
func (s *slot) Info() abi.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plugin == nil {
		return abi.Info{}
	}
	return s.plugin.Info()
}

func (s *slot) SHA256() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plugin == nil {
		return ""
	}
	return s.plugin.SHA256()
}

// Call runs the loaded plugin, or fails with the load error or
// host.ErrStillLoading.
func (s *slot) Call(ctx context.Context, req abi.Request) host.Result {
	s.mu.Lock()
	p, err := s.plugin, s.err
	if s.closed {
		p, err = nil, &host.Error{Kind: host.KindCancelled, Plugin: s.pc.Name, Err: host.ErrClosed}
	}
	s.mu.Unlock()
	switch {
	case p != nil:
		return p.Call(ctx, req)
	case err != nil:
		return host.Result{Err: err}
	}
	return host.Result{Err: &host.Error{Kind: host.KindLoad, Plugin: s.pc.Name, Err: host.ErrStillLoading}}
}

func (s *slot) member() host.Member {
	return host.Member{Name: s.pc.Name, Layer: s.pc.Layer, Policy: host.FailurePolicy(s.pc.FailurePolicy), Plugin: s}
}

func (s *slot) hold() {
	s.mu.Lock()
	s.holds++
	s.mu.Unlock()
}

// release drops one generation's hold; the last closes the slot.
func (s *slot) release() {
	s.mu.Lock()
	s.holds--
	last := s.holds == 0
	s.mu.Unlock()
	if last {
		s.e.closeSlot(s)
	}
}

// close stops loading and closes the plugin; it is idempotent.
func (s *slot) close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	p := s.plugin
	s.mu.Unlock()
	s.stop()
	if p == nil {
		return nil
	}
	return p.Close(ctx)
}
