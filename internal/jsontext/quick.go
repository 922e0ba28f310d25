package jsontext

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// This file holds the helpers that look at text without checking it all:
// Skim, for a fast path that must decide cheaply that a line needs no
// decoding, and Mentions, for text that is not JSON but may still name
// something permhost must not let through.

// Skim calls f with the key (as written between its quotes: escapes are
// not decoded) and the value of each top-level member of the object b, in
// order, and reports whether b is one object, followed by nothing but
// whitespace, whose every member f accepted. Outside strings it checks what
// decides where a value ends the way every JSON parser sees it: brackets
// matched by kind, strings closed, literals and numbers made of letters,
// digits and ".+-" only (no quotes of another kind, no comments). Inside
// strings it checks nothing, and it does not check where colons and commas
// stand below the top level. It does not allocate. It is for fast paths
// alone: a caller must make sure that anything Skim could read otherwise
// than a strict parser (escapes, which could spell a key; non-ASCII keys,
// which Go's encoding/json folds) goes to [Check] instead.
//
// nested is the contents (between the quotes) of the longest string below
// the top level, for a [SkimMemo]; empty when there is none.
func Skim(b []byte, f func(key, value []byte) bool) (nested Span, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return Span{}, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return Span{}, skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return Span{}, false
		}
		ke, ok := skipString(b, i)
		if !ok {
			return Span{}, false
		}
		key := b[i+1 : ke-1]
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return Span{}, false
		}
		i = skipSpace(b, i+1)
		ve, ok := skimValue(b, i, &nested)
		if !ok || !f(key, b[i:ve]) {
			return Span{}, false
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return Span{}, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return nested, skipSpace(b, i+1) == len(b)
		default:
			return Span{}, false
		}
	}
}

// A Span is the text b[From:To] of some b.
type Span struct{ From, To int }

// A SkimMemo remembers an object [Skim] accepted as its text around the
// longest string below its top level, so that a later text equal to it but
// for that string's contents is known to skim alike without another walk:
// the same structure, the same top-level keys and the same top-level scalar
// values (only the values of the members that hold the string differ, in
// that string's contents). That holds when the new contents close no string
// early (no quote without an odd run of backslashes before it) and do not
// end in an odd run of backslashes, which would escape the closing quote.
// The zero SkimMemo remembers nothing.
type SkimMemo struct {
	head, tail []byte // the text up to the string's contents, and from its closing quote
}

// skimMemoFrom is the shortest string contents worth remembering.
const skimMemoFrom = 64

// Set remembers b, which Skim accepted with nested as its longest nested
// string, or forgets what it remembered when that string is short.
func (m *SkimMemo) Set(b []byte, nested Span) {
	if nested.To-nested.From < skimMemoFrom {
		m.head, m.tail = m.head[:0], m.tail[:0]
		return
	}
	m.head = append(m.head[:0], b[:nested.From]...)
	m.tail = append(m.tail[:0], b[nested.To:]...)
}

// Contents reports whether b is the remembered text with other contents of
// its longest nested string, under the conditions of SkimMemo, and returns
// those contents: whatever else a caller checked of the remembered text
// holds for b but for them. (The contents begin after a quote and end
// before one, so no escape and no word without quotes reaches across.)
func (m *SkimMemo) Contents(b []byte) ([]byte, bool) {
	if len(m.head) == 0 || len(b) < len(m.head)+len(m.tail) || !bytes.HasPrefix(b, m.head) || !bytes.HasSuffix(b, m.tail) {
		return nil, false
	}
	mid := b[len(m.head) : len(b)-len(m.tail)]
	for i := 0; ; i++ {
		k := bytes.IndexByte(mid[i:], '"')
		if k < 0 {
			return mid, backslashesBefore(mid, len(mid))%2 == 0
		}
		i += k
		if backslashesBefore(mid, i)%2 == 0 {
			return nil, false
		}
	}
}

// backslashesBefore counts the backslashes just before b[i].
func backslashesBefore(b []byte, i int) int {
	n := 0
	for i > 0 && b[i-1] == '\\' {
		n, i = n+1, i-1
	}
	return n
}

// skimMaxDepth bounds the nesting skimValue follows (one bit each of its
// stack); deeper values are not skimmed.
const skimMaxDepth = 64

// skimValue returns the index just past the value starting at b[i], with
// the checks Skim describes, and widens *nested to the longest string it
// holds (below its top) if that is longer.
func skimValue(b []byte, i int, nested *Span) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c != '{' && c != '[':
		j := i
		for j < len(b) && isLiteralByte(b[j]) {
			j++
		}
		return j, j > i
	}
	var objects uint64 // one bit per open bracket, innermost lowest: 1 for '{'
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			j, ok := skipString(b, i)
			if !ok {
				return j, false
			}
			if j-i-2 > nested.To-nested.From {
				*nested = Span{i + 1, j - 1}
			}
			i = j
			continue
		case '{', '[':
			if depth == skimMaxDepth {
				return i, false
			}
			objects <<= 1
			if c == '{' {
				objects |= 1
			}
			depth++
		case '}', ']':
			if (objects&1 == 1) != (c == '}') {
				return i, false
			}
			objects >>= 1
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case ',', ':', ' ', '\t', '\r', '\n':
		default:
			if !isLiteralByte(c) {
				return i, false
			}
		}
		i++
	}
	return i, false
}

// isLiteralByte reports whether c may be part of a JSON literal or number
// (or of the NaN and Infinity some lenient parsers take).
func isLiteralByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '+' || c == '-'
}

// skipString returns the index just past the string starting at b[i] (which
// must be '"'), finding quotes with bytes.IndexByte.
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

// Mentions reports whether word occurs in b once JSON string escapes are
// decoded wherever they appear (b need not be JSON): "request_permission"
// is mentioned by `request\u005fpermission` too. word must be ASCII.
func Mentions(b []byte, word string) bool { return mentions(b, word, false) }

// MentionsFold is Mentions with ASCII letters matched in any case (after
// escapes are decoded: `\u004Futcome` mentions "outcome").
func MentionsFold(b []byte, word string) bool { return mentions(b, word, true) }

func mentions(b []byte, word string, fold bool) bool {
	if fold {
		word = strings.ToLower(word)
	}
	if word == "" || !fold && bytes.Contains(b, []byte(word)) {
		return true
	}
	if !fold && bytes.IndexByte(b, '\\') < 0 {
		return false
	}
	// Decode escapes on the fly into a window of len(word) bytes.
	n := len(word)
	window := make([]byte, 0, 2*n)
	var buf [utf8.UTFMax]byte
	push := func(p []byte) bool {
		for _, c := range p {
			if len(window) == cap(window) {
				window = append(window[:0], window[len(window)-n+1:]...)
			}
			if fold && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			window = append(window, c)
			if len(window) >= n && string(window[len(window)-n:]) == word {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c == '\\' && i+1 < len(b) {
			if b[i+1] == 'u' {
				if r, ok := hex4(b, i+2); ok {
					if push(buf[:utf8.EncodeRune(buf[:], r)]) {
						return true
					}
					i += 6
					continue
				}
			}
			if e, ok := simpleEscape(b[i+1]); ok {
				if push([]byte{e}) {
					return true
				}
				i += 2
				continue
			}
		}
		if push(b[i : i+1]) {
			return true
		}
		i++
	}
	return false
}

// simpleEscape returns the character a one-letter escape stands for.
func simpleEscape(e byte) (byte, bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}
