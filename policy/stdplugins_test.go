package policy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/stdplugins"
	"github.com/permhost/permhost/policy"
	"github.com/permhost/permhost/sandbox"
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

// TestStandardConfigKeys holds internal/stdplugins/CONFIGKEYS, which lets
// a first run check a standard plugin's configuration keys before the
// agent starts without compiling it, to what each embedded module's own
// permhost_describe declares (go test ./policy -run TestStandardConfigKeys
// -update rewrites it; `make plugins` does).
func TestStandardConfigKeys(t *testing.T) {
	names := stdplugins.Names()
	declared := make([][]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names { // in parallel: a Go plugin compiles for seconds
		wg.Go(func() {
			wasm, _ := stdplugins.Module(name)
			p, err := host.Load(context.Background(), host.Options{Name: name, Wasm: wasm, CacheDir: "off", PoolSize: 1,
				Limits: sandbox.Limits{Timeout: 30 * time.Second}})
			if err != nil {
				errs[i] = err
				return
			}
			declared[i] = p.Info().ConfigKeys
			p.Close(context.Background())
		})
	}
	wg.Wait()

	var b strings.Builder
	b.WriteString("# NAME SHA256 CONFIG-KEYS... (written by: go test ./policy -run TestStandardConfigKeys -update)\n")
	for i, name := range names {
		if errs[i] != nil {
			t.Fatalf("%s: %v", name, errs[i])
		}
		sum, _ := stdplugins.SHA256(name)
		b.WriteString(strings.TrimSpace(strings.Join(append([]string{name, sum}, declared[i]...), " ")) + "\n")
		if *update {
			continue
		}
		got, ok := stdplugins.ConfigKeys(name, sum)
		switch {
		case !ok:
			t.Errorf("CONFIGKEYS has no line for %s at %s: refresh it with `make plugins`", name, sum)
		case !slices.Equal(got, declared[i]) && len(got)+len(declared[i]) > 0:
			t.Errorf("CONFIGKEYS says %s declares %q, the module says %q: refresh it with `make plugins`", name, got, declared[i])
		}
	}
	if *update {
		path := filepath.Join("..", "internal", "stdplugins", stdplugins.ConfigKeysFile)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
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
