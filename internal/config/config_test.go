package config_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/edkey"
	"github.com/permhost/permhost/internal/stdplugins"
	"github.com/permhost/permhost/sandbox"
)

// emptyModule is the smallest WebAssembly module: its magic and version.
const emptyModule = "\x00asm\x01\x00\x00\x00"

// write puts name → content files in a temp dir and returns the dir.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".wasm") && content == "x" {
			content = emptyModule // a module for the configuration, never loaded
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const full = `strategy = "race"
person_timeout = "30s"
load_wait = "45s"

[headless]
on_undecided = "prompt"

[log]
path = "decisions.jsonl"

[[plugin]]
name = "no-rm"
path = "no-rm.wasm"
sha256 = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
timeout = "250ms"
memory = "16MiB"
failure_policy = "monitor"
layer = "team"
[plugin.config]
paths = [".env", "*.pem"]
nested = { deep = 3 }

[[plugin]]
path = "second.wasm"
compile_timeout = "30s"
init_timeout = "2s"
[plugin.limits]
functions = 200000
module_bytes = "64MiB"
br_table_targets = 20000
`

func TestLoadFull(t *testing.T) {
	dir := write(t, map[string]string{"permhost.toml": full, "no-rm.wasm": "x", "second.wasm": "x"})
	cfg, err := config.Load(filepath.Join(dir, "permhost.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Strategy != "race" || cfg.PersonTimeout != 30*time.Second || cfg.LoadWait != 45*time.Second || cfg.OnUndecided != "prompt" {
		t.Errorf("top level = %+v", cfg)
	}
	if cfg.LogPath != filepath.Join(dir, "decisions.jsonl") {
		t.Errorf("LogPath = %q, want it relative to the file", cfg.LogPath)
	}
	if len(cfg.Plugins) != 2 {
		t.Fatalf("plugins = %d", len(cfg.Plugins))
	}
	p := cfg.Plugins[0]
	want := config.Plugin{Name: "no-rm", Path: filepath.Join(dir, "no-rm.wasm"),
		SHA256:  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		Timeout: 250 * time.Millisecond, Memory: 16 << 20, FailurePolicy: "monitor", Layer: "team", Isolation: "in-process",
		File: filepath.Join(dir, "permhost.toml"), Key: "plugin[0]", Line: 11, ConfigLines: map[string]int{"paths": 20, "nested": 21},
		ConfigKeyLines: map[string]int{"paths": 20, "nested": 21}}
	gotCfg := string(p.Config)
	p.Config = nil
	if !reflect.DeepEqual(p, want) {
		t.Errorf("plugin[0] = %+v\nwant %+v", p, want)
	}
	if gotCfg != `{"nested":{"deep":3},"paths":[".env","*.pem"]}` {
		t.Errorf("plugin[0].config = %s", gotCfg)
	}
	d := cfg.Plugins[1]
	if d.Name != "second" || d.Timeout != 100*time.Millisecond || d.Memory != 32<<20 || d.FailurePolicy != "closed" || d.Layer != "user" || d.Config != nil {
		t.Errorf("defaults not applied: %+v", d)
	}
	wantLimits := sandbox.Limits{CompileTimeout: 30 * time.Second, InitTimeout: 2 * time.Second,
		MaxFunctions: 200000, MaxModuleBytes: 64 << 20, MaxBrTableTargets: 20000}
	if d.Limits != wantLimits {
		t.Errorf("plugin[1].Limits = %+v\nwant %+v", d.Limits, wantLimits)
	}
}

// TestPluginLimitKeys: every load-time limit of sandbox.Limits has a key
// in [plugin.limits], named after it, and each key sets its own field.
func TestPluginLimitKeys(t *testing.T) {
	notLoadTime := map[string]bool{"MaxOutput": true, "MaxInput": true, "MaxLogBytes": true, "MaxCallDepth": true}
	typ := reflect.TypeOf(sandbox.Limits{})
	keyed := map[string]bool{}
	for _, k := range config.PluginLimitKeys {
		keyed[k.Limit] = true
		f, ok := typ.FieldByName(k.Limit)
		if !ok {
			t.Errorf("%s: no field sandbox.Limits.%s", k.Key, k.Limit)
			continue
		}
		// functions = 7 sets exactly MaxFunctions.
		value := "7"
		if k.Size {
			value = `"7B"`
		}
		cfg, err := config.Parse([]byte("[[plugin]]\npath = \"p.wasm\"\n[plugin.limits]\n"+k.Key+" = "+value+"\n"), "t.toml", write(t, map[string]string{"p.wasm": "x"}))
		if err != nil {
			t.Errorf("%s: %v", k.Key, err)
			continue
		}
		var want sandbox.Limits
		reflect.ValueOf(&want).Elem().FieldByIndex(f.Index).SetInt(7)
		if got := cfg.Plugins[0].Limits; got != want {
			t.Errorf("%s = %s set %+v, want only %s", k.Key, value, got, k.Limit)
		}
	}
	for i := range typ.NumField() {
		if f := typ.Field(i); strings.HasPrefix(f.Name, "Max") && !notLoadTime[f.Name] && !keyed[f.Name] {
			t.Errorf("sandbox.Limits.%s has no [plugin.limits] key", f.Name)
		}
	}
}

func TestEmptyFileIsATransparentDefault(t *testing.T) {
	cfg, err := config.Parse(nil, "empty.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Strategy != "sequential" || cfg.OnUndecided != "reject" || cfg.OnQuestion != "cancel" || len(cfg.Plugins) != 0 || cfg.LogPath != "" {
		t.Errorf("defaults = %+v", cfg)
	}
}

// TestMistakes checks that each kind of mistake names the file, the line and
// the key, and says what is wrong.
func TestMistakes(t *testing.T) {
	plugin := "[[plugin]]\nname = \"p\"\npath = \"p.wasm\"\n"
	tests := []struct {
		name    string
		toml    string
		line    int
		key     string
		message string
	}{
		{"unknown top-level key", "strategy = \"race\"\nstrategyy = 1\n", 2, "strategyy", `unknown key (did you mean "strategy"?)`},
		{"unknown plugin key", plugin + "timout = \"1s\"\n", 4, "plugin[0].timout", `did you mean "timeout"?`},
		{"unknown key in the second plugin", plugin + strings.Replace(plugin, `"p"`, `"q"`, 1) + "layr = \"user\"\n", 7, "plugin[1].layr", `did you mean "layer"?`},
		{"bad duration", plugin + "timeout = \"100 ms\"\n", 4, "plugin[0].timeout", `"100 ms" is not a duration`},
		{"duration out of range", plugin + "timeout = \"2h\"\n", 4, "plugin[0].timeout", "out of range"},
		{"bad size", plugin + "memory = \"32 potatoes\"\n", 4, "plugin[0].memory", `"32 potatoes" is not a size`},
		{"bad compile timeout", plugin + "compile_timeout = \"forever\"\n", 4, "plugin[0].compile_timeout", `"forever" is not a duration`},
		{"init timeout out of range", plugin + "init_timeout = \"1h\"\n", 4, "plugin[0].init_timeout", "out of range"},
		{"unknown limit", plugin + "[plugin.limits]\nfunctionz = 5\n", 5, "plugin[0].limits.functionz", `did you mean "functions"?`},
		{"limit not an integer", plugin + "[plugin.limits]\nfunctions = \"many\"\n", 5, "plugin[0].limits.functions", "want an integer, got a string"},
		{"limit out of range", plugin + "[plugin.limits]\nglobals = 0\n", 5, "plugin[0].limits.globals", "0 is out of range [1, 1073741824]"},
		{"limit size", plugin + "[plugin.limits]\ndata_bytes = \"lots\"\n", 5, "plugin[0].limits.data_bytes", `"lots" is not a size`},
		{"limits not a table", plugin + "limits = 5\n", 4, "plugin[0].limits", "want a table"},
		{"size too small", plugin + "memory = \"1KiB\"\n", 4, "plugin[0].memory", "out of range"},
		{"no load wait", "load_wait = \"0s\"\n", 1, "load_wait", "out of range [1ms, 10m0s]"},
		{"unknown strategy", "strategy = \"parallel\"\n", 1, "strategy", `"parallel" is not one of sequential, race`},
		{"unknown headless policy", "[headless]\non_undecided = \"allow\"\n", 2, "headless.on_undecided", "is not one of reject, cancel, prompt"},
		{"a question is never allowed headless", "[headless]\non_undecided = \"reject\"\non_question = \"allow\"\n", 3, "headless.on_question", "is not one of cancel, reject, prompt"},
		{"unknown failure policy", plugin + "failure_policy = \"open\"\n", 4, "plugin[0].failure_policy", "is not one of closed, abstain, monitor"},
		{"unknown layer", plugin + "layer = \"root\"\n", 4, "plugin[0].layer", "is not one of admin, team, user"},
		{"missing plugin file", "[[plugin]]\nname = \"gone\"\npath = \"gone.wasm\"\n", 3, "plugin[0].path", "no such file or directory"},
		{"missing path key", "[[plugin]]\nname = \"nopath\"\n", 1, "plugin[0]", `missing key "path"`},
		{"bad sha256", plugin + "sha256 = \"abc\"\n", 4, "plugin[0].sha256", "is not a sha256"},
		{"wrong type", plugin + "timeout = 100\n", 4, "plugin[0].timeout", "want a string, got an integer"},
		{"plugin as a single table", "[plugin]\npath = \"p.wasm\"\n", 1, "plugin", "want an array of tables ([[plugin]])"},
		{"config not a table", plugin + "config = \"paths\"\n", 4, "plugin[0].config", "want a table"},
		{"duplicate plugin name", plugin + plugin, 5, "plugin[1].name", `plugin name "p" is already used by plugin[0]`},
		{"log key file missing", "[log]\npath = \"d.jsonl\"\nkey = \"gone.key\"\n", 3, "log.key", "no such file or directory"},
		{"log key malformed", "[log]\npath = \"d.jsonl\"\nkey = \"p.wasm\"\n", 3, "log.key", `edkey: malformed key: want "ed25519:" followed by base64`},
		{"log max_size without path", "[log]\nmax_size = \"1MiB\"\n", 1, "log", "key and max_size need path"},
		{"log max_size too small", "[log]\npath = \"d.jsonl\"\nmax_size = \"1KiB\"\n", 3, "log.max_size", "out of range [64KiB, 1TiB]"},
		{"unknown key in plugin.config's neighbour table", "[log]\npath = \"x\"\nrotate = true\n", 3, "log.rotate", "unknown key"},
		{"unknown standard plugin", "[[plugin]]\npath = \"std:team-rule\"\n", 2, "plugin[0].path", `"std:team-rule" is not a standard plugin (did you mean "team-rules"?)`},
		{"standard plugin far from any name", "[[plugin]]\npath = \"std:firewall\"\n", 2, "plugin[0].path", "(standard plugins: explainer, no-force-push, plan-mode, protect-secrets, readonly-as, team-rules)"},
		{"standard plugin pinned to other bytes", "[[plugin]]\npath = \"std:plan-mode\"\nsha256 = \"" + strings.Repeat("ab", 32) + "\"\n", 3, "plugin[0].sha256", "std:plan-mode is sha256 "},
		{"TOML syntax", "strategy = \"race\n", 1, "", "TOML syntax"},
		{"duplicate key", "strategy = \"race\"\nstrategy = \"race\"\n", 2, "", "TOML syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, map[string]string{"permhost.toml": tt.toml, "p.wasm": "x"})
			path := filepath.Join(dir, "permhost.toml")
			_, err := config.Load(path)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			var ce *config.Error
			if !errors.As(err, &ce) || !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("error %v is not a *config.Error", err)
			}
			if ce.File != path || ce.Line != tt.line || (tt.key != "" && ce.Key != tt.key) {
				t.Errorf("got file %q line %d key %q, want line %d key %q (%v)", ce.File, ce.Line, ce.Key, tt.line, tt.key, err)
			}
			if !strings.Contains(err.Error(), tt.message) || !strings.HasPrefix(err.Error(), path+":") {
				t.Errorf("message %q lacks %q or the file", err, tt.message)
			}
			// One mistake is reported once, not again as what follows from it.
			var list config.ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Errorf("want an ErrorList of one mistake, got %#v", err)
			}
		})
	}
}

