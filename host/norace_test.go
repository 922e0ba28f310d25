//go:build !race

package host

// raceSlowdown: see race_test.go.
const raceSlowdown = 1
