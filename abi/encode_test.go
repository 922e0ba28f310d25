package abi

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestMarshalRequiredListsAsEmpty(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"request", Request{DecisionID: "d"},
			`{"abi":{"major":0,"minor":0},"decisionId":"d","session":{"id":""},"toolCall":{"id":""},"options":[]}`},
		{"shell and command", &Shell{Source: "x", Parsed: true},
			`{"source":"x","parsed":true,"commands":[]}`},
		{"command", []Command{{}}, `[{"argv":[]}]`},
		{"set lists kept", Command{Argv: []string{"rm", "-rf", "build"}}, `{"argv":["rm","-rf","build"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

// The encoder's own SetEscapeHTML decides about <, > and &, also inside
// the types with a MarshalJSON method.
func TestMarshalKeepsCallersEscaping(t *testing.T) {
	r := Request{Shell: &Shell{Source: "a && b > c", Commands: []Command{{Argv: []string{"<x>"}}}}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"a && b > c"`)) || !bytes.Contains(buf.Bytes(), []byte(`"<x>"`)) {
		t.Errorf("escaped despite SetEscapeHTML(false): %s", buf.Bytes())
	}
	var back Request
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Shell.Source != r.Shell.Source || back.Shell.Commands[0].Argv[0] != "<x>" {
		t.Errorf("round trip changed the request: %+v", back.Shell)
	}
	b, _ := json.Marshal(r)
	if !bytes.Contains(b, []byte(`a \u0026\u0026 b \u003e c`)) {
		t.Errorf("json.Marshal should still escape: %s", b)
	}
}