// TestEveryMistakeAtOnce: a file with several mistakes reports each, in
// the order of the file, each with its file, line and key; a value of the
// wrong type is one mistake, not also a bad duration.
func TestEveryMistakeAtOnce(t *testing.T) {
	const file = `strategy = "parallel"
person_timeout = 30

[[plugin]]
name = "a"
path = "p.wasm"
timout = "1s"
memory = "lots"

[[plugin]]
name = "a"
path = "missing.wasm"
layer = "root"
`
	dir := write(t, map[string]string{"permhost.toml": file, "p.wasm": "x"})
	path := filepath.Join(dir, "permhost.toml")
	cfg, err := config.Load(path)
	var list config.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("err = %v, want an ErrorList", err)
	}
	want := []struct {
		line int
		key  string
		msg  string
	}{
		{1, "strategy", `"parallel" is not one of sequential, race`},
		{2, "person_timeout", "want a string, got an integer"},
		{7, "plugin[0].timout", `unknown key (did you mean "timeout"?)`},
		{8, "plugin[0].memory", `"lots" is not a size`},
		{11, "plugin[1].name", `plugin name "a" is already used by plugin[0]`},
		{12, "plugin[1].path", "no such file or directory"},
		{13, "plugin[1].layer", `"root" is not one of admin, team, user`},
	}
	if len(list) != len(want) {
		t.Fatalf("%d mistakes, want %d:\n%v", len(list), len(want), err)
	}
	for i, w := range want {
		e := list[i]
		if e.File != path || e.Line != w.line || e.Key != w.key || !strings.Contains(e.Msg, w.msg) {
			t.Errorf("mistake %d = %v, want %s:%d: %s: %s", i, e, path, w.line, w.key, w.msg)
		}
	}
	if got := strings.Count(err.Error(), "\n") + 1; got != len(want) {
		t.Errorf("Error() has %d lines, want one per mistake:\n%v", got, err)
	}
	// What could be read comes back, for further checks.
	if cfg == nil || len(cfg.Plugins) != 2 || cfg.Plugins[0].Path != filepath.Join(dir, "p.wasm") || cfg.Plugins[0].Key != "plugin[0]" {
		t.Errorf("partial config = %+v", cfg)
	}
}

