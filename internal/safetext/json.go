package safetext

import (
	"unicode/utf16"
	"unicode/utf8"
)

// JSON returns the JSON text b with every character [Terminal] would
// escape written as a \u escape (a byte of invalid UTF-8 as \ufffd), but
// for the line feeds, tabs and carriage returns of JSON's whitespace: the
// same JSON value, safe to show on a terminal. In JSON text the others can
// only stand inside strings, where \u escapes mean them.
func JSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] >= 0x20 && b[i] < 0x7f {
		i++
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, i, len(b)+16)
	copy(out, b[:i])
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case r == '\n', r == '\t', r == '\r':
			// JSON's whitespace: outside strings (raw, they are not JSON
			// inside one).
			out = append(out, byte(r))
		case !escaped(r) && r != zwj:
			out = append(out, b[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = appendU(appendU(out, r1), r2)
		default:
			out = appendU(out, r)
		}
		i += n
	}
	return out
}

func appendU(out []byte, r rune) []byte {
	return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
