//go:build !linux

package worker

import "time"

// poll never polls where process isolation is not supported.
func poll(uintptr, []byte, time.Duration, bool) int { return 0 }
