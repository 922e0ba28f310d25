package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/jsontext"
)

// readLines reads in through a lineReader, each line a copy.
func readLines(t testing.TB, in []byte) [][]byte {
	r := newLineReader(bytes.NewReader(in), DefaultMaxLineBytes, "agent")
	var lines [][]byte
	for {
		l, err := r.next()
		if err == io.EOF {
			return lines
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Clone(l))
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 3*readBufferSize+17)
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"lines", "a\nb\n", []string{"a\n", "b\n"}},
		{"crlf", "a\r\nb\r\n", []string{"a\r\n", "b\r\n"}},
		{"blank lines", "\n\n  \n", []string{"\n", "\n", "  \n"}},
		{"last line unterminated", "a\nb", []string{"a\n", "b"}},
		{"long line", long + "\nz\n", []string{long + "\n", "z\n"}},
		{"long unterminated", "a\n" + long, []string{"a\n", long}},
		{"empty", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, l := range readLines(t, []byte(c.in)) {
				got = append(got, string(l))
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
				t.Fatalf("got %d lines %.60q, want %d", len(got), got, len(c.want))
			}
		})
	}
}

func TestLineReaderCap(t *testing.T) {
	r := newLineReader(strings.NewReader(strings.Repeat("y", 200<<10)+"\n"), 100<<10, "client")
	_, err := r.next()
	var tooLong *LineTooLongError
	if !errors.As(err, &tooLong) || !errors.Is(err, ErrLineTooLong) || tooLong.From != "client" {
		t.Fatalf("err = %v, want a LineTooLongError from the client", err)
	}
}

func TestTrimEOL(t *testing.T) {
	for in, want := range map[string]string{"a\n": "a", "a\r\n": "a", "a": "a", "a\r": "a\r", "\n": "", "": ""} {
		if got := string(trimEOL([]byte(in))); got != want {
			t.Errorf("trimEOL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsPlainUpdate(t *testing.T) {
	cases := []struct {
		line string
		want bool
	}{
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`, true},
		{`{ "params" : {"update":{"sessionUpdate":"plan"}} , "method" : "session/update" , "jsonrpc":"2.0"}`, true},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t"}}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"current_mode_update","currentModeId":"plan"}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{}}`, false},
		// A second method key: a parser keeping the last would see a permission request.
		{`{"jsonrpc":"2.0","method":"session/update","method":"session/request_permission","id":1}`, false},
		// An escaped key or value could spell anything.
		{`{"jsonrpc":"2.0","method":"session/update","meth\u006fd":"x","id":1}`, false},
		{`{"jsonrpc":"2.0","method":"session\/update"}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"text":"session/update"}}`, false},
		{`{"jsonrpc":"2.0","params":{"method":"session/update"},"method":"_x"}`, false},
		{`[{"jsonrpc":"2.0","method":"session/update"}]`, false},
		{`not json "method":"session/update"`, false},
		{``, false},
		// Text with the escapes agents write keeps the fast path.
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a \"quote\",\n\ttab \\u0041 C:\\\\x snake_case"}}}}` + "\r\n", true},
		// Escapes that could spell a word of the strict path do not.
		{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool\u005fcall"}}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"x"},"a":"fs\/write"}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"x":"tool\_call"}}`, false}, // not an escape
		// An id makes it a request; a result or error, a response.
		{`{"jsonrpc":"2.0","id":1,"method":"session/update","params":{}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{},"error":{}}`, false},
		// Any case of an envelope key, or a key Go's encoding/json may fold
		// into one: a Go editor reads the last of them.
		{`{"jsonrpc":"2.0","method":"session/update","METHOD":"fs/write_text_file","Id":3,"params":{}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","Params":{}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","ID":1}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","re\u017fult":{},"id":1}`, false},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"re\xc5\xbfult\":{}}", false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{},"params":{}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","_meta":{"x":1}}`, true},
		// Anything after the object, or a value no parser reads alike.
		{`{"jsonrpc":"2.0","method":"session/update"} {"id":1,"method":"fs/write_text_file"}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"a":[}],"id":1}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"a":'x","id":1,"b":"'}}`, false},
		{`{"method":"session/update"}`, true},
		{`{"jsonrpc":"2.0"}`, false},
	}
	for _, c := range cases {
		if got := isPlainUpdate([]byte(c.line)); got != c.want {
			t.Errorf("isPlainUpdate(%s) = %v, want %v", c.line, got, c.want)
		}
	}
}

