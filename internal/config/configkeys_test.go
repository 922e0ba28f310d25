package config_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/config"
)

func TestCheckConfigKeys(t *testing.T) {
	const file = `[[plugin]]
name = "secrets"
path = "p.wasm"
[plugin.config]
globs = [".env"]
globz = ["*.pem"]
mode = "strict"

[[plugin]]
name = "inline"
path = "p.wasm"
config = { only_in_mod = "plan" }
`
	dir := write(t, map[string]string{"permhost.toml": file, "p.wasm": "x"})
	path := filepath.Join(dir, "permhost.toml")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		plugin   config.Plugin
		declared []string
		want     []string // each mistake's Error()
	}{
		{"a misspelt key", cfg.Plugins[0], []string{"globs", "extra_globs", "mode"},
			[]string{path + `:6: plugin[0].config.globz: unknown key for plugin "secrets" (did you mean "globs"?)`}},
		{"keys far from any declared one, in file order", cfg.Plugins[0], []string{"paths"},
			[]string{
				path + `:5: plugin[0].config.globs: unknown key for plugin "secrets" (the plugin's keys: paths)`,
				path + `:6: plugin[0].config.globz: unknown key for plugin "secrets" (the plugin's keys: paths)`,
				path + `:7: plugin[0].config.mode: unknown key for plugin "secrets" (the plugin's keys: paths)`,
			}},
		{"an inline table", cfg.Plugins[1], []string{"only_in_mode"},
			[]string{path + `:12: plugin[1].config.only_in_mod: unknown key for plugin "inline" (did you mean "only_in_mode"?)`}},
		{"every key declared", cfg.Plugins[0], []string{"globs", "globz", "mode"}, nil},
		{"a plugin that declares no keys is not checked", cfg.Plugins[0], nil, nil},
		{"a plugin made in code", config.Plugin{Name: "eval", Config: []byte(`{"x":1,"only_in_mode":"plan"}`)}, []string{"only_in_mode"},
			[]string{`config.x: unknown key for plugin "eval" (the plugin's keys: only_in_mode)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range config.CheckConfigKeys(tt.plugin, tt.declared) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestPluginProblem(t *testing.T) {
	const file = `[[plugin]]
path = "std:team-rules"
[[plugin.config.rules]]
action = "allow"
family = "read"
[[plugin.config.rules]]
acton = "reject"
family = "shell"
`
	cfg, err := config.Parse([]byte(file), "permhost.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Plugins[0]
	tests := []struct {
		key, msg, suggestion, want string
	}{
		{"rules[1].acton", "unknown key", "action", `permhost.toml:7: plugin[0].config.rules[1].acton: plugin "team-rules": unknown key (did you mean "action"?)`},
		{"rules[0]", "states no condition", "", `permhost.toml:3: plugin[0].config.rules[0]: plugin "team-rules": states no condition`},
		{"rules[0].nothere.deeper", "bad", "", `permhost.toml:3: plugin[0].config.rules[0].nothere.deeper: plugin "team-rules": bad`},
		{"rules", "bad", "", `permhost.toml:3: plugin[0].config.rules: plugin "team-rules": bad`},
		{"", "is not a table", "", `permhost.toml:1: plugin[0].config: plugin "team-rules": is not a table`},
	}
	for _, tt := range tests {
		if got := config.PluginProblem(p, tt.key, tt.msg, tt.suggestion).Error(); got != tt.want {
			t.Errorf("PluginProblem(%q) =\n%s\nwant\n%s", tt.key, got, tt.want)
		}
	}
}
