package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testCache is the compile cache every test shares, in-process and in the
// children alike.
var testCache string

func TestMain(m *testing.M) {
	// The children of these tests are this test binary run as the worker:
	// the same code `permhost plugin-worker` runs.
	if len(os.Args) > 2 && os.Args[1] == Command && strings.HasPrefix(os.Args[2], "evil-") {
		os.Exit(runEvil(os.Args[2]))
	}
	if len(os.Args) > 1 && os.Args[1] == Command {
		os.Exit(Serve(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
	Enable()
	if len(os.Args) > 1 && os.Args[1] == parentCommand {
		os.Exit(runTestParent(os.Args[2:]))
	}
	dir, err := os.MkdirTemp("", "permhost-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCache = filepath.Join(dir, "cache")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
