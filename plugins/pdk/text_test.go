package pdk

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "rm -rf build", 0, "rm -rf build"},
		{"line breaks", "a\nb\r\nc\td", 0, "a b  c d"},
		{"terminal escape", "ls \x1b[2J\x1b[31mok", 0, "ls ?[2J?[31mok"},
		{"C1 and DEL", "a\u0085b\x7fc", 0, "a?b?c"},
		{"bidi override", "evil\u202Etxt.exe", 0, "evil?txt.exe"},
		{"invalid UTF-8", "a\xffb", 0, "a?b"},
		{"real U+FFFD kept", "a\uFFFDb", 0, "a\uFFFDb"},
		{"cut", "abcdefghij", 8, "abcde…"},
		{"cut at rune boundary", "ééééé", 7, "éé…"},
		{"fits", "abc", 3, "abc"},
		{"too small for anything", "abcdef", 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Clean(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("Clean(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			if tt.max > 0 && len(got) > tt.max {
				t.Errorf("%d bytes, over %d", len(got), tt.max)
			}
		})
	}
}

func FuzzClean(f *testing.F) {
	f.Add("ls \x1b[31m\u202E\xff", 10)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 1 << 12
		got := Clean(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 %q", got)
		}
		if max > 0 && len(got) > max {
			t.Fatalf("%d bytes, over %d", len(got), max)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || isBidi(r) {
				t.Fatalf("%q keeps %U", got, r)
			}
		}
		if max <= 0 && strings.Count(got, "") != strings.Count(s, "") && utf8.ValidString(s) {
			t.Fatalf("length in runes changed: %q -> %q", s, got)
		}
	})
}
