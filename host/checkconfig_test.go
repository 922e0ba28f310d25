package host

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/permhost/permhost/abi"
)

// TestConfigProblems: a plugin that exports permhost_check_config is
// asked about its configuration once, at load; what it finds is kept, and
// remembered by the compile cache for that configuration only. A plugin
// without the export is not asked.
func TestConfigProblems(t *testing.T) {
	teamRules := goPluginPath(t, "team-rules")
	typo := json.RawMessage(`{"rules":[{"action":"allow","family":"read"},{"acton":"reject","family":"shell"}]}`)
	good := json.RawMessage(`{"rules":[{"action":"reject","family":"shell"}]}`)
	for _, tt := range []struct {
		name   string
		path   string
		config json.RawMessage
		want   []abi.ConfigProblem
	}{
		{"typo", teamRules, typo, []abi.ConfigProblem{{Key: "rules[1].acton", Message: "unknown key", Suggestion: "action"}}},
		{"good", teamRules, good, nil},
		{"no export", fixture(t, "echo"), json.RawMessage(`{"anything":1}`), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			p, err := Load(context.Background(), Options{Path: tt.path, Config: tt.config, CacheDir: cache})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			if got := p.ConfigProblems(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ConfigProblems = %+v, want %+v", got, tt.want)
			}
			got, ok := CachedConfigCheck(cache, p.SHA256(), tt.config)
			if !ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CachedConfigCheck = %+v, %v; want %+v, true", got, ok, tt.want)
			}
			_, ok = CachedConfigCheck(cache, p.SHA256(), json.RawMessage(`{"other":true}`))
			if exports := tt.path == teamRules; ok == exports {
				t.Errorf("CachedConfigCheck of another configuration: known %v, want %v", ok, !exports)
			}
		})
	}
}

func TestCleanProblems(t *testing.T) {
	many := make([]abi.ConfigProblem, MaxConfigProblems+5)
	for i := range many {
		many[i] = abi.ConfigProblem{Key: "k\x1b[31m", Message: "bad\nline"}
	}
	got := cleanProblems(many)
	if len(got) != MaxConfigProblems || got[0].Key != "k [31m" || got[0].Message != "bad line" {
		t.Errorf("cleanProblems = %d problems, first %+v", len(got), got[0])
	}
}
