package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
)

// plainEncoding is the reference: abi.Request through encoding/json with
// its own MarshalJSON methods, HTML left unescaped.
func plainEncoding(t testing.TB, req abi.Request) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(req))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// handEncoding is what a plugin receives: appendRequest's bytes.
func handEncoding(t testing.TB, req abi.Request) []byte {
	b, err := appendRequest(nil, &req)
	require.NoError(t, err)
	return b
}

func TestRequestEncoding(t *testing.T) {
	shell := &abi.Shell{Source: "a && b > c", Parsed: true}
	nilArgv := &abi.Shell{Source: "x", Commands: []abi.Command{{Argv: []string{"<x>"}}, {}}}
	for _, tc := range []struct {
		name string
		req  abi.Request
	}{
		{"zero", abi.Request{}},
		{"1 KiB", request1K(t)},
		{"warm-up", warmupRequest},
		{"nil commands", abi.Request{Shell: shell}},
		{"nil argv", abi.Request{Shell: nilArgv, Options: offered}},
		{"html and unicode", abi.Request{DecisionID: "<&>\u2028\u2029é\x7f\x00\x1f\b\f\n\r\t\"\\\xff\xe2\x80", Raw: json.RawMessage(` { "a" : [1, 2] } `)}},
		{"every field", everyField(t)},
		{"negative numbers", abi.Request{ABI: abi.Version{Major: -1, Minor: -2},
			ToolCall: abi.ToolCall{Locations: []abi.Location{{Line: -3}}},
			Shell:    &abi.Shell{Commands: []abi.Command{{Pipeline: -4, Stage: -5, Source: &abi.Range{}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := plainEncoding(t, tc.req)
			got := handEncoding(t, tc.req)
			assert.Equal(t, string(want), string(got))
		})
	}
	assert.Nil(t, shell.Commands, "the caller's Shell is not changed")
	assert.Nil(t, nilArgv.Commands[1].Argv, "the caller's Commands are not changed")
}

func TestRequestEncodingInvalidRaw(t *testing.T) {
	for _, req := range []abi.Request{
		{Raw: json.RawMessage(`{`)},
		{Config: json.RawMessage(`nul`)},
		{ToolCall: abi.ToolCall{RawInput: json.RawMessage(`[1,]`)}},
		{ToolCall: abi.ToolCall{Content: json.RawMessage(`1 2`)}},
	} {
		_, err := appendRequest(nil, &req)
		assert.Error(t, err)
		_, err = json.Marshal(req)
		assert.Error(t, err, "encoding/json refuses it too")
	}
}

// everyField is a request with every field of every abi type it reaches
// set, found by reflection: a field abi gains and appendRequest does not
// write makes TestRequestEncoding fail.
func everyField(t *testing.T) abi.Request {
	var req abi.Request
	n := 0
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		n++
		switch v.Kind() {
		case reflect.String:
			v.SetString(fmt.Sprintf("s%d\t<é>", n))
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int64, reflect.Int32:
			v.SetInt(int64(n))
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem())
		case reflect.Slice:
			if v.Type() == reflect.TypeFor[json.RawMessage]() {
				v.SetBytes(fmt.Appendf(nil, ` {"n": [%d, "x"]} `, n))
				return
			}
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			for i := range 2 {
				fill(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		default:
			t.Fatalf("everyField: no value for a %s: extend it (and appendRequest)", v.Type())
		}
	}
	fill(reflect.ValueOf(&req).Elem())
	return req
}

// FuzzRequestTwin (named for the encoder it first checked): any request
// JSON can decode to encodes the same through appendRequest as through
// encoding/json with abi's own methods.
func FuzzRequestTwin(f *testing.F) {
	f.Add([]byte(`{"decisionId":"d","options":null,"shell":{"commands":[{"argv":null},{}]}}`))
	b, _ := json.Marshal(request1K(f))
	f.Add(b)
	b, _ = json.Marshal(warmupRequest)
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var req abi.Request
		if json.Unmarshal(data, &req) != nil {
			return
		}
		want := plainEncoding(t, req)
		got := handEncoding(t, req)
		if !bytes.Equal(want, got) {
			t.Fatalf("hand encoding differs:\n got %s\nwant %s", got, want)
		}
	})
}

// FuzzCompactJSON: appendRawOmit writes what json.Compact writes, and
// refuses what it refuses.
func FuzzCompactJSON(f *testing.F) {
	for _, s := range []string{` { "a" : [1, -2.5e+3, true, false, null, "x\"\u00e9\t"] } `, `{"a":{}}`, `[]`, `01`, `1.`, `"\u12"`, `[1,]`, `{"a" 1}`, "\"\x01\"", `tru`, `nul`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) == 0 {
			return // omitted
		}
		var want bytes.Buffer
		wantErr := json.Compact(&want, src)
		got, err := appendRawOmit([]byte("k:"), "", src)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, json.Compact's %v", src, err, wantErr)
		}
		if err == nil && string(got) != "k:"+want.String() {
			t.Fatalf("%q: %q, json.Compact wrote %q", src, got, want.String())
		}
	})
}
