package suggestions

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
)

var update = flag.Bool("update", false, "rewrite testdata/out golden files")

type goldenInput struct {
	Kind    string          `json:"kind"`
	Options json.RawMessage `json:"options"`
}

type goldenOption struct {
	abi.Option
	Label string `json:"label,omitempty"`
}

// TestGolden runs every testdata/in file through Options and compares the
// options, with the label a person would see for their changes, to
// testdata/out.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/in/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			var in goldenInput
			require.NoError(t, json.Unmarshal(raw, &in))
			opts, err := Options(in.Kind, in.Options)
			require.NoError(t, err)
			out := make([]goldenOption, len(opts))
			for i, o := range opts {
				out[i].Option = o
				if o.Changes != nil {
					out[i].Label = Describe(*o.Changes)
				}
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			require.NoError(t, enc.Encode(out))
			golden := filepath.Join("testdata", "out", name+".golden.json")
			if *update {
				require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./suggestions -update")
			assert.Equal(t, string(want), buf.String())
		})
	}
}

func TestDurable(t *testing.T) {
	known := &abi.ChangeSet{Known: true, Source: SourceACPMeta, Items: []abi.Change{{Type: "setMode", Mode: "plan"}}}
	unknown := &abi.ChangeSet{Known: false, Invalid: "x"}
	tests := []struct {
		requestKind, optionKind string
		changes                 *abi.ChangeSet
		want                    bool
	}{
		{abi.KindExecute, abi.OptionAllowOnce, nil, false},
		{abi.KindExecute, abi.OptionRejectOnce, nil, false},
		{abi.KindExecute, abi.OptionAllowAlways, nil, true},
		{abi.KindExecute, abi.OptionRejectAlways, nil, true},
		{abi.KindEdit, abi.OptionAllowOnce, known, true},
		{abi.KindEdit, abi.OptionRejectOnce, unknown, true},
		{abi.KindSwitchMode, abi.OptionAllowOnce, nil, true},
		{abi.KindSwitchMode, abi.OptionRejectOnce, nil, true},
		{"", "allow_sometimes", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.requestKind+"/"+tt.optionKind, func(t *testing.T) {
			assert.Equal(t, tt.want, Durable(tt.requestKind, tt.optionKind, tt.changes))
		})
	}
}

func TestOptionsErrors(t *testing.T) {
	tests := []struct {
		name, options string
		want          error
	}{
		{"object", `{"optionId":"a"}`, ErrOptions},
		{"string element", `["allow"]`, ErrOptions},
		{"missing kind", `[{"optionId":"a","name":"A"}]`, ErrOptions},
		{"numeric id", `[{"optionId":1,"kind":"allow_once"}]`, ErrOptions},
		{"duplicate id", `[{"optionId":"a","kind":"allow_once"},{"optionId":"a","kind":"reject_once"}]`, ErrDuplicateID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Options(abi.KindExecute, json.RawMessage(tt.options))
			assert.ErrorIs(t, err, tt.want)
		})
	}
	opts, err := Options(abi.KindExecute, nil)
	require.NoError(t, err)
	assert.Empty(t, opts)
}

// claudeUpdates builds option _meta with n addRules updates of r rules
// each, the rule content s.
func claudeUpdates(n, r int, s string) string {
	var rules []map[string]string
	for range r {
		rules = append(rules, map[string]string{"toolName": "Bash", "ruleContent": s})
	}
	var ups []map[string]any
	for range n {
		ups = append(ups, map[string]any{"type": "addRules", "rules": rules, "behavior": "allow", "destination": "session"})
	}
	b, _ := json.Marshal(map[string]any{"claudeCode": map[string]any{"updatedPermissions": ups}})
	return string(b)
}

