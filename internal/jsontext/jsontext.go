package jsontext

import (
	"bytes"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Errors of the package; every error it returns wraps one of them.
var (
	// ErrSyntax: the text is not one JSON value.
	ErrSyntax = errors.New("jsontext: invalid JSON")
	// ErrInvalidUTF8: a string holds invalid UTF-8 or an unpaired surrogate
	// escape, which parsers replace differently.
	ErrInvalidUTF8 = errors.New("jsontext: invalid UTF-8")
	// ErrDuplicateKey: an object names a key twice, exactly or in another
	// case (Go's encoding/json matches keys case-insensitively, JavaScript
	// and Rust exactly, so either spelling could win).
	ErrDuplicateKey = errors.New("jsontext: duplicate key")
	// ErrUnknownKey: an object has a key the caller does not accept.
	ErrUnknownKey = errors.New("jsontext: unknown key")
	// ErrType: a value is not of the kind the caller needs.
	ErrType = errors.New("jsontext: wrong type")
)

// Error says where a problem is. Err is one of the package's sentinels.
type Error struct {
	Offset int    // byte offset in the text given
	Key    string // the offending key, for ErrDuplicateKey and ErrUnknownKey
	Err    error
}

func (e *Error) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("%v %q at offset %d", e.Err, e.Key, e.Offset)
	}
	return fmt.Sprintf("%v at offset %d", e.Err, e.Offset)
}

func (e *Error) Unwrap() error { return e.Err }

func fail(off int, err error) error { return &Error{Offset: off, Err: err} }

// Check reports whether b is exactly one strict JSON value (surrounding
// whitespace allowed): valid syntax and UTF-8, and no object, at any depth,
// with two keys that are equal after unescaping and case folding. It does not
// recurse, so nesting depth is bounded only by the input's length.
func Check(b []byte) error {
	end, err := scan(b, skipSpace(b, 0))
	if err != nil {
		return err
	}
	if end = skipSpace(b, end); end != len(b) {
		return fail(end, ErrSyntax)
	}
	return nil
}

// Member is one member of an object: its key unescaped, its value's bytes.
type Member struct {
	Key   string
	Value []byte
}

// Object checks b as [Check] does and returns the members of the object it
// must be, in order.
func Object(b []byte) ([]Member, error) {
	if err := Check(b); err != nil {
		return nil, err
	}
	i := skipSpace(b, 0)
	if b[i] != '{' {
		return nil, fail(i, ErrType)
	}
	var ms []Member
	i = skipSpace(b, i+1)
	for b[i] != '}' {
		ke, _ := scanString(b, i)
		key, _ := unquote(b[i:ke])
		vs := skipSpace(b, skipSpace(b, ke)+1)
		ve, _ := scan(b, vs)
		ms = append(ms, Member{Key: key, Value: b[vs:ve]})
		i = skipSpace(b, ve)
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return ms, nil
}

// Fields checks b as [Object] does and returns its members by key, accepting
// only the keys named (matched exactly: a key that differs in case is
// unknown).
func Fields(b []byte, allowed ...string) (map[string][]byte, error) {
	ms, err := Object(b)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(ms))
	for _, m := range ms {
		ok := false
		for _, a := range allowed {
			if m.Key == a {
				ok = true
				break
			}
		}
		if !ok {
			return nil, &Error{Key: m.Key, Err: ErrUnknownKey}
		}
		out[m.Key] = m.Value
	}
	return out, nil
}

// String returns the value of the JSON string b, strictly.
func String(b []byte) (string, error) {
	if err := Check(b); err != nil {
		return "", err
	}
	b = trimSpace(b)
	if b[0] != '"' {
		return "", fail(0, ErrType)
	}
	s, _ := unquote(b)
	return s, nil
}

// IsNull reports whether b is the JSON literal null (whitespace aside).
func IsNull(b []byte) bool { return string(trimSpace(b)) == "null" }

