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
	_, err := (&scanner{strict: true}).whole(b)
	return err
}

// Syntax reports whether b is exactly one JSON value by syntax alone: unlike
// [Check] it lets duplicate keys and invalid UTF-8 through, as encoding/json
// does (at any depth, where encoding/json stops at 10,000 levels). It is for
// text that must be classified even when it is not strict, never for what
// permhost acts on.
func Syntax(b []byte) error {
	_, err := (&scanner{}).whole(b)
	return err
}

// Member is one member of an object: its key unescaped, its value's bytes
// (a subslice of the text given) and where they start in that text.
type Member struct {
	Key    string
	Value  []byte
	Offset int
}

// Object checks b as [Check] does and returns the members of the object it
// must be, in order.
func Object(b []byte) ([]Member, error) {
	s := &scanner{strict: true, collect: true}
	open, err := s.whole(b)
	if err != nil {
		return nil, err
	}
	if open != '{' {
		return nil, fail(skipSpace(b, 0), ErrType)
	}
	return s.members, nil
}

// Members is [Object] with the leniency of [Syntax]: the members of an
// object whose keys may repeat (in any case) and whose strings may hold
// invalid UTF-8 (kept as is in keys). Callers that act on the result must
// have checked b with [Check], or treat the object as suspect.
func Members(b []byte) ([]Member, error) {
	s := &scanner{collect: true}
	open, err := s.whole(b)
	if err != nil {
		return nil, err
	}
	if open != '{' {
		return nil, fail(skipSpace(b, 0), ErrType)
	}
	return s.members, nil
}

// Elements returns the elements of the array b, in order, with the
// leniency of [Syntax]; each element's bytes are a subslice of b.
func Elements(b []byte) ([][]byte, error) {
	s := &scanner{collect: true}
	open, err := s.whole(b)
	if err != nil {
		return nil, err
	}
	if open != '[' {
		return nil, fail(skipSpace(b, 0), ErrType)
	}
	return s.elems, nil
}

// Lookup checks b as [Object] does and returns the values of the members
// named, matched exactly. A key that equals a named one only after case
// folding is ErrUnknownKey, since Go's encoding/json would take it for the
// named one; other keys are left alone (for formats that may grow fields).
func Lookup(b []byte, names ...string) (map[string][]byte, error) {
	ms, err := Object(b)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(names))
	for _, m := range ms {
		for _, n := range names {
			switch {
			case m.Key == n:
				out[n] = m.Value
			// Folding can triple a key's bytes (k, the Kelvin sign), never
			// more: longer keys need not be folded.
			case len(m.Key) <= 3*len(n) && len(n) <= 3*len(m.Key) && FoldEqual(m.Key, n):
				return nil, &Error{Offset: m.Offset, Key: m.Key, Err: ErrUnknownKey}
			}
		}
	}
	return out, nil
}

// PrefixMembers returns the top-level members of the object b reads as
// until its first syntax error, leniently: what can still be recovered of a
// line that is not JSON (for example its id, to answer it).
func PrefixMembers(b []byte) []Member {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	lenient := &scanner{}
	var ms []Member
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke, err := lenient.scanString(b, i)
		if err != nil {
			break
		}
		key := unquote(b[i:ke])
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			break
		}
		vs := skipSpace(b, i+1)
		ve, err := lenient.scan(b, vs)
		if err != nil {
			break
		}
		ms = append(ms, Member{Key: key, Value: b[vs:ve], Offset: vs})
		i = skipSpace(b, ve)
		if i >= len(b) || b[i] != ',' {
			break
		}
		i = skipSpace(b, i+1)
	}
	return ms
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
	return unquote(b), nil
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

// frame is one open container of a scan.
type frame struct {
	object bool
	n      int                 // members so far (objects only)
	small  [smallObject][]byte // the first keys, unescaped (strict scans only)
	keys   map[string]struct{} // folded keys, once there are more than smallObject
}

// scanner walks one JSON value without recursion. strict adds the checks of
// Check (duplicate keys in any case, UTF-8) to the syntax; collect records
// the top-level container's members or elements.
type scanner struct {
	strict  bool
	collect bool

	members []Member
	elems   [][]byte
	key     string // the top-level key whose value is being read
}

// whole scans b as exactly one value (surrounding space allowed) and returns
// its first byte.
func (s *scanner) whole(b []byte) (byte, error) {
	start := skipSpace(b, 0)
	end, err := s.scan(b, start)
	if err != nil {
		return 0, err
	}
	if end = skipSpace(b, end); end != len(b) {
		return 0, fail(end, ErrSyntax)
	}
	return b[start], nil
}

