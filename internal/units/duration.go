package units

import (
	"errors"
	"fmt"
	"time"
)

// ErrBadDuration is wrapped by every error of [ParseDuration].
var ErrBadDuration = errors.New("units: bad duration")

// ParseDuration is time.ParseDuration for limits and timeouts: it refuses
// negative durations, and a bare number gets an error asking for a unit
// rather than silently meaning nanoseconds.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if num, rest := splitNumber(s); num != "" && rest == "" {
			return 0, fmt.Errorf("%w %q: needs a unit, e.g. %sms", ErrBadDuration, s, s)
		}
		return 0, fmt.Errorf("%w %q: want e.g. 100ms, 2s or 1m30s", ErrBadDuration, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%w %q: negative", ErrBadDuration, s)
	}
	return d, nil
}

// Duration is a time.Duration that reads itself with ParseDuration: a
// flag.Value and, through its text methods, a TOML or JSON string such as
// "100ms".
type Duration time.Duration

// String implements flag.Value.
func (d Duration) String() string { return time.Duration(d).String() }

// Set implements flag.Value.
func (d *Duration) Set(v string) error {
	p, err := ParseDuration(v)
	if err != nil {
		return err
	}
	*d = Duration(p)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error { return d.Set(string(b)) }
