package pdk

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean makes s fit to show a person: tabs and line breaks become spaces,
// other control characters, bidirectional overrides and invalid UTF-8 become
// '?', so that text an agent wrote (a command, a path, a title) cannot move
// a terminal's cursor or reorder what the person reads. When max > 0 the
// result is cut to at most max bytes, at a character boundary, ending in
// "…". [Handle] cleans every decision's reason and explanation; call Clean
// yourself to cut agent text to a length.
func Clean(s string, max int) string {
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isInvalid(s[i:]):
			r = '?'
		case r == '\t' || r == '\n' || r == '\r':
			r = ' '
		case unicode.IsControl(r) || isBidi(r):
			r = '?'
		}
		b.WriteRune(r)
	}
	out := b.String()
	if max <= 0 || len(out) <= max {
		return out
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	if cut <= 0 {
		return ellipsis[:0]
	}
	return out[:cut] + ellipsis
}

func isInvalid(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && size <= 1
}

// isBidi reports the explicit directional formatting characters, which can
// make text display in a different order than it is stored.
func isBidi(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}
