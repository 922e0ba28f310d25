package worker

import (
	"bytes"
	"unicode/utf8"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/hostlink"
)

// A warm decision's answer is nearly always a decision of a few short
// strings. As strict JSON read by reflection (jsontext.Fields, then
// json.Unmarshal) it was half of the parent's reading goroutine, and
// json.Marshal a good part of the child's sending. So the child writes a
// decision in one canonical form by hand (appendAnswer: the members in
// field order, each string without anything to escape), and the parent
// reads that form by hand (decodeAnswerFast). Anything else — a failure, a
// string with an escape, another order, an unknown or repeated key — is
// refused by the fast reader and goes to decodeStrict as before, so what
// the parent accepts is unchanged: whatever decodeAnswerFast accepts,
// decodeStrict accepts too and decodes to the same decision
// (FuzzDecodeAnswerFast checks it).

// decodeAnswerMsg decodes an answer payload as the parent does: the
// canonical form by hand, anything else strictly.
func decodeAnswerMsg(b []byte) (answerMsg, error) {
	var a answerMsg
	var fast abi.Decision
	if decodeAnswerFast(b, &fast) {
		a.Decision = &fast
		return a, nil
	}
	err := decodeStrict(b, &a, "decision", "failure")
	return a, err
}

// appendAnswer appends d as an answer payload in the canonical form, the
// bytes marshal(answerMsg{Decision: d}) gives; false when a string would
// need escaping (the caller marshals then).
func appendAnswer(b []byte, d *abi.Decision) ([]byte, bool) {
	ok := true
	str := func(key, s string, omit bool) {
		if omit && s == "" {
			return
		}
		if !plain(s) {
			ok = false
			return
		}
		b = append(b, key...)
		b = append(b, s...)
		b = append(b, '"')
	}
	b = append(b, `{"decision":{`...)
	str(`"outcome":"`, string(d.Outcome), false)
	str(`,"scope":"`, string(d.Scope), true)
	str(`,"optionId":"`, d.OptionID, true)
	str(`,"reason":"`, d.Reason, true)
	if e := d.Explanation; e != nil {
		b = append(b, `,"explanation":{`...)
		n := len(b)
		str(`,"summary":"`, e.Summary, true)
		str(`,"risk":"`, e.Risk, true)
		str(`,"riskLevel":"`, e.RiskLevel, true)
		if len(b) > n {
			b = append(b[:n], b[n+1:]...) // the first member has no comma
		}
		b = append(b, '}')
	}
	b = append(b, `},"failure":null}`...)
	return b, ok
}

// plain reports whether encoding/json (without HTML escaping) writes s as
// is between quotes: valid UTF-8 with no control character, quote,
// backslash, U+2028 or U+2029.
func plain(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// decodeAnswerFast reads an answer payload in the canonical form of
// appendAnswer into d and reports whether it was one; when not, d is to be
// discarded and the payload decoded by decodeStrict.
func decodeAnswerFast(b []byte, d *abi.Decision) bool {
	var ok bool
	if b, ok = bytes.CutPrefix(b, []byte(`{"decision":{`)); !ok {
		return false
	}
	var s []byte
	if s, b, ok = member(b, `"outcome":"`); !ok || s == nil {
		return false
	}
	d.Outcome = hostlink.Outcome(s)
	if s, b, ok = member(b, `,"scope":"`); !ok {
		return false
	} else if s != nil {
		d.Scope = hostlink.Scope(s)
	}
	if s, b, ok = member(b, `,"optionId":"`); !ok {
		return false
	} else if s != nil {
		d.OptionID = string(s)
	}
	if s, b, ok = member(b, `,"reason":"`); !ok {
		return false
	} else if s != nil {
		d.Reason = string(s)
	}
	if rest, found := bytes.CutPrefix(b, []byte(`,"explanation":{`)); found {
		e := &abi.Explanation{}
		b = rest
		first := true
		for _, f := range []struct {
			key string
			to  *string
		}{{`"summary":"`, &e.Summary}, {`"risk":"`, &e.Risk}, {`"riskLevel":"`, &e.RiskLevel}} {
			key := f.key
			if !first {
				key = "," + key
			}
			if s, b, ok = member(b, key); !ok {
				return false
			} else if s != nil {
				*f.to = string(s)
				first = false
			}
		}
		if b, ok = bytes.CutPrefix(b, []byte(`}`)); !ok {
			return false
		}
		d.Explanation = e
	}
	return string(b) == `},"failure":null}`
}

// member reads the string member key (its opening quote included) at the
// start of b: its contents, nil when b does not start with key, and what
// follows it. A string that is not plain (an escape, a control character,
// invalid UTF-8) or not closed is refused (ok false).
func member(b []byte, key string) (s, rest []byte, ok bool) {
	rest, found := bytes.CutPrefix(b, []byte(key))
	if !found {
		return nil, b, true
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil, b, false
	}
	s = rest[:end:end]
	if !plain(string(s)) {
		return nil, b, false
	}
	return s, rest[end+1:], true
}
