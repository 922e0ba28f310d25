package policy_test

import (
	"testing"

	"github.com/permhost/permhost/policy"
)

// TestLogCwd: the decision log records a session's project only when the
// agent's session/new named it as an absolute path.
func TestLogCwd(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/home/dev/project", "/home/dev/project"},
		{"/home/dev/project/../other/", "/home/dev/other"},
		{"project", ""},
		{"", ""},
		{"./x", ""},
	} {
		if got := policy.LogCwd(tc.in); got != tc.want {
			t.Errorf("LogCwd(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
