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
// what encoding/json reads.
func FuzzDecodeDecisionFast(f *testing.F) {
	for _, tc := range decodeSeeds {
		f.Add([]byte(tc.out))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
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