// Quote returns s as a JSON string, escaping only what JSON requires (no
// HTML escaping). Invalid UTF-8 becomes U+FFFD.
func Quote(s string) []byte {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\ufffd"...)
		} else if r == '\u2028' || r == '\u2029' {
			// Valid JSON, but not valid JavaScript source before ES2019.
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func trimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && isSpace(b[i]) {
		i++
	}
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

// smallObject is how many keys an object's duplicate check compares pairwise
// (no allocation) before it switches to a map of folded keys.
const smallObject = 8

// frame is one open container of scan.
type frame struct {
	object bool
	n      int                 // members so far (objects only)
	small  [smallObject][]byte // the first keys, unescaped
	keys   map[string]struct{} // folded keys, once there are more than smallObject
}

// scan checks the value starting at b[i] and returns the index just past it.
func scan(b []byte, i int) (int, error) {
	var stackBuf [8]frame // most peers' messages nest less; deeper ones grow the slice
	stack := stackBuf[:0]
	for {
		// A value starts at i.
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, fail(i, ErrSyntax)
		}
		var err error
		switch c := b[i]; {
		case c == '{' || c == '[':
			stack = append(stack, frame{object: c == '{'})
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == "}]"[boolIndex(c == '[')] {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, err = scanKey(b, i, &stack[len(stack)-1]); err != nil {
					return i, err
				}
			}
			continue
		case c == '"':
			if i, err = scanString(b, i); err != nil {
				return i, err
			}
		case c == '-' || c >= '0' && c <= '9':
			if i, err = scanNumber(b, i); err != nil {
				return i, err
			}
		default:
			if i, err = scanLiteral(b, i); err != nil {
				return i, err
			}
		}
		// A value ended at i: close containers or go to the next member.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			top := &stack[len(stack)-1]
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, fail(i, ErrSyntax)
			}
			if b[i] == ',' {
				i = skipSpace(b, i+1)
				if top.object {
					if i, err = scanKey(b, i, top); err != nil {
						return i, err
					}
				}
				break
			}
			if b[i] != "]}"[boolIndex(top.object)] {
				return i, fail(i, ErrSyntax)
			}
			stack = stack[:len(stack)-1]
			i++
		}
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scanKey reads `"key" :` at b[i], records the key in f, and returns the
// index of the value.
func scanKey(b []byte, i int, f *frame) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, fail(i, ErrSyntax)
	}
	end, err := scanString(b, i)
	if err != nil {
		return end, err
	}
	key := b[i+1 : end-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		k, _ := unquote(b[i:end])
		key = []byte(k)
	}
	switch {
	case f.n < smallObject:
		for _, k := range f.small[:f.n] {
			if bytes.EqualFold(k, key) {
				return i, &Error{Offset: i, Key: string(key), Err: ErrDuplicateKey}
			}
		}
		f.small[f.n] = key
	default:
		if f.keys == nil {
			f.keys = make(map[string]struct{}, 2*smallObject)
			for _, k := range f.small {
				f.keys[Fold(string(k))] = struct{}{}
			}
		}
		folded := Fold(string(key))
		if _, dup := f.keys[folded]; dup {
			return i, &Error{Offset: i, Key: string(key), Err: ErrDuplicateKey}
		}
		f.keys[folded] = struct{}{}
	}
	f.n++
	end = skipSpace(b, end)
	if end >= len(b) || b[end] != ':' {
		return end, fail(end, ErrSyntax)
	}
	return end + 1, nil
}

// Fold returns s case-folded so that two keys Go's encoding/json would
// match (Unicode simple folding: K, k and the Kelvin sign alike) fold to the
// same string.
func Fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	out := make([]rune, 0, len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < m {
				m = f
			}
		}
		out = append(out, m)
	}
	return string(out)
}

// scanString checks the string at b[i] (b[i] == '"') and returns the index
// past its closing quote.
func scanString(b []byte, i int) (int, error) {
	j := i + 1
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			return j + 1, nil
		case c == '\\':
			if j+1 >= len(b) {
				return j, fail(j, ErrSyntax)
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				r, ok := hex4(b, j+2)
				if !ok {
					return j, fail(j, ErrSyntax)
				}
				j += 6
				if utf16.IsSurrogate(r) {
					// Only a high surrogate followed by a low one is a
					// character; parsers differ on anything else.
					r2, ok := rune(0), false
					if j+1 < len(b) && b[j] == '\\' && b[j+1] == 'u' {
						r2, ok = hex4(b, j+2)
					}
					if !ok || utf16.DecodeRune(r, r2) == unicode.ReplacementChar {
						return j, fail(j, ErrInvalidUTF8)
					}
					j += 6
				}
			default:
				return j, fail(j, ErrSyntax)
			}
		case c < 0x20:
			return j, fail(j, ErrSyntax)
		case c < utf8.RuneSelf:
			j++
		default:
			r, n := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && n == 1 {
				return j, fail(j, ErrInvalidUTF8)
			}
			j += n
		}
	}
	return j, fail(j, ErrSyntax)
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unquote decodes a string already checked by scanString.
func unquote(q []byte) (string, bool) {
	body := q[1 : len(q)-1]
	plain := true
	for _, c := range body {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(body), true
	}
	out := make([]byte, 0, len(body))
	for j := 0; j < len(body); {
		c := body[j]
		if c != '\\' {
			out = append(out, c)
			j++
			continue
		}
		switch e := body[j+1]; e {
		case 'u':
			r, _ := hex4(body, j+2)
			j += 6
			if utf16.IsSurrogate(r) {
				r2, _ := hex4(body, j+2)
				r = utf16.DecodeRune(r, r2)
				j += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default: // " \ /
			out = append(out, e)
		}
		j += 2
	}
	return string(out), true
}

// scanNumber checks the number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return i, fail(start, ErrSyntax)
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i, fail(start, ErrSyntax)
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, fail(start, ErrSyntax)
		}
	}
	return i, nil
}

func scanLiteral(b []byte, i int) (int, error) {
	for _, lit := range []string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), nil
		}
	}
	return i, fail(i, ErrSyntax)
}
