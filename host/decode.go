package host

import (
	"bytes"
	"unicode/utf8"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/hostlink"
)

// Decoding a plugin's decision with encoding/json cost a warm decision
// more than the rest of the host's work together: reflection over
// abi.Decision for an object of a few dozen bytes. decodeDecisionFast reads
// the common shape by hand (an object whose keys are the exact field names
// and whose values are strings without escapes, null, or a nested
// explanation of the same kind; unknown keys skipped) and says so; for
// anything else (an escape, a key that matches a field only as
// encoding/json's case-insensitive match would, a value of the wrong type)
// it reports false and the caller uses encoding/json. Either way the
// result is what json.Unmarshal gives (FuzzDecodeDecisionFast compares
// them). out must have passed jsontext.Check: one valid JSON value, valid
// UTF-8, no duplicate keys.

// decisionKeys and explanationKeys are the JSON names of the fields:
// a key that is one of them only case-insensitively goes to encoding/json.
var (
	decisionKeys    = []string{"outcome", "scope", "optionId", "reason", "explanation"}
	explanationKeys = []string{"summary", "risk", "riskLevel"}
)

// decodeDecisionFast decodes out into d and reports whether it could; when
// it could not, d is to be discarded.
func decodeDecisionFast(out []byte, d *abi.Decision) bool {
	return decodeDecisionShape(out, d, false)
}

// decodeDecisionChecked is decodeDecisionFast for an out that has not been
// through jsontext.Check: it reads only objects whose keys are all fields,
// each once, and whose strings are valid UTF-8 without control characters,
// so that what it accepts would pass jsontext.Check.
func decodeDecisionChecked(out []byte, d *abi.Decision) bool {
	return decodeDecisionShape(out, d, true)
}

func decodeDecisionShape(out []byte, d *abi.Decision, strict bool) bool {
	i := skipSpace(out, 0)
	i, ok := decodeObject(out, i, strict, decisionKeys, func(key, val []byte, null bool) {
		switch string(key) {
		case "outcome":
			if !null {
				d.Outcome = hostlink.Outcome(val)
			}
		case "scope":
			if !null {
				d.Scope = hostlink.Scope(val)
			}
		case "optionId":
			if !null {
				d.OptionID = string(val)
			}
		case "reason":
			if !null {
				d.Reason = string(val)
			}
		}
	}, func(at int) (int, bool) {
		// The explanation: null or an object.
		if out[at] == 'n' {
			d.Explanation = nil
			return at + len("null"), true
		}
		if d.Explanation == nil {
			d.Explanation = &abi.Explanation{}
		}
		e := d.Explanation
		return decodeObject(out, at, strict, explanationKeys, func(key, val []byte, null bool) {
			if null {
				return
			}
			switch string(key) {
			case "summary":
				e.Summary = string(val)
			case "risk":
				e.Risk = string(val)
			case "riskLevel":
				e.RiskLevel = internRisk(val)
			}
		}, nil)
	})
	return ok && skipSpace(out, i) == len(out)
}

// decodeObject reads the object at out[i:] and returns the index after it.
// Each known key with a string or null value goes to set; the last of
// keys, when nested is not nil, is an object read by nested instead. When
// strict, an unknown or repeated key or a string that is not valid UTF-8
// or holds a control character is refused.
func decodeObject(out []byte, i int, strict bool, keys []string, set func(key, val []byte, null bool), nested func(int) (int, bool)) (int, bool) {
	if i >= len(out) || out[i] != '{' {
		return i, false
	}
	var seen uint
	i = skipSpace(out, i+1)
	if i < len(out) && out[i] == '}' {
		return i + 1, true
	}
	for {
		key, j, ok := plainString(out, i)
		if !ok {
			return i, false
		}
		i = skipSpace(out, j)
		if i >= len(out) || out[i] != ':' {
			return i, false
		}
		i = skipSpace(out, i+1)
		if i >= len(out) {
			return i, false
		}
		known := knownKey(key, keys)
		if strict {
			if known < 0 || known == len(keys) || seen&(1<<known) != 0 {
				return i, false
			}
			seen |= 1 << known
		}
		switch {
		case known < 0:
			return i, false // a case-insensitive match: encoding/json's rules
		case known == len(keys):
			if i, ok = skipValue(out, i); !ok {
				return i, false
			}
		case nested != nil && known == len(keys)-1:
			if out[i] != '{' && !bytes.HasPrefix(out[i:], []byte("null")) {
				return i, false
			}
			if i, ok = nested(i); !ok {
				return i, false
			}
		case bytes.HasPrefix(out[i:], []byte("null")):
			set(key, nil, true)
			i += len("null")
		default:
			val, j, ok := plainString(out, i)
			if !ok || strict && !cleanString(val) {
				return i, false
			}
			set(key, val, false)
			i = j
		}
		i = skipSpace(out, i)
		if i >= len(out) {
			return i, false
		}
		switch out[i] {
		case ',':
			i = skipSpace(out, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// knownKey is key's index in keys, len(keys) for a key that is none of
// them in any case, and -1 for one that matches only case-insensitively.
func knownKey(key []byte, keys []string) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	for _, k := range keys {
		if bytes.EqualFold(key, []byte(k)) {
			return -1
		}
	}
	return len(keys)
}

// plainString returns the contents of the string at out[i:] and the index
// after it; false when there is none there or it has an escape.
func plainString(out []byte, i int) ([]byte, int, bool) {
	if i >= len(out) || out[i] != '"' {
		return nil, i, false
	}
	end := bytes.IndexByte(out[i+1:], '"')
	if end < 0 {
		return nil, i, false
	}
	s := out[i+1 : i+1+end]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, i, false
	}
	return s, i + 2 + end, true
}

// cleanString reports whether s is valid UTF-8 without a control
// character: a valid JSON string's contents once its escapes are refused.
func cleanString(s []byte) bool {
	for _, b := range s {
		if b < 0x20 || b >= utf8.RuneSelf {
			return utf8.Valid(s) && bytes.IndexFunc(s, func(r rune) bool { return r < 0x20 }) < 0
		}
	}
	return true
}

// skipValue returns the index after the valid JSON value at out[i:], a
// member's value: it ends at the ',' or '}' that follows it.
func skipValue(out []byte, i int) (int, bool) {
	depth := 0
	for i < len(out) {
		c := out[i]
		switch c {
		case '"':
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i, true
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i, true
			}
			i++
		default:
			i++
		}
	}
	return i, depth == 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(out []byte, i int) int {
	for i < len(out) && isSpace(out[i]) {
		i++
	}
	return i
}

// The values a decision usually holds, without an allocation each
// (outcome and scope: hostlink, which the worker shares).

func internRisk(b []byte) string {
	switch string(b) {
	case abi.RiskLow:
		return abi.RiskLow
	case abi.RiskMedium:
		return abi.RiskMedium
	case abi.RiskHigh:
		return abi.RiskHigh
	}
	return string(b)
}
