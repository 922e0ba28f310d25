// Package proctest reads, for tests, what a process is doing on Linux: the
// CPU time it used (/proc/PID/stat), and whether it settles into idling.
//
// A test on a loaded 2-core machine must not assert how fast something
// happens; it may assert that a process stops using CPU at all (a runaway
// guest never does). [WaitIdle] is that: it looks at consecutive windows
// until one is idle, so that bounded work left to finish (a warm-up, a
// pool refilled, a collection) only delays the answer, and fails only when
// the process keeps busy for a long time.
package proctest
