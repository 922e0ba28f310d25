package safetext

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Terminal returns s as it is safe to show on one line of a terminal:
// line ends and tabs are escaped too.
func Terminal(s string) string { return render(s, false) }

// TerminalLines is [Terminal] for text of several lines (an agent's
// message, a command, another program's stderr): it keeps line feeds,
// "\r\n" and tabs.
func TerminalLines(s string) string { return render(s, true) }

// HTML returns s as [Terminal] renders it, escaped for HTML text or a
// quoted attribute value.
func HTML(s string) string { return html.EscapeString(Terminal(s)) }

// plain reports whether s holds only printable ASCII, which every
// rendering keeps as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

func render(s string, lines bool) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := rune(-1)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			escapeByte(&b, s[i])
			r = -1 // the output ends with an escape, not with this rune
		case lines && (r == '\n' || r == '\t' || r == '\r' && strings.HasPrefix(s[i+1:], "\n")):
			b.WriteRune(r)
		case r == zwj && joinsEmoji(prev, s[i+n:]):
			b.WriteRune(r)
		case escaped(r):
			escapeRune(&b, r)
			r = -1
		default:
			b.WriteString(s[i : i+n])
		}
		prev = r
		i += n
	}
	return b.String()
}

const zwj = '\u200d'

// escaped reports whether r is shown escaped.
func escaped(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r < 0xa0:
		return false
	case r == '\u2028', r == '\u2029':
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// joinsEmoji reports whether a zero-width joiner after prev and before
// rest is part of an emoji sequence: a pictograph (or the emoji
// presentation selector that follows one) before it, a pictograph after.
func joinsEmoji(prev rune, rest string) bool {
	next, n := utf8.DecodeRuneInString(rest)
	if next == utf8.RuneError && n <= 1 {
		return false // an invalid byte is shown escaped
	}
	return (pictograph(prev) || prev == '\ufe0f') && pictograph(next)
}

func pictograph(r rune) bool {
	return r >= 0x1f000 && r <= 0x1faff || r >= 0x2000 && unicode.Is(unicode.So, r)
}

const hex = "0123456789abcdef"

func escapeByte(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&0xf])
}

func escapeRune(b *strings.Builder, r rune) {
	switch r {
	case '\a':
		b.WriteString(`\a`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	case '\v':
		b.WriteString(`\v`)
	default:
		switch {
		case r < 0x80:
			escapeByte(b, byte(r))
			return
		case r <= 0xffff:
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hex[r>>shift&0xf])
			}
		default:
			b.WriteString(`\U`)
			for shift := 28; shift >= 0; shift -= 4 {
				b.WriteByte(hex[r>>shift&0xf])
			}
		}
	}
}
