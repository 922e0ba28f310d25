package bench

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of xs by the
// nearest-rank method; 0 for no samples. xs is not modified.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank-1, 0), len(s)-1)]
}

// Millis converts durations to float milliseconds.
func Millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}
