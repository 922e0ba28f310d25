package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/stdplugins"
)

// permhost plugins describes standard plugins from their own
// permhost_describe, with the sha256 a configuration pins. (The small C and
// AssemblyScript ones here: a -race test binary compiles a Go plugin for
// tens of seconds; e2e lists them all through the real binary.)
func TestPluginsListsStandardPlugins(t *testing.T) {
	cache := t.TempDir()
	for _, round := range []string{"loaded", "from the compile cache"} {
		code, stdout, stderr := runMain(t, "plugins", "--json", "--cache-dir", cache, "no-force-push", "std:readonly-as")
		if code != exitOK || stderr != "" {
			t.Fatalf("%s: exit %d, stderr %q", round, code, stderr)
		}
		var got []pluginEntry
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("%s: %v\n%s", round, err, stdout)
		}
		if len(got) != 2 {
			t.Fatalf("%s: %d entries: %s", round, len(got), stdout)
		}
		nfp, ro := got[0], got[1]
		sum, _ := stdplugins.SHA256("no-force-push")
		if nfp.Path != "std:no-force-push" || nfp.SHA256 != sum || !strings.Contains(nfp.Description, "git push --force") ||
			len(nfp.ConfigKeys) != 1 || nfp.ConfigKeys[0] != "allow_force_with_lease" || nfp.Version == "" {
			t.Errorf("%s: no-force-push = %+v", round, nfp)
		}
		if ro.Name != "readonly-as" || !strings.Contains(ro.Description, "AssemblyScript") || ro.ConfigKeys == nil || len(ro.ConfigKeys) != 0 {
			t.Errorf("%s: readonly-as = %+v", round, ro)
		}
	}

	// A NAME given prints its documentation, its README rendered: the
	// configuration key explained, the code without its fences.
	code, stdout, _ := runMain(t, "plugins", "--cache-dir", cache, "no-force-push")
	for _, want := range []string{"std:no-force-push (version ", "  config keys: allow_force_with_lease\n",
		"\n# no-force-push\n", "allow_force_with_lease = true", "\n    [[plugin]]\n", "Built with rustc 1."} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("text output lacks %q (exit %d):\n%s", want, code, stdout)
		}
	}
	if strings.Contains(stdout, "```") {
		t.Errorf("the documentation is not rendered:\n%s", stdout)
	}
	// The list alone says where the documentation is.
	if _, stdout, _ := runMain(t, "plugins", "--cache-dir", cache); strings.Contains(stdout, "# no-force-push") || !strings.Contains(stdout, "'permhost plugins NAME' prints a plugin's documentation") {
		t.Errorf("plugins without a NAME:\n%s", stdout)
	}

	code, _, stderr := runMain(t, "plugins", "team-rule")
	if code != exitUsage || !strings.Contains(stderr, `no such standard plugin "team-rule"`) || !strings.Contains(stderr, "team-rules") {
		t.Errorf("unknown name: exit %d, stderr %q", code, stderr)
	}
}

// A test file may name a standard plugin: permhost test runs its cases
// against the module inside the binary.
func TestTestFileWithStandardPlugin(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, "tests.toml", `plugin = "std:no-force-push"

[defaults]
timeout = "30s"

[[case]]
name = "a forced push is rejected"
kind = "execute"
command = "git push --force origin main"
expect = "reject"

[[case]]
name = "a plain push is not decided"
kind = "execute"
command = "git push origin main"
expect = "abstain"
`)
	code, stdout, stderr := runMain(t, "test", "--cache-dir", dir, file)
	if code != exitOK || !strings.Contains(stdout, "2 passed, 0 failed") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	bad := writeFile(t, "bad.toml", "plugin = \"std:no-force-pus\"\n[[case]]\nkind = \"execute\"\ncommand = \"ls\"\nexpect = \"abstain\"\n")
	code, _, stderr = runMain(t, "test", "--cache-dir", dir, bad)
	if code != exitUsage || !strings.Contains(stderr, `no such standard plugin "no-force-pus"`) {
		t.Errorf("unknown standard plugin: exit %d, stderr %q", code, stderr)
	}
}
