// Package bench measures permhost side by side with the alternatives, in one
// run, for BENCHMARKS.md.
//
// The in-process comparisons are benchmarks of this package's tests
// (decisions through the plugin host, stock Extism go-sdk, raw wazero and a
// per-decision process hook; throughput with the instance pool; time to
// fallback for each hostile fixture). They live in _test.go files so that
// only the tests import the plugin host. The process-level measurements
// (proxy passthrough against a raw pipe, cold start, peak RSS) and the
// table itself are made by cmd/permhost-bench, which `make bench` runs; it
// also runs these benchmarks and parses their output.
//
// Helper programs: cmd/rawpipe (the raw pipe relay that passthrough is
// compared with), cmd/benchagent (a load-generating fake ACP agent) and
// cmd/permhost-hook (a decision made by a process started per request, the
// way command hooks work in other agents).
package bench
