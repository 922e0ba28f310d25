package shell

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// ErrNoSyntaxKey is wrapped by the error of a script [SyntaxKey] cannot
// read.
var ErrNoSyntaxKey = errors.New("shell: no syntax key")

// SyntaxKey returns a key of the bash script src's whole syntax tree, as
// mvdan.cc/sh parses it, without positions: two scripts have the same key
// when they differ only in blanks, line breaks between statements and
// comments. Everything else is part of it: control operators (&&, ||, ;,
// |, &), loops, conditionals, subshells, blocks, functions, redirections,
// here-document delimiters and bodies, assignments, and each word's
// quoting (`rm "build"` and `rm build` differ). It is what an exact
// command grant compares beside the analysed commands, which do not say
// how the commands are joined. A script the analysis would not read (a
// parse error, a carriage return, a NUL byte, invalid UTF-8) has none.
//
// The key is built from the tree, not printed back as a script: mvdan's
// printer does not print every tree it parses into a script that parses
// back to it.
func SyntaxKey(src string) (string, error) {
	switch {
	case strings.ContainsRune(src, '\r'):
		return "", fmt.Errorf("%w: carriage return", ErrNoSyntaxKey)
	case strings.ContainsRune(src, 0):
		return "", fmt.Errorf("%w: NUL byte", ErrNoSyntaxKey)
	case !utf8.ValidString(src):
		return "", fmt.Errorf("%w: not valid UTF-8", ErrNoSyntaxKey)
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoSyntaxKey, err)
	}
	var b strings.Builder
	writeKey(&b, reflect.ValueOf(file.Stmts))
	return b.String(), nil
}

var posType = reflect.TypeFor[syntax.Pos]()

// writeKey writes v, a value of the syntax tree, with every field but
// positions: each node as its type and fields, each operator by name.
func writeKey(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		writeKey(b, v.Elem())
	case reflect.Struct:
		t := v.Type()
		b.WriteString(t.Name())
		b.WriteByte('{')
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Type == posType {
				continue
			}
			b.WriteString(f.Name)
			b.WriteByte(':')
			writeKey(b, v.Field(i))
			b.WriteByte(' ')
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		b.WriteByte('[')
		for i := range v.Len() {
			writeKey(b, v.Index(i))
			b.WriteByte(' ')
		}
		b.WriteByte(']')
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		// An operator's String names it; a plain number is itself.
		fmt.Fprintf(b, "%v", v.Interface())
	default:
		// No such field in mvdan's syntax tree today: a kind the key
		// cannot show must not make two trees look alike.
		panic(fmt.Sprintf("shell: syntax key of a %s", v.Kind()))
	}
}