func TestDecode(t *testing.T) {
	cases := []struct {
		line   string
		kind   kind
		method string
	}{
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`, kindRequest, "initialize"},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, kindRequest, "x"},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, kindNotification, "session/cancel"},
		{`{"jsonrpc":"2.0","id":"a","result":null}`, kindResponse, ""},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}}`, kindResponse, ""},
		{`{"jsonrpc":"2.0","id":3}`, kindInvalid, ""},
		{`{"jsonrpc":"2.0","method":5}`, kindInvalid, ""},
		{`  [1]`, kindBatch, ""},
		{` `, kindBlank, ""},
		{`{"unterminated":`, kindInvalid, ""},
		{`hello`, kindInvalid, ""},
	}
	for _, c := range cases {
		d := decode([]byte(c.line))
		if d.kind != c.kind || d.method != c.method {
			t.Errorf("decode(%s) = %v %q, want %v %q", c.line, d.kind, d.method, c.kind, c.method)
		}
	}
}

// FuzzLines checks the framing and classification of arbitrary input:
// reading loses and adds no byte, and the fast path never claims a line that
// a JSON parser reads as anything but a session/update notification.
func FuzzLines(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{}}` + "\n",
		`{"jsonrpc":"2.0","method":"session/update","method":"session/request_permission","id":1}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"a":"\""}}` + "\r\n\n[1]\nx",
		`{"method" :"session/update" ,"id":1,"params":{"x":"method"}}`,
		`{"jsonrpc":"2.0","method":"session/update","METHOD":"fs/write_text_file"}`,
		`{"method":"session/update","params":{"t":"a\\\\u0041 \\n b_c"}}` + "\n",
		memoSeed(`0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef`, `0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\\`,
			`","id":1,"x":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef`),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out []byte
		var fp fastPath // remembering the shape of the last plain line
		for _, l := range readLines(t, in) {
			if got, want := fp.plain(l), isPlainUpdate(l); got != want {
				t.Fatalf("fast path with its memo says %v for %q, without %v", got, l, want)
			}
			if i := bytes.IndexByte(l, '\n'); i >= 0 && i != len(l)-1 {
				t.Fatalf("line with an inner newline: %q", l)
			}
			out = append(out, l...)
			if isPlainUpdate(l) {
				checkPlain(t, l)
			}
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("framing changed the bytes: %q -> %q", in, out)
		}
	})
}

// memoSeed is lines of one shape but for their text, the last ones
// trying to end the text early or escape its closing quote.
func memoSeed(texts ...string) string {
	var b strings.Builder
	for _, t := range texts {
		b.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + t + `"}}}}` + "\n")
	}
	return b.String()
}

