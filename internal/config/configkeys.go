package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// PluginProblem returns the mistake a plugin found in its own
// configuration (its permhost_check_config): key is the path inside
// [plugin.config] as the plugin names it ("rules[2].acton", "" for the
// table itself), placed on the line of that key or of its nearest parent
// written in the file, else of the plugin's entry.
func PluginProblem(p Plugin, key, msg, suggestion string) *Error {
	line := p.Line
	for k := key; k != ""; {
		if n, ok := p.ConfigKeyLines[k]; ok && n > 0 {
			line = n
			break
		}
		if n := firstLineUnder(p.ConfigKeyLines, k); n > 0 {
			line = n // an array of tables: its first element's header
			break
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			if n := p.ConfigLines[k]; n > 0 {
				line = n
			}
			break
		}
		k = k[:i]
	}
	full := "config"
	if p.Key != "" {
		full = p.Key + ".config"
	}
	if key != "" {
		full += "." + key
	}
	if suggestion != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", suggestion)
	}
	return &Error{File: p.File, Line: line, Key: full, Msg: fmt.Sprintf("plugin %q: %s", p.Name, msg)}
}

// firstLineUnder returns the first line of a key inside k ("k[0]",
// "k.x"), or 0.
func firstLineUnder(lines map[string]int, k string) int {
	first := 0
	for key, n := range lines {
		if n > 0 && (first == 0 || n < first) && (strings.HasPrefix(key, k+"[") || strings.HasPrefix(key, k+".")) {
			first = n
		}
	}
	return first
}

// CheckConfigKeys returns a mistake for each top-level key of p's
// [plugin.config] that the plugin does not declare (the configKeys of its
// permhost_describe), each with the file and line of the key and the
// nearest declared key as a suggestion. A plugin that declares no keys is
// not checked: it may read any.
//
// A plugin given a key it does not know would fail every request (safely,
// and quarantined after a while) for the whole session; checked at start,
// the typo stops permhost before the agent runs.
func CheckConfigKeys(p Plugin, declared []string) []*Error {
	if len(declared) == 0 || len(p.Config) == 0 {
		return nil
	}
	lines := p.ConfigLines
	if lines == nil {
		// Made in code rather than read from a file: no lines to give.
		var fields map[string]json.RawMessage
		if json.Unmarshal(p.Config, &fields) != nil {
			return nil // not an object: the host refuses it when loading
		}
		lines = make(map[string]int, len(fields))
		for k := range fields {
			lines[k] = p.Line
		}
	}
	keys := make([]string, 0, len(lines))
	for k := range lines {
		if !slices.Contains(declared, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(lines[a], lines[b]), cmp.Compare(a, b)) })
	key := "config." // a plugin made in code: its config table alone
	if p.Key != "" {
		key = p.Key + ".config."
	}
	var out []*Error
	for _, k := range keys {
		line := lines[k]
		if line == 0 {
			line = p.Line
		}
		out = append(out, &Error{File: p.File, Line: line, Key: key + k,
			Msg: fmt.Sprintf("unknown key for plugin %q%s", p.Name, suggestName(k, declared, "the plugin's keys"))})
	}
	return out
}