// scan checks the value starting at b[i] and returns the index just past it.
func (s *scanner) scan(b []byte, i int) (int, error) {
	var stackBuf [8]frame // most peers' messages nest less; deeper ones grow the slice
	stack := stackBuf[:0]
	valStart := i // start of the current top-level member's value or element
	for {
		// A value starts at i.
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, fail(i, ErrSyntax)
		}
		if len(stack) == 1 {
			valStart = i
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
				if i, err = s.scanKey(b, i, stack); err != nil {
					return i, err
				}
			}
			continue
		case c == '"':
			if i, err = s.scanString(b, i); err != nil {
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
			if len(stack) == 1 && s.collect {
				if stack[0].object {
					s.members = append(s.members, Member{Key: s.key, Value: b[valStart:i], Offset: valStart})
				} else {
					s.elems = append(s.elems, b[valStart:i])
				}
			}
			top := &stack[len(stack)-1]
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, fail(i, ErrSyntax)
			}
			if b[i] == ',' {
				i = skipSpace(b, i+1)
				if top.object {
					if i, err = s.scanKey(b, i, stack); err != nil {
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

// scanKey reads `"key" :` at b[i] for the innermost open object of stack,
// records the key, and returns the index of the value.
func (s *scanner) scanKey(b []byte, i int, stack []frame) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, fail(i, ErrSyntax)
	}
	end, err := s.scanString(b, i)
	if err != nil {
		return end, err
	}
	f := &stack[len(stack)-1]
	if s.strict || (s.collect && len(stack) == 1) {
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(unquote(b[i:end]))
		}
		if s.collect && len(stack) == 1 {
			s.key = string(key)
		}
		if s.strict {
			if err := f.add(key, i); err != nil {
				return i, err
			}
		}
	}
	f.n++
	end = skipSpace(b, end)
	if end >= len(b) || b[end] != ':' {
		return end, fail(end, ErrSyntax)
	}
	return end + 1, nil
}

// add records the next key of the frame's object (before f.n counts it),
// refusing one it has already seen in any case: the first keys compared
// pairwise with bytes.EqualFold, the folding Fold does, then in a map.
func (f *frame) add(key []byte, off int) error {
	if f.n < smallObject {
		for _, k := range f.small[:f.n] {
			if bytes.EqualFold(k, key) {
				return &Error{Offset: off, Key: string(key), Err: ErrDuplicateKey}
			}
		}
		f.small[f.n] = key
		return nil
	}
	if f.keys == nil {
		f.keys = make(map[string]struct{}, 2*smallObject)
		for _, k := range f.small {
			f.keys[Fold(string(k))] = struct{}{}
		}
	}
	folded := Fold(string(key))
	if _, dup := f.keys[folded]; dup {
		return &Error{Offset: off, Key: string(key), Err: ErrDuplicateKey}
	}
	f.keys[folded] = struct{}{}
	return nil
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
		out = append(out, foldRune(r))
	}
	return string(out)
}

// FoldEqual reports whether Fold(a) == Fold(b), without building either:
// it is on the path of every key a strict lookup reads.
func FoldEqual(a, b string) bool {
	for a != "" && b != "" {
		ra, na := rune(a[0]), 1
		if ra >= utf8.RuneSelf {
			ra, na = utf8.DecodeRuneInString(a)
		}
		rb, nb := rune(b[0]), 1
		if rb >= utf8.RuneSelf {
			rb, nb = utf8.DecodeRuneInString(b)
		}
		if ra != rb && foldRune(ra) != foldRune(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == b
}

// foldRune is the least rune of r's simple-folding orbit.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < m {
			m = f
		}
	}
	return m
}

// scanString checks the string at b[i] (b[i] == '"') and returns the index
// past its closing quote. Escapes and control characters are syntax; UTF-8
// and surrogate pairs are checked only when strict.
func (s *scanner) scanString(b []byte, i int) (int, error) {
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
				if s.strict && utf16.IsSurrogate(r) {
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
		case c < utf8.RuneSelf || !s.strict:
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

// unquote decodes a string whose syntax scanString accepted. A surrogate
// escape that is not half of a pair (possible in lenient scans) becomes
// U+FFFD, as in encoding/json.
func unquote(q []byte) string {
	body := q[1 : len(q)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body)
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
				r2, ok := rune(0), false
				if j+1 < len(body) && body[j] == '\\' && body[j+1] == 'u' {
					r2, ok = hex4(body, j+2)
				}
				if d := utf16.DecodeRune(r, r2); ok && d != unicode.ReplacementChar {
					r = d
					j += 6
				} else {
					r = unicode.ReplacementChar
				}
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
	return string(out)
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

// AppendCompact appends the JSON text b with insignificant whitespace
// removed, at any depth. b must have passed [Syntax] (or [Check]); what it
// appends for anything else is unspecified.
func AppendCompact(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			end, ok := skipString(b, i)
			dst = append(dst, b[i:end]...)
			if !ok {
				return dst
			}
			i = end
		case isSpace(c):
			i++
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}
