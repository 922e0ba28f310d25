package policy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/stdplugins"
	"github.com/permhost/permhost/policy"
)

// A configuration that names a standard plugin (path = "std:NAME") runs
// the module inside permhost: no file, pinned by its sha256, and its
// configuration keys checked against its own description like a file's.
func TestEngineRunsStandardPlugin(t *testing.T) {
	sum, err := stdplugins.SHA256("no-force-push")
	if err != nil {
		t.Fatal(err)
	}
	engine := func(t *testing.T, key string) *policy.Engine {
		t.Helper()
		cfg, err := config.Parse([]byte(fmt.Sprintf(`
[[plugin]]
path = "std:no-force-push"
sha256 = %q
timeout = "10s"
[plugin.config]
%s = true
`, sum, key)), "permhost.toml", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: t.TempDir(), ReloadEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(context.Background()) })
		return e
	}

	e := engine(t, "allow_force_with_lease")
	if err := e.CheckConfig(context.Background()); err != nil {
		t.Fatalf("CheckConfig: %v", err)
	}
	pr, err := policy.Shorthand{Kind: "execute", Command: "git push --force origin main"}.Request()
	if err != nil {
		t.Fatal(err)
	}
	req, err := policy.BuildRequest(pr, "d1", "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	v := e.Run(context.Background(), req)
	if v.Outcome != abi.OutcomeReject || v.DecidedBy != "no-force-push" {
		t.Errorf("git push --force: %s by %q: %s", v.Outcome, v.DecidedBy, v.Reason)
	}

	// A misspelt key of the standard plugin's config is the file's mistake.
	err = engine(t, "allow_force_with_leas").CheckConfig(context.Background())
	if err == nil || !strings.Contains(err.Error(), `plugin[0].config.allow_force_with_leas`) || !strings.Contains(err.Error(), `"allow_force_with_lease"`) {
		t.Errorf("CheckConfig with a misspelt key = %v", err)
	}
}

// A first run (nothing in the compile cache) checks a standard plugin's
// configuration keys from CONFIGKEYS at once: CheckConfig reports the typo
// even when load_wait is over before the plugin could have compiled.
func TestStandardConfigKeysCheckedBeforeLoad(t *testing.T) {
	cfg, err := config.Parse([]byte(`
load_wait = "1ms"
[[plugin]]
path = "std:protect-secrets"
[plugin.config]
globz = [".env"]
`), "permhost.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: t.TempDir(), ReloadEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	err = e.CheckConfig(context.Background())
	if err == nil || !strings.Contains(err.Error(), "globz") {
		t.Fatalf("CheckConfig = %v, want the unknown key globz reported", err)
	}
	select {
	case <-e.Ready():
		t.Log("the plugin had loaded already; the check did not need CONFIGKEYS")
	default:
	}
}