// The report is bounded: past MaxErrors mistakes it counts the rest.
func TestManyMistakesAreBounded(t *testing.T) {
	var b strings.Builder
	for i := range config.MaxErrors + 5 {
		fmt.Fprintf(&b, "unknown%d = 1\n", i)
	}
	_, err := config.Parse([]byte(b.String()), "many.toml", t.TempDir())
	var list config.ErrorList
	if !errors.As(err, &list) || len(list) != config.MaxErrors+5 {
		t.Fatalf("err = %v", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != config.MaxErrors+1 || lines[len(lines)-1] != "many.toml: and 5 more mistakes" {
		t.Errorf("Error() ends %q after %d lines", lines[len(lines)-1], len(lines))
	}
}

func TestUnreadableFile(t *testing.T) {
	_, err := config.Load(filepath.Join(t.TempDir(), "nope.toml"))
	if err == nil || !strings.Contains(err.Error(), "nope.toml: cannot read") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(full))
	f.Add([]byte("[[plugin]]\npath=\"a\"\n[plugin.config]\nx=1\n"))
	f.Add([]byte("strategy = 3"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data, "fuzz.toml", dir)
		if err == nil && cfg == nil {
			t.Fatal("nil config without error")
		}
		if err != nil && !errors.Is(err, config.ErrInvalid) {
			t.Fatalf("error not wrapped: %v", err)
		}
	})
}