func TestParse(t *testing.T) {
	grant := func(extra string) string {
		return `{"permission":{"version":1,"changes":[{"type":"grant","operation":"grant","description":"d","targets":[{"type":"network","matcher":{"type":"any"}` + extra + `}]}]}}`
	}
	tests := []struct {
		name    string
		meta    string
		known   bool
		invalid string // substring of Invalid when not known
		items   int
	}{
		{"no meta", ``, false, "", -1},
		{"null meta", `null`, false, "", -1},
		{"unrelated meta", `{"claudeCode":{"toolName":"Bash"},"traceparent":"x"}`, false, "", -1},
		{"empty changes", `{"permission":{"version":1,"changes":[]}}`, false, "", -1},
		{"empty sdk list", `{"claudeCode":{"suggestions":[]}}`, false, "", -1},
		{"grant", grant(""), true, "", 1},
		// encoding/json would read "allow" for ruleBehavior; an exact-key
		// reader, "deny".
		{"case-folded duplicate key", `{"permission":{"version":1,"changes":[{"type":"policy_rule","operation":"add","ruleBehavior":"deny","RuleBehavior":"allow","description":"d","targets":[{"type":"tool","toolName":"Bash"}]}]}}`, false, `duplicate key "RuleBehavior"`, 0},
		{"100 updates of 100 rules", claudeUpdates(100, 100, "npm test:*"), true, "", 100},
		{"10000 characters", claudeUpdates(1, 1, strings.Repeat("é", MaxString)), true, "", 1},
		{"101 updates", claudeUpdates(101, 1, "x"), false, "more than 100", 0},
		{"101 rules", claudeUpdates(1, 101, "x"), false, "more than 100", 0},
		{"10001 chars", claudeUpdates(1, 1, strings.Repeat("x", MaxString+1)), false, "more than 10000", 0},
		{"blank rule content", claudeUpdates(1, 1, "  "), false, "blank", 0},
		{"newline", claudeUpdates(1, 1, "ls\nrm -rf /"), false, "control character", 0},
		{"bidi override", claudeUpdates(1, 1, "ls \u202e"), false, "control character", 0},
		{"C1 control", claudeUpdates(1, 1, "ls \u0085"), false, "control character", 0},
		{"meta not object", `[1]`, false, "not an object", 0},
		{"invalid utf-8", "{\"permission\":{\"version\":1,\"changes\":[{\"description\":\"\xff\"}]}}", false, "UTF-8", 0},
		{"version missing", `{"permission":{"changes":[]}}`, false, "version absent", 0},
		{"version string", `{"permission":{"version":"1","changes":[]}}`, false, "want 1", 0},
		{"version 1.0", `{"permission":{"version":1.0,"changes":[]}}`, false, "want 1", 0},
		{"changes not array", `{"permission":{"version":1,"changes":{}}}`, false, "not an array", 0},
		{"unknown change type", `{"permission":{"version":1,"changes":[{"type":"sandbox","operation":"add","description":"d"}]}}`, false, "unknown type", 0},
		{"missing description", `{"permission":{"version":1,"changes":[{"type":"grant","operation":"grant","targets":[{"type":"network","matcher":{"type":"any"}}]}]}}`, false, "missing description", 0},
		{"unknown target key", grant(`,"except":"x"`), false, "unknown key", 0},
		{"unknown permission key", `{"permission":{"version":1,"changes":[],"scope":"all"}}`, false, "unknown key", 0},
		{"unknown lifetime", `{"permission":{"version":1,"changes":[{"type":"permission_mode","operation":"set","mode":"plan","description":"d","lifetime":{"scope":"forever"}}]}}`, false, "unknown scope", 0},
		{"unknown mode", `{"claudeCode":{"suggestions":[{"type":"setMode","mode":"yolo","destination":"session"}]}}`, false, "unknown mode", 0},
		{"unknown behavior", `{"claudeCode":{"suggestions":[{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"maybe","destination":"session"}]}}`, false, "unknown behavior", 0},
		{"empty addRules", `{"claudeCode":{"suggestions":[{"type":"addRules","rules":[],"behavior":"allow","destination":"session"}]}}`, false, "empty", 0},
		{"empty replaceRules", `{"claudeCode":{"suggestions":[{"type":"replaceRules","rules":[],"behavior":"allow","destination":"session"}]}}`, true, "", 1},
		{"rule without tool", `{"claudeCode":{"suggestions":[{"type":"addRules","rules":[{"ruleContent":"x"}],"behavior":"allow","destination":"session"}]}}`, false, "missing toolName", 0},
		{"sdk not array", `{"claudeCode":{"permissionUpdates":{"type":"setMode"}}}`, false, "not an array", 0},
		{"bad access", `{"permission":{"version":1,"changes":[{"type":"grant","operation":"grant","description":"d","targets":[{"type":"filesystem","access":["execute"],"matcher":{"type":"directory","path":"/"}}]}]}}`, false, "unknown access", 0},
		{"rule operation for grant", `{"permission":{"version":1,"changes":[{"type":"grant","operation":"add","description":"d","targets":[{"type":"network","matcher":{"type":"any"}}]}]}}`, false, "operation", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := Parse(json.RawMessage(tt.meta))
			if tt.items < 0 {
				assert.Nil(t, cs)
				return
			}
			require.NotNil(t, cs)
			assert.Equal(t, tt.known, cs.Known, "invalid: %s", cs.Invalid)
			if tt.known {
				assert.Len(t, cs.Items, tt.items)
				assert.Empty(t, cs.Invalid)
				assert.NoError(t, checkBounds(*cs))
			} else {
				assert.Contains(t, cs.Invalid, tt.invalid)
				assert.Empty(t, cs.Items)
			}
		})
	}
}

