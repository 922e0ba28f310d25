package host

import (
	"errors"
	"fmt"
)

// Kind classifies a plugin failure. The failure policy of a plugin applies to
// every kind alike; the kind is for logs and for the person reading them.
type Kind string

// Kinds of failure.
const (
	// KindLoad: the module could not be read, pinned, verified (it is over
	// a load-time limit), compiled or instantiated (its start function
	// failed), or making it ready took longer than its budget.
	KindLoad Kind = "load"
	// KindABI: the module does not speak a compatible permhost ABI (wrong
	// permhost_abi version, or a missing or mistyped export).
	KindABI Kind = "abi"
	// KindForbiddenImport: the module imports something outside WASI and
	// the Extism host module.
	KindForbiddenImport Kind = "forbidden-import"
	// KindTimeout: the call ran past its deadline and was stopped.
	KindTimeout Kind = "timeout"
	// KindTrap: the module trapped, exited, or misused the host ABI
	// (including any attempt at network access).
	KindTrap Kind = "trap"
	// KindMemory: the module hit its memory limit.
	KindMemory Kind = "memory"
	// KindOutputTooLarge: the output exceeded the output limit.
	KindOutputTooLarge Kind = "output-too-large"
	// KindBadOutput: the output was not a valid Decision for the request:
	// malformed JSON, a wrongly typed field, an unknown outcome or scope, or
	// an option that was not offered.
	KindBadOutput Kind = "bad-output"
	// KindCancelled: the caller's context ended first, or the plugin was
	// closed.
	KindCancelled Kind = "cancelled"
	// KindPluginError: the plugin itself reported failure, with Extism's
	// error_set or a non-zero return from permhost_decide.
	KindPluginError Kind = "plugin-error"
	// KindInputTooLarge: the encoded request exceeded the input limit; the
	// plugin was not called.
	KindInputTooLarge Kind = "input-too-large"
)

// Error is every error returned by this package's Load, Decide and Call.
type Error struct {
	Kind   Kind
	Plugin string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("host: plugin %q: %s: %v", e.Plugin, e.Kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Sentinels wrapped by [*Error].
var (
	// ErrClosed: the plugin was closed before or during the call.
	ErrClosed = errors.New("host: plugin closed")
	// ErrPinMismatch: the module's sha256 differs from the pinned one.
	ErrPinMismatch = errors.New("host: sha256 mismatch")
	// ErrIncompatibleABI: permhost_abi names a version this host cannot run.
	ErrIncompatibleABI = errors.New("host: incompatible ABI version")
	// ErrMissingExport: a required export is absent or has the wrong type.
	ErrMissingExport = errors.New("host: missing export")
	// ErrNetwork: the plugin asked for network access, which is never
	// granted.
	ErrNetwork = errors.New("host: network access is not allowed")
	// ErrBadOptions: the Options passed to Load are invalid.
	ErrBadOptions = errors.New("host: bad options")
	// ErrCacheDir: the compile cache directory is not safe to use.
	ErrCacheDir = errors.New("host: unsafe compile cache directory")
	// ErrCompileTimeout: compiling the module took longer than
	// sandbox.Limits.CompileTimeout; the compile was abandoned.
	ErrCompileTimeout = errors.New("host: compile timed out")
	// ErrAbandoned: Close gave up waiting for guests still running after
	// its grace; they end at their next deadline check, unwatched.
	ErrAbandoned = errors.New("host: guests abandoned at close")
)

// errPanic is wrapped by the error of a panic in the host's own code
// around a plugin (a bug, or wazero's): the plugin fails, the process
// does not.
var errPanic = errors.New("host: internal panic")

// KindOf returns the kind of err when it is or wraps an [*Error], and "" when
// it is not.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}
