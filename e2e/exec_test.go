package e2e

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"testing"
)

// runPermhost runs the real binary in the repository root and returns its
// exit status, stdout and stderr.
func runPermhost(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	return runPermhostIn(t, repoRoot, nil, args...)
}

// runPermhostIn runs the real binary in dir ("" for the test's own) with
// stdin (nil for none) and returns its exit status, stdout and stderr. A
// binary that cannot be started fails the test.
func runPermhostIn(t testing.TB, dir string, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(permhostBin, args...)
	cmd.Dir, cmd.Stdin = dir, stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}