// checkBounds verifies the promises a Known set makes to plugins.
func checkBounds(cs abi.ChangeSet) error {
	if !cs.Known {
		if len(cs.Items) != 0 {
			return errors.New("unknown set with items")
		}
		return nil
	}
	if cs.Source != SourceACPMeta && cs.Source != SourceClaudeSDK {
		return fmt.Errorf("source %q", cs.Source)
	}
	if len(cs.Items) == 0 || len(cs.Items) > MaxChanges {
		return fmt.Errorf("%d items", len(cs.Items))
	}
	str := func(s string) error {
		if s == "" {
			return nil
		}
		if len([]rune(s)) > MaxString {
			return errors.New("long string")
		}
		for _, r := range s {
			if unsafeRune(r) {
				return fmt.Errorf("control character %U", r)
			}
		}
		return nil
	}
	for _, c := range cs.Items {
		switch c.Type {
		case "addRules", "removeRules", "replaceRules":
			if !behaviors[c.Behavior] {
				return fmt.Errorf("behavior %q", c.Behavior)
			}
		case "setMode":
			if !modes[c.Mode] {
				return fmt.Errorf("mode %q", c.Mode)
			}
		case "addDirectories", "removeDirectories", "grant":
		default:
			return fmt.Errorf("type %q", c.Type)
		}
		if cs.Source == SourceClaudeSDK && !destinations[c.Destination] {
			return fmt.Errorf("destination %q", c.Destination)
		}
		if len(c.Rules) > MaxList || len(c.Directories) > MaxList || len(c.Targets) > MaxList {
			return errors.New("long list")
		}
		all := []string{c.Description, c.Mode, c.Destination, c.Lifetime, c.Operation}
		all = append(all, c.Directories...)
		for _, r := range c.Rules {
			all = append(all, r.ToolName, r.RuleContent)
		}
		for _, tg := range c.Targets {
			if len(tg.Argv) > MaxList {
				return errors.New("long argv")
			}
			all = append(all, tg.ToolName, tg.Value, tg.Provider, tg.Protocol)
			all = append(all, tg.Argv...)
		}
		for _, s := range all {
			if err := str(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestDescribeNamesEverything checks that the label names every value of
// every change: a person must never be shown less than the option does.
func TestDescribeNamesEverything(t *testing.T) {
	files, err := filepath.Glob("testdata/in/*.json")
	require.NoError(t, err)
	checked := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var in goldenInput
		require.NoError(t, json.Unmarshal(raw, &in))
		opts, err := Options(in.Kind, in.Options)
		require.NoError(t, err)
		for _, o := range opts {
			if o.Changes == nil {
				continue
			}
			label := Describe(*o.Changes)
			for _, v := range mentions(*o.Changes) {
				assert.Contains(t, label, v, "%s option %s", f, o.OptionID)
			}
			checked++
		}
	}
	assert.GreaterOrEqual(t, checked, 8)
}

// mentions lists what a label must contain.
func mentions(cs abi.ChangeSet) []string {
	if !cs.Known {
		return []string{"may change any permission", cs.Invalid}
	}
	var m []string
	for _, c := range cs.Items {
		m = append(m, c.Behavior, c.Mode, c.Destination, c.Lifetime, c.Description)
		m = append(m, c.Directories...)
		for _, r := range c.Rules {
			m = append(m, r.ToolName, r.RuleContent)
		}
		for _, tg := range c.Targets {
			m = append(m, tg.ToolName, tg.Value, tg.Protocol)
			m = append(m, tg.Argv...)
			m = append(m, tg.Access...)
		}
	}
	return m
}

func TestSnapshotSharesNothing(t *testing.T) {
	meta := []byte(`{"claudeCode":{"suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],"behavior":"allow","destination":"session"}]}}`)
	cs := Parse(meta)
	require.True(t, cs.Known)
	before, _ := json.Marshal(cs)
	for i := range meta {
		meta[i] = 'x'
	}
	after, _ := json.Marshal(cs)
	assert.Equal(t, string(before), string(after))
	assert.Equal(t, "npm test:*", cs.Items[0].Rules[0].RuleContent)
}

func ExampleDescribe() {
	opts, _ := Options("execute", json.RawMessage(`[
		{"optionId":"allow","name":"Allow","kind":"allow_once"},
		{"optionId":"always","name":"Always Allow","kind":"allow_always","_meta":{"claudeCode":{"updatedPermissions":[
			{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],"behavior":"allow","destination":"localSettings"}]}}}]`))
	for _, o := range opts {
		fmt.Println(o.OptionID, o.Durable)
		if o.Changes != nil {
			fmt.Println(Describe(*o.Changes))
		}
	}
	// Output:
	// allow false
	// always true
	// add allow rules for Bash(npm test:*) (stored in localSettings)
}
