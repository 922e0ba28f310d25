package examples_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/hostlink"
)

// TestStandardPluginsReadRequestsAsTrees: the standard plugins read a
// request straight into their structures (plugins/std/common/reader.rs)
// and leave what that reader does not expect to their tree reader. A
// request's bytes that permhost's encoder never writes (repeated keys,
// null where an object goes, escapes, whitespace, members of unknown
// shape) are read as the tree reads them: the answer is the one for the
// same request with each repeated key's last value only (what a decode
// into maps and a re-encode gives).
func TestStandardPluginsReadRequestsAsTrees(t *testing.T) {
	const cfg = `"config":{"rules":[{"action":"reject","command":[["rm","-rf"]]},{"action":"allow","family":"read","paths":["src/**"]},{"action":"allow","family":"shell","command":[["ls"]]}]}`
	opts := `"options":[{"optionId":"a","kind":"allow_once"},{"optionId":"r","kind":"reject_once"}]`
	for _, in := range []string{
		// The ordinary shape.
		`{"session":{"cwd":"/p"},"toolCall":{"kind":"execute","title":"ls"},"action":{"family":"shell","command":"ls"},` + opts + `,"shell":{"source":"ls","parsed":true,"commands":[{"argv":["ls"],"pipeline":1,"stage":1}]},` + cfg + `}`,
		// A repeated object: the last one wins whole.
		`{"session":{"cwd":"/p","mode":"plan"},"session":{"cwd":"/q"},"toolCall":{"kind":"read","title":"x"},"action":{"family":"read","paths":["/p/src/a"]},` + opts + `,` + cfg + `}`,
		`{"session":{"cwd":"/p"},"session":null,"toolCall":{"kind":"read"},"toolCall":{"kind":"execute","title":"rm -rf x"},"action":{"family":"shell","command":"rm -rf x"},` + opts + `,"shell":{"source":"rm -rf x","parsed":true,"commands":[{"argv":["rm","-rf","x"]}]},` + cfg + `}`,
		// Repeated lists and scalars, and the config twice.
		`{"session":{"cwd":"/p","cwd":"/r"},"toolCall":{"kind":"read"},"action":{"family":"read","paths":["/etc/x"],"paths":["/r/src/a"]},` + opts + `,` + cfg + `,` + cfg + `}`,
		// Escapes, whitespace, unknown members of every shape, nulls.
		" {\"session\" : {\"cwd\":\"\\/p\",\"agent\":{\"name\":\"x\",\"n\":[1,2.5e3,true,false,null,{\"a\":[]}]}},\n\"toolCall\":{\"kind\":\"read\",\"title\":\"\\u006c\\u0073 \\\"q\\\"\",\"rawInput\":{\"path\":\"\\ud83d\\ude00\"},\"locations\":[null,{\"path\":\"/p/src/\\u00e9\"}]}," +
			"\"action\":null,\"shell\":null,\"paths\":[{\"path\":\"/p/src/\\u00e9\",\"access\":\"read\",\"insideCwd\":true},null]," + opts + "," + cfg + ",\"raw\":{\"x\":\"\\u0000\\t\"}} ",
		// Members of the wrong type: the tree reader's error.
		`{"session":{"cwd":5},` + opts + `,` + cfg + `}`,
		`{"shell":{"commands":[{"argv":["ls"],"pipeline":1.5}]},` + opts + `,` + cfg + `}`,
	} {
		var tree any
		if err := json.Unmarshal([]byte(in), &tree); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		last, _ := json.Marshal(tree)
		for _, name := range []string{"team-rules", "protect-secrets", "plan-mode", "explainer"} {
			p := loadExample(t, name)
			offered := []abi.Option{{OptionID: "a", Kind: abi.OptionAllowOnce}, {OptionID: "r", Kind: abi.OptionRejectOnce}}
			got := hostlink.CallEncoded(context.Background(), p, []byte(in), offered).(host.Result)
			want := hostlink.CallEncoded(context.Background(), p, last, offered).(host.Result)
			if !reflect.DeepEqual(got.Decision, want.Decision) || (got.Err == nil) != (want.Err == nil) || got.Err != nil && got.Err.Error() != want.Err.Error() {
				t.Errorf("%s: %s\n  answers %+v, %v\n  to its last-wins form %s\n  %+v, %v", name, in, got.Decision, got.Err, last, want.Decision, want.Err)
			}
		}
	}
}