// TestStandardPlugin: path = "std:NAME" names a plugin inside the binary;
// its name defaults to NAME, a pin of its real sha256 holds, and Module and
// Digest give its bytes without a file.
func TestStandardPlugin(t *testing.T) {
	sum, err := stdplugins.SHA256("team-rules")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(`
[[plugin]]
path = "std:team-rules"
sha256 = "`+strings.ToUpper(sum)+`"

[[plugin]]
name = "secrets"
path = "std:protect-secrets"
`), "permhost.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Plugins[0]
	if p.Name != "team-rules" || p.Std != "team-rules" || p.Path != "std:team-rules" || p.SHA256 != sum {
		t.Errorf("plugin[0] = name %q std %q path %q sha256 %q", p.Name, p.Std, p.Path, p.SHA256)
	}
	path, wasm := p.Module()
	want, _ := stdplugins.Module("team-rules")
	if path != "" || !bytes.Equal(wasm, want) {
		t.Errorf("Module() = %q and %d bytes, want the embedded module", path, len(wasm))
	}
	if d, err := p.Digest(); err != nil || d != sum {
		t.Errorf("Digest() = %q, %v; want %s", d, err, sum)
	}
	if q := cfg.Plugins[1]; q.Name != "secrets" || q.Std != "protect-secrets" {
		t.Errorf("plugin[1] = name %q std %q", q.Name, q.Std)
	}
	// A file is still a file.
	dir := write(t, map[string]string{"p.wasm": "x"})
	cfg, err = config.Parse([]byte("[[plugin]]\npath = \"p.wasm\"\n"), "permhost.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if path, wasm := cfg.Plugins[0].Module(); path != filepath.Join(dir, "p.wasm") || wasm != nil || cfg.Plugins[0].Std != "" {
		t.Errorf("a file plugin's Module() = %q, %d bytes", path, len(wasm))
	}
}

