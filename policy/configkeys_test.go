package policy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

// scriptedConfig is a permhost.toml whose plugin (testdata/wasm/scripted,
// which declares configKeys decision and delay_ms) is given config.
func scriptedConfig(t *testing.T, config string) string {
	t.Helper()
	wasm, err := filepath.Abs("../testdata/wasm/scripted.wasm")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "permhost.toml")
	data := "[[plugin]]\nname = \"scripted\"\npath = \"" + wasm + "\"\ntimeout = \"5s\"\n[plugin.config]\n" + config
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A key the plugin does not declare is a mistake of the file, reported by
// CheckConfig with its line and a suggestion; the plugin counts as failed
// to load, so its failure policy (closed) decides every request.
func TestEngineCheckConfig(t *testing.T) {
	path := scriptedConfig(t, "decision = '{\"outcome\":\"allow\"}'\ndelay_mss = 0\n")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs acptest.SyncBuffer
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: "off",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	err = e.CheckConfig(context.Background())
	var list config.ErrorList
	if !errors.As(err, &list) || len(list) != 1 {
		t.Fatalf("CheckConfig = %v, want one mistake", err)
	}
	if want := path + `:7: plugin[0].config.delay_mss: unknown key for plugin "scripted" (did you mean "delay_ms"?)`; list[0].Error() != want {
		t.Errorf("mistake %q, want %q", list[0], want)
	}
	v := e.Run(context.Background(), abi.Request{ABI: abi.Current, Options: []abi.Option{{OptionID: "a", Kind: abi.OptionAllowOnce}, {OptionID: "r", Kind: abi.OptionRejectOnce}}})
	if v.Outcome == abi.OutcomeAllow || v.Fallback == "" || len(v.Votes) != 1 || !errors.Is(v.Votes[0].Err, config.ErrInvalid) {
		t.Errorf("a misconfigured plugin decided: %s (fallback %q, votes %+v)", v.Outcome, v.Fallback, v.Votes)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the mistake CheckConfig reports was also logged as an error:\n%s", logs.String())
	}
}

func TestEngineCheckConfigPasses(t *testing.T) {
	for name, cfgText := range map[string]string{
		"declared keys": "decision = '{\"outcome\":\"allow\"}'\ndelay_ms = 0\n",
		"no config":     "",
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Load(scriptedConfig(t, cfgText))
			if err != nil {
				t.Fatal(err)
			}
			e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: "off"})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(context.Background())
			if err := e.CheckConfig(context.Background()); err != nil {
				t.Fatalf("CheckConfig = %v", err)
			}
		})
	}
}

// A file that has other mistakes gets its plugins' keys checked too, so
// that the report names them all.
func TestCheckPluginKeysOfAPartialConfig(t *testing.T) {
	path := scriptedConfig(t, "decison = 'x'\ndelay_ms = 0\n")
	data, _ := os.ReadFile(path)
	os.WriteFile(path, append([]byte("strategy = \"parallel\"\n"), data...), 0o600)
	cfg, err := config.Load(path)
	var list config.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || cfg == nil {
		t.Fatalf("Load = %v, %v", cfg, err)
	}
	got := policy.CheckPluginKeys(context.Background(), cfg.Plugins, "off")
	if len(got) != 1 || got[0].Line != 7 || got[0].Key != "plugin[0].config.decison" || !strings.Contains(got[0].Msg, `did you mean "decision"?`) {
		t.Fatalf("CheckPluginKeys = %v", got)
	}
	all := config.Errors(append(list, got...)).Error()
	if want := path + ":1: strategy: \"parallel\" is not one of sequential, race\n" + path + ":7: plugin[0].config.decison"; !strings.HasPrefix(all, want) {
		t.Errorf("report:\n%s\nwant it to start\n%s", all, want)
	}
}

// With the plugin's description remembered by the compile cache, the keys
// are checked at once, before the plugin has loaded (here it never does);
// without it, CheckConfig waits for the load.
func TestEngineCheckConfigFromTheCache(t *testing.T) {
	wasm, err := filepath.Abs("testdata/endless_init.wasm") // its _initialize never returns
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "permhost.toml")
	os.WriteFile(path, []byte("[[plugin]]\nname = \"endless\"\npath = \""+wasm+"\"\ntimeout = \"1m\"\n[plugin.config]\nmod = \"plan\"\n"), 0o600)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	newEngine := func() *policy.Engine {
		e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(context.Background()) })
		return e
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := newEngine().CheckConfig(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("without a remembered description CheckConfig = %v, want it to wait for the load", err)
	}

	sum := sha256.Sum256(must(os.ReadFile(wasm)))
	os.WriteFile(filepath.Join(cache, hex.EncodeToString(sum[:])+".describe.json"), []byte(`{"name":"endless","configKeys":["mode"]}`), 0o600)
	e := newEngine()
	err = e.CheckConfig(context.Background())
	var list config.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Key != "plugin[0].config.mod" || !strings.Contains(list[0].Msg, `did you mean "mode"?`) {
		t.Fatalf("CheckConfig = %v", err)
	}
	select {
	case <-e.Ready():
		t.Fatal("the plugin loaded: the check did not come from the cache")
	default:
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
