package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/plugins/pdk"
)

// ruleKeys are the keys of one rule, read from rawRule's JSON names so
// that the two cannot drift apart.
var ruleKeys = func() []string {
	t := reflect.TypeFor[rawRule]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i] = t.Field(i).Tag.Get("json")
	}
	return keys
}()

// checkConfig is permhost_check_config: every mistake of the
// configuration, each at its key ("rules[2].acton"), so that permhost
// reports it with its line before the agent starts instead of the plugin
// failing every request.
func checkConfig(raw json.RawMessage) []abi.ConfigProblem {
	if _, err := parseConfig(raw); err == nil {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return []abi.ConfigProblem{{Message: "is not a table"}}
	}
	// home and rules are both known here: home has its own message.
	out := pdk.UnknownKeys(raw, "", "rules", "home")
	if _, ok := top["home"]; ok {
		out = append(out, abi.ConfigProblem{Key: "home", Message: "is no longer a config key: permhost tells the plugin the user's home directory (session.home)"})
	}
	var rules []json.RawMessage
	if r, ok := top["rules"]; ok && json.Unmarshal(r, &rules) != nil {
		return append(out, abi.ConfigProblem{Key: "rules", Message: "must be a list of tables ([[plugin.config.rules]])"})
	}
	for i, r := range rules {
		prefix := fmt.Sprintf("rules[%d]", i)
		unknown := pdk.UnknownKeys(r, prefix+".", ruleKeys...)
		out = append(out, unknown...)
		if len(unknown) > 0 {
			continue // its other mistakes may be this one's (acton: action is missing)
		}
		var rr rawRule
		if err := decodeStrict(r, &rr); err != nil {
			out = append(out, abi.ConfigProblem{Key: prefix, Message: jsonMessage(err)})
			continue
		}
		if _, err := rr.validate(i); err != nil {
			out = append(out, abi.ConfigProblem{Key: prefix, Message: err.Error()})
		}
	}
	if len(out) == 0 {
		// parseConfig failed on something the walk above does not see:
		// never say a configuration that fails every request is good.
		_, err := parseConfig(raw)
		out = append(out, abi.ConfigProblem{Message: strings.TrimPrefix(err.Error(), errConfig.Error()+": ")})
	}
	return out
}

// jsonMessage words a decoding error of one rule for a TOML user.
func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s must be %s, not %s", te.Field, tomlType(te.Type), te.Value)
	}
	return err.Error()
}

func tomlType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	}
	return t.String()
}