// The fast path's memo takes a line of the last plain line's shape without
// a walk, and never one whose text changes the shape.
func TestFastPathMemo(t *testing.T) {
	const long = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct {
		text string
		want bool
	}{
		{long, true},
		{long + long + `\"quoted\"\\`, true},
		{`short`, true},
		{long + `","id":1,"x":"`, true}, // closes the text: a nested id, still plain
		{long + `"}}},"id":1,"method":"fs/x","p":{"u":{"c":{"z":"`, false}, // closes it and reaches the top level
		{long + `\`, false}, // escapes the closing quote
		{long + `\\\`, false},
	}
	var fp fastPath
	for _, c := range cases {
		fp.plain([]byte(memoSeed(long))) // the memo holds this shape
		line := []byte(memoSeed(c.text))
		if got := fp.plain(line); got != c.want || got != isPlainUpdate(line) {
			t.Errorf("text %q: plain with the memo %v, without %v, want %v", c.text, got, isPlainUpdate(line), c.want)
		}
	}
	if _, ok := fp.memo.Contents([]byte(memoSeed(long)[:40])); ok {
		t.Error("a line shorter than the memo matched")
	}
}

// checkPlain fails unless l, which the fast path claimed, reads as a
// session/update notification (or as nothing at all) to the strict decoder
// and to Go's encoding/json (which folds keys and keeps the last), and
// mentions nothing the strict path looks for.
func checkPlain(t *testing.T, l []byte) {
	t.Helper()
	body := trimEOL(l)
	d := decode(body)
	switch {
	case d.kind == kindInvalid:
		if mayBePermission(body, d) {
			t.Fatalf("fast path took %q, which may be a permission request", l)
		}
	case d.kind != kindNotification || d.method != MethodSessionUpdate:
		t.Fatalf("fast path took %q, the strict decoder reads a %v %q", l, d.kind, d.method)
	}
	var env struct {
		ID     *json.RawMessage
		Method *string
		Result *json.RawMessage
		Error  *json.RawMessage
	}
	if json.Unmarshal(body, &env) == nil {
		if env.ID != nil || env.Result != nil || env.Error != nil || env.Method == nil || *env.Method != MethodSessionUpdate {
			t.Fatalf("fast path took %q, encoding/json reads %+v", l, env)
		}
	}
	for _, w := range strictWords {
		if jsontext.Mentions(body, w) {
			t.Fatalf("fast path took %q, which mentions %s", l, w)
		}
	}
}

// A long line's buffer never grows past the line cap plus the read
// buffer (and, for a mapping, a page): doubling stops at the bound.
func TestLineBufferBound(t *testing.T) {
	for _, size := range []int{300 << 10, 3<<20 + 17} {
		max := size + 100
		r := newLineReader(strings.NewReader(strings.Repeat("z", size-1)+"\n"+"next\n"), max, "agent")
		line, err := r.next()
		if err != nil || len(line) != size {
			t.Fatalf("%d: got %d bytes, %v", size, len(line), err)
		}
		if c := cap(line); c > max+readBufferSize+64<<10 {
			t.Errorf("a %d-byte line under a %d-byte cap has a %d-byte buffer", size, max, c)
		}
		taken, release := r.take()
		if len(taken) != size || &taken[0] != &line[0] {
			t.Fatalf("%d: take copied the long line", size)
		}
		if next, err := r.next(); err != nil || string(next) != "next\n" {
			t.Fatalf("after a taken line: %q, %v", next, err)
		}
		if strings.Count(string(taken), "z") != size-1 {
			t.Fatal("the taken line changed when the reader went on")
		}
		if release != nil {
			release()
		}
	}
}

// FuzzDecode: whatever decode reads as a message, encoding/json (which
// matches keys in any case) reads the same way — same method, same id by
// value — so no peer's parser sees another message; and a line decode
// cannot read that names request_permission is never taken for anything
// else.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"session/request_permission"}`,
		`{"jsonrpc":"2.0","id":1,"method":"session\u002frequest_permission"}`,
		`{"id":5,"ID":6,"result":{}}`,
		`{"id":5.0,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`[{"method":"a"},{"id":1,"result":null}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d := decode(body)
		switch d.kind {
		case kindRequest, kindNotification, kindResponse:
		default:
			return
		}
		var std struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal(body, &std) != nil {
			return // deeper than encoding/json goes, or invalid UTF-8 it would replace
		}
		if d.kind != kindResponse && (std.Method == nil || *std.Method != d.method) {
			t.Fatalf("decode reads method %q, encoding/json %v", d.method, std.Method)
		}
		if d.id != nil && idKey(std.ID) != idKey(d.id) {
			t.Fatalf("decode reads id %s, encoding/json %s", d.id, std.ID)
		}
	})
}
