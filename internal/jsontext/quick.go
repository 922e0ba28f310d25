package jsontext

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// This file holds the two helpers that look at text without checking it:
// Peek, for a fast path that must decide cheaply that a line needs no
// decoding, and Mentions, for text that is not JSON but may still name
// something permhost must not let through.

// Peek returns the value of the first top-level member of the object b whose
// key, as written (escapes are not decoded), is name. It checks only enough
// structure to find the value's end, so it is for fast paths alone: a caller
// must make sure that any text Peek could misread (a key spelled with an
// escape, the key written twice) goes to [Check] instead.
func Peek(b []byte, name string) ([]byte, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke, ok := skipString(b, i)
		if !ok {
			return nil, false
		}
		key := b[i+1 : ke-1]
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		ve, ok := skipValue(b, i)
		if !ok {
			return nil, false
		}
		if string(key) == name {
			return b[i:ve], true
		}
		i = skipSpace(b, ve)
		if i >= len(b) || b[i] != ',' {
			return nil, false
		}
		i = skipSpace(b, i+1)
	}
	return nil, false
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

// skipValue returns the index just past the value starting at b[i],
// checking only the brackets and strings it needs to find the end.
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
