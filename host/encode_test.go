package host

import (
	"bytes"
	"encoding/json"
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

// twinEncoding is what an instance sends its plugin.
func twinEncoding(t testing.TB, req abi.Request) []byte {
	inst := &instance{}
	inst.enc = json.NewEncoder(&inst.input)
	inst.enc.SetEscapeHTML(false)
	require.NoError(t, inst.encode(&req))
	return inst.input
}

func TestRequestTwin(t *testing.T) {
	require.NotNil(t, requestTwin, "the abi types changed so that the fast encoding is off: update encode.go")
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
		{"html and unicode", abi.Request{DecisionID: "<&>\u2028é\x7f", Raw: json.RawMessage(` { "a" : [1, 2] } `)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := plainEncoding(t, tc.req)
			got := twinEncoding(t, tc.req)
			assert.Equal(t, string(want), string(got))
		})
	}
	assert.Nil(t, shell.Commands, "the caller's Shell is not changed")
	assert.Nil(t, nilArgv.Commands[1].Argv, "the caller's Commands are not changed")
}

func TestRequestTwinRefusesUnknownMethods(t *testing.T) {
	type holdsShell struct{ A abi.Shell }
	tw := &twinner{memo: map[reflect.Type]reflect.Type{}}
	_, ok := tw.twin(reflect.TypeFor[textField]())
	assert.False(t, ok, "a type with its own encoding method that contains a twinned type")
	got, ok := tw.twin(reflect.TypeFor[holdsShell]())
	assert.True(t, ok)
	assert.NotEqual(t, reflect.TypeFor[holdsShell](), got)
	assert.Equal(t, reflect.TypeFor[holdsShell]().Size(), got.Size())
}

// textField encodes itself as text and holds a Shell: the twin cannot
// replace the Shell inside it without losing its method.
type textField struct{ S abi.Shell }

func (textField) MarshalText() ([]byte, error) { return []byte("t"), nil }

// FuzzRequestTwin: any request JSON can decode to encodes the same through
// the twin as through abi's own methods.
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
		got := twinEncoding(t, req)
		if !bytes.Equal(want, got) {
			t.Fatalf("twin encoding differs:\n got %s\nwant %s", got, want)
		}
	})
}
