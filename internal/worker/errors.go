package worker

import "errors"

// Sentinels wrapped by the [*host.Error]s of this package.
var (
	// ErrCrashed: the child process died (crashed, was killed, exited)
	// or broke the wire protocol; the calls it had fail with it.
	ErrCrashed = errors.New("worker: plugin worker died")
	// ErrRestarting: the child is being replaced after a failure; calls
	// fail at once with it (kind load) until the replacement is ready.
	ErrRestarting = errors.New("worker: plugin worker restarting")
	// ErrStuck: the child did not answer a call by its deadline plus a
	// grace; it was killed.
	ErrStuck = errors.New("worker: plugin worker stuck past the deadline")
	// ErrProtocol: a frame broke the wire protocol.
	ErrProtocol = errors.New("worker: wire protocol violated")
	// ErrUnsupported: process isolation is not available on this system.
	ErrUnsupported = errors.New("worker: process isolation needs Linux")
	// ErrNotEnabled: this program did not call [Enable], so its binary is
	// not known to serve the worker protocol.
	ErrNotEnabled = errors.New("worker: this program does not run plugin workers (no worker.Enable)")
)

// remoteError is an error the child reported, by its message: the child's
// sentinels do not cross the pipe, their text does.
type remoteError struct{ msg string }

func (e *remoteError) Error() string { return e.msg }
