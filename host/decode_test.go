package host

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/jsontext"
)

// decodeSeeds are plugin outputs that pass jsontext.Check, read by the
// fast path or left to encoding/json.
var decodeSeeds = []struct {
	out  string
	fast bool // read by decodeDecisionFast
}{
	{`{"outcome":"abstain","reason":"good fixture: constant decision"}`, true},
	{` { "outcome" : "allow" , "scope" : "always" } `, true},
	{`{"outcome":"select","optionId":"reject","extra":[1,{"a":"}"}],"n":-1.5e3,"t":true,"s":"x\"y"}`, true},
	{`{"outcome":"ask","explanation":{"summary":"s","risk":"r","riskLevel":"high","x":{}}}`, true},
	{`{"outcome":"ask","explanation":null,"reason":null}`, true},
	{`{"explanation":{"riskLevel":null},"outcome":"reject"}`, true},
	{`{}`, true},
	{`{"Outcome":"allow"}`, false}, // case-insensitive match
	{`{"ſcope":"always","outcome":"allow"}`, false}, // U+017F folds to s
	{`{"outcome":"all\u006fw"}`, false},             // an escape
	{`{"outc\u006fme":"allow"}`, false},
	{`{"outcome":1}`, false},
	{`{"outcome":"ask","explanation":"no"}`, false},
	{`{"outcome":"ask","explanation":{"risk":2}}`, false},
	{`null`, false},
	{`[]`, false},
	{`"allow"`, false},
}

func TestDecodeDecisionFast(t *testing.T) {
	for _, tc := range decodeSeeds {
		t.Run(tc.out, func(t *testing.T) {
			require.NoError(t, jsontext.Check([]byte(tc.out)))
			var got abi.Decision
			ok := decodeDecisionFast([]byte(tc.out), &got)
			assert.Equal(t, tc.fast, ok)
			if ok {
				var want abi.Decision
				require.NoError(t, json.Unmarshal([]byte(tc.out), &want))
				assert.Equal(t, want, got)
			}
		})
	}
}

// FuzzDecodeDecisionFast: whenever the fast path reads an output, it reads
// what encoding/json reads; whatever the unchecked path reads passes
// jsontext.Check.
func FuzzDecodeDecisionFast(f *testing.F) {
	for _, tc := range decodeSeeds {
		f.Add([]byte(tc.out))
	}
	f.Add([]byte("{\"outcome\":\"a\x01\"}"))
	f.Add([]byte("{\"reason\":\"\xff\"}"))
	f.Add([]byte(`{"reason":"a","reason":"b"}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		var checked abi.Decision
		if decodeDecisionChecked(out, &checked) {
			if err := jsontext.Check(out); err != nil {
				t.Fatalf("%q: read unchecked, refused by jsontext.Check: %v", out, err)
			}
			var want abi.Decision
			require.NoError(t, json.Unmarshal(out, &want))
			assert.Equal(t, want, checked, "%s", out)
		}
		if jsontext.Check(out) != nil {
			return
		}
		var got abi.Decision
		if !decodeDecisionFast(out, &got) {
			return
		}
		var want abi.Decision
		if err := json.Unmarshal(out, &want); err != nil {
			t.Fatalf("%s: read by the fast path, refused by encoding/json: %v", out, err)
		}
		assert.Equal(t, want, got, "%s", out)
	})
}

func TestDecodeDecisionCheckedRefuses(t *testing.T) {
	for _, out := range []string{
		`{"outcome":"allow","outcome":"reject"}`, // a repeated key
		`{"outcome":"allow","extra":1}`,          // an unknown key: jsontext.Check decides
		"{\"reason\":\"\xff\"}",                  // invalid UTF-8
		"{\"reason\":\"a\x01\"}",                 // a control character
		`{"outcome":"allow"} x`,
		`{"outcome":"allow"`,
		`{"explanation":nul}`,
	} {
		var d abi.Decision
		assert.False(t, decodeDecisionChecked([]byte(out), &d), out)
	}
}