// TestPluginLimitKeysDocumented: docs/abi.md's "Limits a plugin must fit"
// lists every [plugin.limits] key with its default.
func TestPluginLimitKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "abi.md"))
	if err != nil {
		t.Fatal(err)
	}
	defaults := reflect.ValueOf(sandbox.DefaultLimits())
	for _, k := range config.PluginLimitKeys {
		v := int(defaults.FieldByName(k.Limit).Int())
		want := fmt.Sprintf("| `%s` | %s |", k.Key, docNumber(v, k.Size))
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/abi.md has no row %q", want)
		}
	}
}

// docNumber writes n as docs/abi.md does: sizes in MiB or KiB, counts with
// thousands separators.
func docNumber(n int, size bool) string {
	switch {
	case size && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case size && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestPluginNotWasm: a plugin file that is not a WebAssembly module is the
// file's mistake, at the path's line, before anything loads it.
func TestPluginNotWasm(t *testing.T) {
	for _, content := range []string{"package main\n", "", "\x00as"} {
		dir := write(t, map[string]string{"permhost.toml": "strategy = \"sequential\"\n[[plugin]]\npath = \"p.wasm\"\n", "p.wasm": content})
		_, err := config.Load(filepath.Join(dir, "permhost.toml"))
		var list config.ErrorList
		if !errors.As(err, &list) || len(list) != 1 || list[0].Line != 3 || list[0].Key != "plugin[0].path" ||
			!strings.Contains(list[0].Msg, "is not a WebAssembly module") {
			t.Errorf("content %q: %v", content, err)
		}
	}
}

// TestLogKey: [log] key is read with the configuration, relative to it.
func TestLogKey(t *testing.T) {
	pub, priv, err := edkey.Generate()
	if err != nil {
		t.Fatal(err)
	}
	dir := write(t, map[string]string{"permhost.toml": "[log]\npath = \"d.jsonl\"\nkey = \"log.key\"\nmax_size = \"64MiB\"\n", "log.key": priv + "\n"})
	cfg, err := config.Load(filepath.Join(dir, "permhost.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LogKey == nil || edkey.FormatPublic(cfg.LogKey.Public().(ed25519.PublicKey)) != pub || cfg.LogMaxSize != 64<<20 {
		t.Errorf("LogKey %v, LogMaxSize %d: want the key of log.key and 64MiB", cfg.LogKey, cfg.LogMaxSize)
	}
}
