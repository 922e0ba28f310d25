// Package worker runs one plugin behind a process wall: in a child process
// that is a re-exec of permhost itself, so that a fault the Go runtime cannot
// recover from (a "fatal error: runtime: out of memory" from wazero growing
// a table, a runtime or wazero bug in front of a hostile module, a guest
// stuck where no deadline check runs) ends that child and is that plugin's
// failure, never the proxy's.
//
// [Load] starts the child and hands it the plugin's [host.Options] (less the
// logger); the child loads the plugin with package host as an in-process
// plugin would be loaded, from the same compile cache, and answers
// decisions. The returned [*Plugin] is a [host.Decider] whose failures have
// the kinds of package host. The parent enforces the plugin's deadline
// itself: at the deadline the call fails with kind timeout whatever the
// child does; a child that has not answered by the deadline plus a short
// grace is killed (its whole process group) and replaced in the background,
// from the compile cache. A child that dies (a crash, a signal, an exit)
// fails the calls it had with kind trap, or memory when it ran out of
// memory, and is replaced the same way; until the replacement is ready,
// calls fail at once with kind load rather than wait.
//
// The child (see [Serve], run by the hidden `permhost plugin-worker`
// command) gets: stdin and stdout for frames of the wire protocol (wire.go)
// and stderr for its diagnostics, which the parent relays to its logger,
// bounded; no other file descriptor (those inherited by accident are closed
// at start); an empty environment but GOMAXPROCS=1; its own process group;
// SIGKILL when the thread that started it dies (Linux's parent-death
// signal); and limits on its address space (RLIMIT_AS, sized from the
// plugin's memory limit, its instances and the module's size on top of the
// child's own measured footprint) and its CPU time (RLIMIT_CPU: at the soft
// limit the child asks to be replaced, at the hard limit the kernel kills
// it).
//
// Each side, waiting for the other's next frame, polls the pipe for up to
// [Options.PollFor] (100 µs by default), giving up its CPU between tries,
// before it parks: a warm decision's answer is usually back sooner than a
// parked thread is woken. The polling counts in the child's CPU time.
//
// Process isolation needs Linux; elsewhere [Load] fails with
// [ErrUnsupported].
//
// For tests only: when the parent's environment has
// PERMHOST_WORKER_TEST_HOOK=1, the child passes it on and a request whose
// tool call title is "permhost-worker-test: crash", "…: exit" or "…: hang"
// makes the child die in that way instead of calling the plugin.
// Nothing else sets the variable; a plugin cannot.
package worker
