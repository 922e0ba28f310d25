package config_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/config"
)

func TestSessionDefaults(t *testing.T) {
	plugin := "[[plugin]]\nname = \"p\"\npath = \"p.wasm\"\n"
	tests := []struct {
		name string
		toml string
		want config.Session
	}{
		{"no plugins: pass, and permhost's own grants", "", config.Session{Modes: "pass", AllowAlways: "permhost", FS: "pass", Reasons: "off", Unasked: "warn"}},
		{"a plugin: govern, and reasons steer", plugin, config.Session{Modes: "govern", AllowAlways: "permhost", FS: "govern", Reasons: "steer", Unasked: "warn"}},
		{"each key given", "[session]\nmodes = \"pass\"\nallow_always = \"off\"\nfs = \"govern\"\nreasons = \"off\"\nunasked = \"cancel\"\ndeciding_words = [\"auto\", \"trust\"]\n" + plugin,
			config.Session{Modes: "pass", AllowAlways: "off", FS: "govern", Reasons: "off", Unasked: "cancel", DecidingWords: []string{"auto", "trust"}, Line: 1}},
		{"agent's always, modes left to the default", "strategy = \"race\"\n\n[session]\nallow_always = \"agent\"\n" + plugin,
			config.Session{Modes: "govern", AllowAlways: "agent", FS: "govern", Reasons: "steer", Unasked: "warn", Line: 3}},
		{"an empty word list is kept empty, not the default", "[session]\ndeciding_words = []\n",
			config.Session{Modes: "pass", AllowAlways: "permhost", FS: "pass", Reasons: "off", Unasked: "warn", DecidingWords: []string{}, Line: 1}},
		{"reasons steer without a policy", "[session]\nreasons = \"steer\"\n",
			config.Session{Modes: "pass", AllowAlways: "permhost", FS: "pass", Reasons: "steer", Unasked: "warn", Line: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, map[string]string{"permhost.toml": tt.toml, "p.wasm": "x"})
			cfg, err := config.Load(filepath.Join(dir, "permhost.toml"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Session, tt.want) {
				t.Errorf("Session = %+v, want %+v", cfg.Session, tt.want)
			}
		})
	}
}

func TestSessionGrantsOn(t *testing.T) {
	for _, tt := range []struct {
		allow             string
		grants, oneTimeOn bool
	}{
		{"permhost", true, true}, {"off", false, true}, {"agent", false, false}, {"", false, false},
	} {
		s := config.Session{AllowAlways: tt.allow}
		if s.GrantsOn() != tt.grants || s.OneTimeOnly() != tt.oneTimeOn {
			t.Errorf("%q: GrantsOn %v OneTimeOnly %v, want %v %v", tt.allow, s.GrantsOn(), s.OneTimeOnly(), tt.grants, tt.oneTimeOn)
		}
	}
}

// TestSessionMistakes: each mistake in [session] names the file, the line
// and the key.
func TestSessionMistakes(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		line    int
		key     string
		message string
	}{
		{"bad modes", "[session]\nmodes = \"auto\"\n", 2, "session.modes", `"auto" is not one of govern, pass`},
		{"bad allow_always", "[session]\nfs = \"pass\"\nallow_always = \"always\"\n", 3, "session.allow_always", `"always" is not one of permhost, agent, off`},
		{"bad fs", "[session]\nfs = true\n", 2, "session.fs", "want a string, got a boolean"},
		{"bad reasons", "[session]\nmodes = \"pass\"\nreasons = \"tell\"\n", 3, "session.reasons", `"tell" is not one of steer, off`},
		{"bad unasked", "[session]\nmodes = \"pass\"\nunasked = \"kill\"\n", 3, "session.unasked", `"kill" is not one of warn, cancel`},
		{"misspelt key", "[session]\nallow_allways = \"off\"\n", 2, "session.allow_allways", `did you mean "allow_always"?`},
		{"not a table", "session = \"govern\"\n", 1, "session", "want a table, got a string"},
		{"words not a list", "[session]\ndeciding_words = \"auto\"\n", 2, "session.deciding_words", "want an array of strings"},
		{"an empty word", "[session]\ndeciding_words = [\"auto\", \"\"]\n", 2, "session.deciding_words[1]", "must not be empty"},
		{"a word of the wrong type", "[session]\ndeciding_words = [\"auto\", 3]\n", 2, "session.deciding_words[1]", "want a string, got an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, map[string]string{"permhost.toml": tt.toml})
			path := filepath.Join(dir, "permhost.toml")
			_, err := config.Load(path)
			var list config.ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("err = %v, want one mistake", err)
			}
			e := list[0]
			if e.File != path || e.Line != tt.line || e.Key != tt.key || !strings.Contains(e.Msg, tt.message) {
				t.Errorf("mistake = %v, want %s:%d: %s: ...%s", e, path, tt.line, tt.key, tt.message)
			}
		})
	}
}
