package units

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// ErrBadSize is wrapped by every error of [ParseSize].
var ErrBadSize = errors.New("units: bad size")

// sizeUnits lists every accepted unit, largest multiplier first so that
// [FormatSize] can pick the largest exact one.
var sizeUnits = []struct {
	name string
	mult uint64
}{
	{"TiB", 1 << 40},
	{"TB", 1e12},
	{"GiB", 1 << 30},
	{"GB", 1e9},
	{"MiB", 1 << 20},
	{"MB", 1e6},
	{"KiB", 1 << 10},
	{"kB", 1e3},
	{"KB", 1e3}, // common spelling; FormatSize writes kB
	{"B", 1},
}

// ParseSize parses a byte count such as "32MiB", "1.5 GiB", "1MB" or "4096".
// The number may have a fraction as long as the result is a whole number of
// bytes; one space may separate it from the unit.
func ParseSize(s string) (uint64, error) {
	num, unit := splitNumber(s)
	if num == "" {
		return 0, fmt.Errorf("%w %q: want a number and an optional unit, e.g. 32MiB", ErrBadSize, s)
	}
	mult := uint64(0)
	if len(unit) > 1 && unit[0] == ' ' {
		unit = unit[1:]
	}
	if unit == "" {
		mult = 1
	}
	for _, u := range sizeUnits {
		if unit == u.name {
			mult = u.mult
		}
	}
	if mult == 0 {
		return 0, fmt.Errorf("%w %q: unknown unit %q (want B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)", ErrBadSize, s, unit)
	}

	whole, frac, _ := strings.Cut(num, ".")
	frac = strings.TrimRight(frac, "0")
	if len(frac) > 19 {
		// 10^len(frac) must fit in a uint64; no real size needs more.
		return 0, fmt.Errorf("%w %q: too many fraction digits", ErrBadSize, s)
	}
	// Work in units of 10^-len(frac): n = whole·10^d + frac, then n·mult
	// must be divisible by 10^d.
	n, ok := uint64(0), true
	for _, c := range whole + frac {
		n, ok = mulAdd(n, 10, uint64(c-'0'), ok)
	}
	hi, lo := bits.Mul64(n, mult)
	if !ok || hi != 0 {
		return 0, fmt.Errorf("%w %q: too large", ErrBadSize, s)
	}
	scale := uint64(1)
	for range frac {
		scale *= 10
	}
	if lo%scale != 0 {
		return 0, fmt.Errorf("%w %q: not a whole number of bytes", ErrBadSize, s)
	}
	return lo / scale, nil
}

// splitNumber splits s into a decimal number "123" or "1.5" and the rest;
// num is "" when s does not start with one.
func splitNumber(s string) (num, rest string) {
	i, dot := 0, -1
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' && dot < 0) {
		if s[i] == '.' {
			dot = i
		}
		i++
	}
	num = s[:i]
	switch {
	case i == 0, dot == 0, dot == i-1:
		return "", s // no digits before or after the point
	}
	return num, s[i:]
}

func mulAdd(n, m, a uint64, ok bool) (uint64, bool) {
	hi, lo := bits.Mul64(n, m)
	sum, carry := bits.Add64(lo, a, 0)
	return sum, ok && hi == 0 && carry == 0
}

// FormatSize writes n with the largest unit that divides it exactly, so that
// ParseSize(FormatSize(n)) == n: 33554432 is "32MiB", 1000000 is "1MB", 1000
// is "1kB", 1001 is "1001B".
func FormatSize(n uint64) string {
	for _, u := range sizeUnits {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatUint(n/u.mult, 10) + u.name
		}
	}
	return "0B"
}

// Size is a byte count that reads and writes itself with ParseSize and
// FormatSize: a flag.Value and, through its text methods, a TOML or JSON
// string such as "32MiB".
type Size uint64

// String implements flag.Value.
func (s Size) String() string { return FormatSize(uint64(s)) }

// Set implements flag.Value.
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Size) UnmarshalText(b []byte) error { return s.Set(string(b)) }
