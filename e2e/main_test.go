package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// permhostBin is the permhost binary under test, built once by TestMain
// (or named by PERMHOST_E2E_BIN); agentsDir is where the test agents are
// built.
var permhostBin, agentsDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "permhost-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	permhostBin, agentsDir = filepath.Join(dir, "permhost"), dir
	// Every permhost the tests start shares one compile cache, kept between
	// runs under build/: compiling a 3 MB Go plugin takes seconds (tens of
	// seconds in a -race binary), loading it from the cache milliseconds.
	if os.Getenv("XDG_CACHE_HOME") == "" {
		if abs, err := filepath.Abs(filepath.Join("..", "build", "e2e-cache")); err == nil {
			os.Setenv("XDG_CACHE_HOME", abs)
		}
	}
	if bin := os.Getenv("PERMHOST_E2E_BIN"); bin != "" {
		// Another binary under test (one built from an older commit, to
		// see a test fail without the fix it checks).
		abs, err := filepath.Abs(bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		permhostBin = abs
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	// -buildvcs=auto stamps the revision in a checkout (TestVersion reads it)
	// even where GOFLAGS turns stamping off.
	args := []string{"build", "-buildvcs=auto", "-o", permhostBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../cmd/permhost")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building permhost:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
