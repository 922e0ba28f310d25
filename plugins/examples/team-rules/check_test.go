package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/permhost/permhost/abi"
)

func TestCheckConfig(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   []abi.ConfigProblem
	}{
		{"good", teamConfig, nil},
		{"none", `{}`, nil},
		{"typo in a rule", `{"rules":[{"action":"allow","family":"read"},{"acton":"reject","family":"shell"}]}`,
			[]abi.ConfigProblem{{Key: "rules[1].acton", Message: "unknown key", Suggestion: "action"}}},
		{"typo at the top", `{"rule":[]}`,
			[]abi.ConfigProblem{{Key: "rule", Message: "unknown key", Suggestion: "rules"}}},
		{"home", `{"home":"/h"}`,
			[]abi.ConfigProblem{{Key: "home", Message: "is no longer a config key: permhost tells the plugin the user's home directory (session.home)"}}},
		{"bad value", `{"rules":[{"action":"allow","family":"read"},{"action":"maybe","family":"shell"}]}`,
			[]abi.ConfigProblem{{Key: "rules[1]", Message: `action "maybe" is not "allow", "reject" or "ask"`}}},
		{"wrong type", `{"rules":[{"action":"allow","paths":"src/**"}]}`,
			[]abi.ConfigProblem{{Key: "rules[0]", Message: "paths must be a list, not string"}}},
		{"rules not a list", `{"rules":{"action":"allow"}}`,
			[]abi.ConfigProblem{{Key: "rules", Message: "must be a list of tables ([[plugin.config.rules]])"}}},
		{"every rule", `{"rules":[{"acton":"allow"},{"action":"allow"}]}`,
			[]abi.ConfigProblem{{Key: "rules[0].acton", Message: "unknown key", Suggestion: "action"},
				{Key: "rules[1]", Message: "states no condition (family, kind, tool, command, paths or domains), so it would match every call"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkConfig(json.RawMessage(tt.config))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("checkConfig =\n%+v\nwant\n%+v", got, tt.want)
			}
			// What checkConfig finds is what makes decisions fail.
			if _, err := parseConfig(json.RawMessage(tt.config)); (err != nil) != (len(tt.want) > 0) {
				t.Errorf("parseConfig: %v", err)
			}
		})
	}
}
