//go:build race

package worker

// raceBuild: the race detector's runtime takes about three times the heap
// (measured: team-rules compiling 266 MiB resident against 90 MiB), so a
// -race child gets twice the address-space budget.
const raceBuild = true
