package policy

import (
	"fmt"
	"time"

	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/digest"
)

// slowLoadNotice is how long a plugin's first load may take before
// permhost says on stderr what it is waiting for: on a first run a
// plugin's module is compiled to machine code, which takes seconds (a
// standard Go plugin 4–5 s on a quiet 2-core machine, far more under
// load), before the first decision, with nothing on screen otherwise.
const slowLoadNotice = time.Second

// watchSlowLoad says so once on e.notice when the load of s that is
// starting has not ended after slowLoadNotice and the module is not in the
// compile cache (a slow load from the cache is not a compile). ended is
// closed when the load ends.
func (e *Engine) watchSlowLoad(s *slot, ended <-chan struct{}) {
	if e.notice == nil {
		return
	}
	timer := e.after(slowLoadNotice)
	// Counted with the loads (its slot's load is counted already), so
	// that Close waits for it.
	e.loaders.Add(1)
	go func() {
		defer e.loaders.Done()
		select {
		case <-ended:
			return
		case <-timer:
		}
		select {
		case <-ended: // it ended just now: nothing to say
			return
		default:
		}
		if e.isCached(s.pc) {
			return
		}
		e.noticed.Do(func() { e.sayCompiling(s.pc) })
	}()
}

// isCached reports whether pc's module is in the compile cache: the
// description kept beside the entry is there.
func (e *Engine) isCached(pc config.Plugin) bool {
	sha := pc.SHA256
	if sha == "" {
		path, wasm := pc.Module()
		if wasm != nil {
			sha = digest.Bytes(wasm)
		} else {
			var err error
			if sha, err = digest.File(path); err != nil {
				return false
			}
		}
	}
	_, ok := host.CachedInfo(e.cacheDir, sha)
	return ok
}

// sayCompiling writes the notice: what permhost is doing, why, what
// happens to the requests meanwhile, and where the result is kept.
func (e *Engine) sayCompiling(pc config.Plugin) {
	where := "with the compile cache off, every start compiles again"
	if dir, ok := host.CacheDir(e.cacheDir); ok {
		where = "the result is kept in " + dir + ", so later starts skip this"
	}
	fmt.Fprintf(e.notice, "permhost: compiling plugin %q to machine code (its first run: it is not in the compile cache yet); "+
		"a permission request waits for it at most load_wait (%v), then its failure policy (%s) answers; %s\n",
		pc.Name, e.loadWait, pc.FailurePolicy, where)
}
