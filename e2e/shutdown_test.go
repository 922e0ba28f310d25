package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Normal ends of permhost run log no error: a turn that ends well (the
// connection used to be closed under its read loop, which logged "ERROR
// reading from the agent failed ... file already closed" in about one run
// in ten), and an agent that exits while a plugin is still loading (which
// logged "ERROR plugin failed to load ... context canceled").
func TestRunShutdownLogsNoError(t *testing.T) {
	t.Parallel()
	agent := runAgent(t)
	t.Run("a turn that ends well", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, slowPlugin(`{"outcome":"allow"}`, 0))
		for i := range 5 {
			code, _, stderr := e.run([]string{"--log-level", "info"}, agent, "-report", e.report)
			if code != 0 || !strings.Contains(stderr, "turn ended: end_turn") {
				t.Fatalf("run %d: exit %d\n%s", i, code, stderr)
			}
			if strings.Contains(stderr, "level=ERROR") || strings.Contains(stderr, "level=WARN") {
				t.Fatalf("run %d logged a failure on a normal end:\n%s", i, stderr)
			}
		}
	})
	t.Run("the agent exits while a plugin loads", func(t *testing.T) {
		t.Parallel()
		endless := filepath.Join(repoRoot, "policy", "testdata", "endless_init.wasm") // its _initialize never returns
		e := newRunEnv(t, fmt.Sprintf("\n[[plugin]]\nname = \"endless\"\npath = %q\ntimeout = \"1m\"\n", endless))
		code, _, stderr := e.run([]string{"--log-level", "info"}, agent, "-mode", "crash")
		if code != 3 || !strings.Contains(stderr, "exited with status 3") {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		if strings.Contains(stderr, "level=ERROR") {
			t.Fatalf("an agent exiting while a plugin loads logged an error:\n%s", stderr)
		}
	})
}
