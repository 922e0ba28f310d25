//go:build race

package host

// raceSlowdown scales the deadlines of tests that run real Go plugins: the
// race detector slows the host's Go code (kernel functions, encoding) several
// times over.
const raceSlowdown = 10
