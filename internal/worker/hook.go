package worker

import (
	"os"
	"strings"
)

// Test hooks: ways for a child to die that no well-behaved plugin can
// produce once the sandbox holds, so that the tests can show what the wall
// does with each. Off unless the parent's environment enables them; the
// parent then passes the variable on (it is the only one besides
// GOMAXPROCS). A request selects one by its tool call title.
const (
	hookEnv    = "PERMHOST_WORKER_TEST_HOOK"
	hookPrefix = "permhost-worker-test: "
)

// hooksEnabled is read once by the child.
func hooksEnabled() bool { return os.Getenv(hookEnv) == "1" }

// hookSink keeps the crash hook's allocation reachable.
var hookSink []byte

// runHook acts on a hook title and reports whether it was one; the hooks
// that return at all return only for "none".
func runHook(title string) bool {
	name, ok := strings.CutPrefix(title, hookPrefix)
	if !ok {
		return false
	}
	switch name {
	case "crash":
		// A fatal error of the Go runtime, which no recover stops: an
		// allocation past RLIMIT_AS ("fatal error: runtime: out of memory"),
		// as wazero growing a table without bound once did.
		hookSink = make([]byte, 1<<40)
		hookSink[len(hookSink)-1] = 1
	case "exit":
		os.Exit(7)
	case "hang":
		// A guest stuck where no deadline check runs: a core at 100% and no
		// answer, ever.
		for n := 0; ; n++ {
			if n < 0 {
				hookSink = nil
			}
		}
	}
	return false
}
