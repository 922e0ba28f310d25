package policy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

const teamRulesTypo = `[[plugin]]
path = "std:team-rules"
timeout = "10s"
[[plugin.config.rules]]
action = "allow"
family = "read"
[[plugin.config.rules]]
acton = "reject"
family = "shell"
`

// A mistake inside a plugin's own configuration, which its configuration
// keys cannot show (team-rules declares "rules"; the typo is inside one),
// is found by the plugin's permhost_check_config at load and reported by
// CheckConfig as the file's mistake, with line, key and suggestion; the
// plugin then fails every call, and Probe says so.
func TestEngineReportsPluginConfigCheck(t *testing.T) {
	cache := t.TempDir()
	engine := func(t *testing.T, file string) *policy.Engine {
		t.Helper()
		cfg, err := config.Parse([]byte(file), "permhost.toml", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: cache, ReloadEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(context.Background()) })
		return e
	}
	pr, err := policy.Shorthand{Kind: "execute", Command: "git status"}.Request()
	if err != nil {
		t.Fatal(err)
	}
	req, err := policy.BuildRequest(pr, "d1", "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	want := `permhost.toml:9: plugin[0].config.rules[1].acton: plugin "team-rules": unknown key (did you mean "action"?)`
	// However long the compile takes (minutes under the race detector),
	// CheckConfig waits for it.
	const wait = "load_wait = \"10m\"\n"

	e := engine(t, wait+teamRulesTypo)
	err = e.CheckConfig(context.Background())
	var list config.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Error() != want {
		t.Fatalf("CheckConfig = %v\nwant %s", err, want)
	}
	probes := e.Probe(context.Background(), req)
	if len(probes) != 1 || probes[0].Plugin != "team-rules" || probes[0].Result.Err == nil || !strings.Contains(probes[0].Result.Err.Error(), "acton") {
		t.Errorf("Probe = %+v, want team-rules failing on its configuration", probes)
	}

	// The compile cache remembers the check: a second start reports it
	// again, however short load_wait is.
	err = engine(t, "load_wait = \"1ms\"\n"+teamRulesTypo).CheckConfig(context.Background())
	if !errors.As(err, &list) || len(list) != 1 || list[0].Error() != want {
		t.Errorf("second start: CheckConfig = %v", err)
	}

	good := engine(t, wait+strings.Replace(teamRulesTypo, "acton", "action", 1))
	if err := good.CheckConfig(context.Background()); err != nil {
		t.Fatalf("the corrected file: CheckConfig = %v", err)
	}
	probes = good.Probe(context.Background(), req)
	if len(probes) != 1 || probes[0].Result.Err != nil || probes[0].Result.Decision.Outcome != abi.OutcomeReject {
		t.Errorf("the corrected file: Probe = %+v, want team-rules rejecting by rules[1]", probes)
	}
}

// What a plugin's check said is taken from the compile cache only for the
// same configuration; for another one CheckConfig waits for the load.
func TestEngineConfigCheckFromTheCache(t *testing.T) {
	wasm, err := filepath.Abs("testdata/endless_init.wasm") // its _initialize never returns
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(must(os.ReadFile(wasm)))
	sha := hex.EncodeToString(sum[:])
	configSum := sha256.Sum256([]byte(`{"mode":"plna"}`))
	for _, tt := range []struct {
		name, check string
		want        string // "" no mistake; "wait" CheckConfig waits for the load
	}{
		{"same config", `{"checks":true,"config":"` + hex.EncodeToString(configSum[:]) + `","problems":[{"key":"mode","message":"is not a mode","suggestion":"plan"}]}`,
			`:6: plugin[0].config.mode: plugin "endless": is not a mode (did you mean "plan"?)`},
		{"other config", `{"checks":true,"config":"00","problems":[]}`, "wait"},
		{"no check export", `{"checks":false}`, ""},
		{"nothing remembered", "", "wait"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			os.WriteFile(filepath.Join(cache, sha+".describe.json"), []byte(`{"name":"endless","configKeys":["mode"]}`), 0o600)
			if tt.check != "" {
				os.WriteFile(filepath.Join(cache, sha+".check.json"), []byte(tt.check), 0o600)
			}
			path := filepath.Join(t.TempDir(), "permhost.toml")
			os.WriteFile(path, []byte("[[plugin]]\nname = \"endless\"\npath = \""+wasm+"\"\ntimeout = \"1m\"\n[plugin.config]\nmode = \"plna\"\n"), 0o600)
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: cache})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err = e.CheckConfig(ctx)
			switch tt.want {
			case "wait":
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("CheckConfig = %v, want it to wait for the load", err)
				}
			case "":
				if err != nil {
					t.Errorf("CheckConfig = %v", err)
				}
			default:
				if err == nil || err.Error() != path+tt.want {
					t.Errorf("CheckConfig = %v\nwant %s%s", err, path, tt.want)
				}
			}
		})
	}
}
