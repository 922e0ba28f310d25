package safetext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerminal(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain ASCII", "rm -rf build", "rm -rf build"},
		{"letters, CJK and emoji", "Grüße, ☃ 日本語 العربية 👍🏽", "Grüße, ☃ 日本語 العربية 👍🏽"},
		{"an emoji's zero-width joiner", "👩🏽‍💻 🏳️‍🌈", "👩🏽‍💻 🏳️‍🌈"},
		{"a backslash is kept", `grep 'a\|b' C:\dir`, `grep 'a\|b' C:\dir`},
		{"OSC title", "x\x1b]2;pwned\x07y", `x\x1b]2;pwned\ay`},
		{"CSI clear screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"C0, DEL and C1", "\x00\x08\x7f\u0085\u009b", `\x00\b\x7f\u0085\u009b`},
		{"line ends and tabs", "a\nb\r\nc\td", `a\nb\r\nc\td`},
		{"bidi override", "allow\u202eevil", `allow\u202eevil`},
		{"bidi isolates and marks", "\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u202a", `\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u202a`},
		{"zero-width characters", "a\u200bb\u200cc\u200dd\u2060e\ufeff", `a\u200bb\u200cc\u200dd\u2060e\ufeff`},
		{"a joiner not between pictographs", "a\u200d👍 👍\u200d\u200d👍", `a\u200d👍 👍\u200d\u200d👍`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"tag characters", "x\U000e0041", `x\U000e0041`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"an encoded surrogate", "\xed\xa0\x80", `\xed\xa0\x80`},
		{"U+FFFD itself is text", "a\ufffdb", "a\ufffdb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Terminal(tt.in); got != tt.want {
				t.Errorf("Terminal(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTerminalLines(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"line feeds, CRLF and tabs kept", "a\n\tb\r\nc", "a\n\tb\r\nc"},
		{"a lone carriage return escaped", "safe\rEVIL", `safe\rEVIL`},
		{"a carriage return at the end escaped", "a\r", `a\r`},
		{"controls escaped", "x\x1b]2;t\x07\n\u202ey\xff", "x\\x1b]2;t\\a\n\\u202ey\\xff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TerminalLines(tt.in); got != tt.want {
				t.Errorf("TerminalLines(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestHTML(t *testing.T) {
	got := HTML("<b title=\"x\">&'\x1b[1m\u202e</b>")
	want := `&lt;b title=&#34;x&#34;&gt;&amp;&#39;\x1b[1m\u202e&lt;/b&gt;`
	if got != want {
		t.Errorf("HTML = %q, want %q", got, want)
	}
}

// unsafeRune returns the first rune of s a rendering must not let
// through raw, and whether there is one.
func unsafeRune(s string, lines bool) (string, bool) {
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd") {
			return s[i : i+1], true
		}
		if lines && (r == '\n' || r == '\t' || r == '\r' && strings.HasPrefix(s[i+1:], "\n")) {
			continue
		}
		if r == zwj && i > 0 {
			continue // judged by the rendering's own rule, checked by idempotence
		}
		if escaped(r) {
			return string(r), true
		}
	}
	return "", false
}

func FuzzTerminal(f *testing.F) {
	for _, s := range []string{"", "plain", "x\x1b]2;t\x07", "\u202e\u200b\u2028\xff", "👩🏽‍💻", "\xff\u200d👍", "a\r\nb\rc\t", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, lines := range []bool{false, true} {
			got := render(s, lines)
			if !utf8.ValidString(got) {
				t.Fatalf("render(%q, %v) = %q: not UTF-8", s, lines, got)
			}
			if r, bad := unsafeRune(got, lines); bad {
				t.Fatalf("render(%q, %v) = %q lets %q through", s, lines, got, r)
			}
			if again := render(got, lines); again != got {
				t.Fatalf("render is not idempotent: %q → %q → %q", s, got, again)
			}
			if _, bad := unsafeRune(s, lines); !bad && !strings.ContainsRune(s, zwj) && got != s {
				t.Fatalf("render(%q, %v) = %q changed safe text", s, lines, got)
			}
		}
		h := HTML(s)
		if strings.ContainsAny(h, "<>\"'") {
			t.Fatalf("HTML(%q) = %q", s, h)
		}
	})
}

func TestJSON(t *testing.T) {
	in := []byte("{\"a\":\"x\u202ey\u009b\x7f\U000e0041\u200d👍 日本\",\"b\":1}\n")
	want := `{"a":"x\u202ey\u009b\u007f\udb40\udc41\u200d👍 日本","b":1}` + "\n"
	if got := string(JSON(in)); got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
	if plain := []byte(`{"a":"b"}`); &JSON(plain)[0] != &plain[0] {
		t.Error("plain JSON copied")
	}
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "x\x1b]2;t\x07", "\u202e\u200b\u2028\xff", "👩🏽‍💻", "\U000e0041\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(map[string]string{"k": s})
		if err != nil {
			t.Fatal(err)
		}
		got := JSON(b)
		var back, want map[string]string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("JSON(%s) = %s: %v", b, got, err)
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if back["k"] != want["k"] {
			t.Fatalf("JSON(%s) = %s reads %q, want %q", b, got, back["k"], want["k"])
		}
		if r, bad := unsafeRune(string(got), false); bad || strings.ContainsRune(string(got), zwj) {
			t.Fatalf("JSON(%s) = %s lets %q through", b, got, r)
		}
	})
}
