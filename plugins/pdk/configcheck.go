package pdk

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/permhost/permhost/abi"
)

// UnknownKeys returns a problem for each key of the JSON object raw that
// is not in known, in the object's order, each keyed prefix+key (prefix is
// "" for the configuration itself, or a path ending in ".", such as
// "rules[2].") with the nearest known key as its suggestion. raw that is
// not an object gives one problem at prefix.
func UnknownKeys(raw json.RawMessage, prefix string, known ...string) []abi.ConfigProblem {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return []abi.ConfigProblem{{Key: strings.TrimSuffix(prefix, "."), Message: "is not a table"}}
	}
	var out []abi.ConfigProblem
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
		if !slices.Contains(known, k) {
			out = append(out, abi.ConfigProblem{Key: prefix + k, Message: "unknown key", Suggestion: Suggest(k, known)})
		}
	}
	return out
}

// Suggest returns the word of known nearest to word (by edit distance,
// case ignored, at most 2 edits, as permhost's own keys) when it is near
// enough to be what was meant, else "".
func Suggest(word string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		d := distance(strings.ToLower(word), strings.ToLower(k))
		if best == "" || d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	if best == "" || bestD > 2 {
		return ""
	}
	return best
}

// distance is the Levenshtein distance of a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
