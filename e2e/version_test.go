package e2e

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestVersion checks `permhost version` against what the Go toolchain reads
// from the same binary: the module version and, when the build recorded
// one, the VCS revision.
func TestVersion(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", permhostBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	mod := regexp.MustCompile(`(?m)^\tmod\tgithub.com/permhost/permhost\t(\S+)`).FindSubmatch(out)
	if mod == nil {
		t.Fatalf("go version -m names no main module:\n%s", out)
	}
	rev := regexp.MustCompile(`(?m)^\tbuild\tvcs.revision=(\S+)$`).FindSubmatch(out)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := runPermhost(t, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		first, _, _ := strings.Cut(stdout, "\n")
		if want := "permhost " + string(mod[1]); first != want {
			t.Errorf("%v: first line %q, want %q", args, first, want)
		}
		if rev != nil && !strings.Contains(stdout, "revision "+string(rev[1])) {
			t.Errorf("%v: the output does not name revision %s:\n%s", args, rev[1], stdout)
		}
		if rev == nil && !strings.Contains(stdout, "revision unknown") {
			t.Errorf("%v: a build without VCS information claims a revision:\n%s", args, stdout)
		}
	}
}
