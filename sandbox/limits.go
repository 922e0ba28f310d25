package sandbox

import (
	"errors"
	"fmt"
	"time"
)

// Errors of this package. Callers test them with errors.Is.
var (
	// ErrBadLimits: a Limits field is out of range.
	ErrBadLimits = errors.New("sandbox: bad limits")
	// ErrForbiddenImport: a module imports something outside the allow-list.
	ErrForbiddenImport = errors.New("sandbox: forbidden import")
	// ErrTimeout: a call ran past its deadline (and was stopped if it was
	// still running).
	ErrTimeout = errors.New("sandbox: deadline exceeded")
	// ErrInstrument: a module could not be instrumented (malformed, uses an
	// unsupported encoding, or is already instrumented), or a module given to
	// Watch was not instrumented.
	ErrInstrument = errors.New("sandbox: cannot instrument module")
	// ErrCallDepth: a guest's calls nested deeper than Limits.MaxCallDepth.
	// The call fails with an error wrapping it (a trap: the instance must be
	// discarded).
	ErrCallDepth = errors.New("sandbox: call depth exceeded")
)

// WasmPageSize is the size of a WebAssembly memory page.
const WasmPageSize = 64 << 10

// Defaults of Limits.
const (
	DefaultMemoryBytes = 32 << 20
	DefaultTimeout     = 100 * time.Millisecond
	DefaultMaxOutput   = 1 << 20
	DefaultMaxInput    = 4 << 20
	DefaultMaxLogBytes = 64 << 10
	// DefaultMaxCallDepth is deep enough for any plugin that is not
	// recursing without end (Go's encoding/json refuses input nested
	// deeper than 10,000 levels long before its decoder gets there) and keeps
	// wazero's call stack to a few megabytes.
	DefaultMaxCallDepth = 10_000
)

// Upper bounds accepted by Validate. They catch typos (a timeout in seconds
// given as minutes), not legitimate configurations.
const (
	maxMemoryBytes = 4 << 30 // wasm32 address space
	maxTimeout     = 10 * time.Minute
	maxSize        = 1 << 30
	maxCallDepth   = 1_000_000 // wazero's own stack ceiling (400 MB) is near
)

// Limits bound one plugin. A zero field means "the default"; see WithDefaults.
type Limits struct {
	// MemoryBytes caps a plugin's linear memory; rounded down to whole 64 KiB
	// pages. Default 32 MiB.
	MemoryBytes uint64
	// Timeout is the deadline of one call. Default 100 ms.
	Timeout time.Duration
	// MaxOutput bounds the bytes a plugin may return. Default 1 MiB.
	MaxOutput int
	// MaxInput bounds the request JSON given to a plugin. Default 4 MiB.
	MaxInput int
	// MaxLogBytes bounds what is kept of stdout, stderr and log calls per
	// call, together. Default 64 KiB.
	MaxLogBytes int
	// MaxCallDepth bounds how deeply a guest's calls may nest. A frame
	// counts as 1 + (parameters+locals)/32, so that functions with
	// thousands of locals cannot turn the bound into hundreds of megabytes
	// of wazero's call stack, which lies outside MemoryBytes and grows by
	// copying; a leaf function (one that calls none of the module's
	// functions) does not count, as it cannot nest further. Deeper calls
	// fail with ErrCallDepth. Default 10,000.
	MaxCallDepth int
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{
		MemoryBytes:  DefaultMemoryBytes,
		Timeout:      DefaultTimeout,
		MaxOutput:    DefaultMaxOutput,
		MaxInput:     DefaultMaxInput,
		MaxLogBytes:  DefaultMaxLogBytes,
		MaxCallDepth: DefaultMaxCallDepth,
	}
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.MaxOutput == 0 {
		l.MaxOutput = d.MaxOutput
	}
	if l.MaxInput == 0 {
		l.MaxInput = d.MaxInput
	}
	if l.MaxLogBytes == 0 {
		l.MaxLogBytes = d.MaxLogBytes
	}
	if l.MaxCallDepth == 0 {
		l.MaxCallDepth = d.MaxCallDepth
	}
	return l
}

// Validate reports the first out-of-range field, wrapping ErrBadLimits. Zero
// fields are valid: they mean the default.
func (l Limits) Validate() error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", ErrBadLimits, field, fmt.Sprintf(format, args...))
	}
	switch {
	case l.MemoryBytes != 0 && l.MemoryBytes < WasmPageSize:
		return bad("MemoryBytes", "is %d, less than one 64 KiB page", l.MemoryBytes)
	case l.MemoryBytes > maxMemoryBytes:
		return bad("MemoryBytes", "is %d, more than the 4 GiB a 32-bit module can address", l.MemoryBytes)
	case l.Timeout < 0:
		return bad("Timeout", "is negative (%v)", l.Timeout)
	case l.Timeout > maxTimeout:
		return bad("Timeout", "is %v, more than %v", l.Timeout, maxTimeout)
	case l.MaxCallDepth < 0:
		return bad("MaxCallDepth", "is negative (%d)", l.MaxCallDepth)
	case l.MaxCallDepth > maxCallDepth:
		return bad("MaxCallDepth", "is %d, more than %d", l.MaxCallDepth, maxCallDepth)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxOutput", l.MaxOutput}, {"MaxInput", l.MaxInput}, {"MaxLogBytes", l.MaxLogBytes}} {
		if f.v < 0 {
			return bad(f.name, "is negative (%d)", f.v)
		}
		if f.v > maxSize {
			return bad(f.name, "is %d, more than 1 GiB", f.v)
		}
	}
	return nil
}

// MemoryPages is MemoryBytes (or its default) in 64 KiB pages, rounded down.
func (l Limits) MemoryPages() uint32 {
	b := l.MemoryBytes
	if b == 0 {
		b = DefaultMemoryBytes
	}
	return uint32(b / WasmPageSize)
}
