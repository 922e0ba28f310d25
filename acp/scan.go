package acp

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// This file holds the cheap, allocation-free look at a line that decides
// whether it needs decoding at all, and the byte-level helpers that find a
// member of a JSON object without re-encoding it.

// trimEOL returns line without its terminator ("\n" or "\r\n").
func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	return line
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string starting at b[i]
// (which must be '"').
func skipString(b []byte, i int) (int, bool) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b), false
		}
		j += k
		n := 0
		for m := j - 1; m > i && b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, true
		}
		j++
	}
}

// skipValue returns the index just past the JSON value starting at b[i]. It
// checks only the structure it needs to find the end, not the value's
// validity.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, ok := skipString(b, i)
				if !ok {
					return j, false
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	default:
		j := i
		for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
			j++
		}
		return j, j > i
	}
}

// findMember returns the bounds of the value of the first member of the JSON
// object obj whose raw (still escaped) key equals name. found is false when
// there is no such member or obj is not a well-formed object at the top
// level.
func findMember(obj []byte, name string) (start, end int, found bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return 0, 0, false
	}
	for i < len(obj) {
		if obj[i] != '"' {
			return 0, 0, false
		}
		ke, ok := skipString(obj, i)
		if !ok {
			return 0, 0, false
		}
		key := obj[i+1 : ke-1]
		i = skipSpace(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return 0, 0, false
		}
		i = skipSpace(obj, i+1)
		ve, ok := skipValue(obj, i)
		if !ok {
			return 0, 0, false
		}
		if string(key) == name {
			return i, ve, true
		}
		i = skipSpace(obj, ve)
		if i >= len(obj) {
			return 0, 0, false
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

var (
	escapedUnicode     = []byte(`\u`)
	quotedMethod       = []byte(`"method"`)
	sessionUpdateValue = []byte(`"session/update"`)
	toolCallMark       = []byte(`tool_call`)
	modeUpdateMark     = []byte(`current_mode_update`)
	configUpdateMark   = []byte(`config_option_update`)
	permissionMark     = []byte(`request_permission`)
)

// isPlainUpdate reports whether line is certainly a session/update message
// whose content the proxy does not track (no tool call, no mode change, no
// permission request anywhere in it), so it can be forwarded without being
// decoded. Anything it is unsure about — escapes that could spell a key, a
// second "method", a method value with escapes — goes to the slow path, so the
// fast path can never disagree with a real JSON parser about what a line is.
func isPlainUpdate(line []byte) bool {
	if bytes.Contains(line, escapedUnicode) || bytes.Count(line, quotedMethod) != 1 {
		return false
	}
	s, e, ok := findMember(line, "method")
	if !ok || !bytes.Equal(line[s:e], sessionUpdateValue) {
		return false
	}
	return !bytes.Contains(line, toolCallMark) &&
		!bytes.Contains(line, modeUpdateMark) &&
		!bytes.Contains(line, configUpdateMark) &&
		!bytes.Contains(line, permissionMark)
}

// message is the decoded envelope of a JSON-RPC message. Members are verbatim.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// kind of a line.
type kind int

const (
	kindInvalid      kind = iota // not a JSON-RPC object (forwarded, logged)
	kindBlank                    // empty or whitespace only
	kindBatch                    // a JSON array
	kindRequest                  // method and id
	kindNotification             // method, no id
	kindResponse                 // id and result or error, no method
)

func (k kind) String() string {
	return [...]string{"invalid", "blank", "batch", "request", "notification", "response"}[k]
}

// decoded is a line after the slow path.
type decoded struct {
	kind   kind
	method string
	msg    message
	err    error // why the line is invalid
}

// decode classifies body (a line without its terminator) and decodes its
// envelope. It never fails: a line it cannot understand is kindInvalid.
func decode(body []byte) decoded {
	i := skipSpace(body, 0)
	if i == len(body) {
		return decoded{kind: kindBlank}
	}
	if body[i] == '[' {
		return decoded{kind: kindBatch}
	}
	var d decoded
	if err := json.Unmarshal(body, &d.msg); err != nil {
		d.err = err
		return d
	}
	hasID := len(d.msg.ID) > 0
	if len(d.msg.Method) > 0 && string(d.msg.Method) != "null" {
		if err := json.Unmarshal(d.msg.Method, &d.method); err != nil {
			d.err = err
			return d
		}
		if hasID {
			d.kind = kindRequest
		} else {
			d.kind = kindNotification
		}
		return d
	}
	if hasID && (len(d.msg.Result) > 0 || len(d.msg.Error) > 0) {
		d.kind = kindResponse
		return d
	}
	d.err = errNotJSONRPC
	return d
}

type constError string

func (e constError) Error() string { return string(e) }

const errNotJSONRPC = constError("acp: not a JSON-RPC request, notification or response")

// idKey is the key of an id in a pending table: the id's bytes with
// insignificant whitespace removed. Ids are compared as the peer wrote them.
func idKey(id json.RawMessage) string {
	return string(bytes.TrimSpace(id))
}

// quote returns s as a JSON string without HTML escaping.
func quote(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// intValue parses a JSON integer; ok is false for anything else.
func intValue(raw json.RawMessage) (int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return n, err == nil
}
