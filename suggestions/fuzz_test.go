package suggestions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOptions: no panic; every Known set keeps the bounds; a set never
// aliases the input bytes; the label names every value.
func FuzzOptions(f *testing.F) {
	files, _ := filepath.Glob("testdata/in/*.json")
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var in goldenInput
		if err := json.Unmarshal(raw, &in); err != nil {
			f.Fatal(err)
		}
		f.Add(in.Kind, []byte(in.Options))
	}
	f.Add("execute", []byte(`[{"optionId":"a","kind":"allow_once","_meta":{"permission":{"version":1,"description":"x"}}}]`))
	f.Fuzz(func(t *testing.T, kind string, options []byte) {
		input := append([]byte(nil), options...)
		opts, err := Options(kind, input)
		if err != nil {
			return
		}
		before, err := json.Marshal(opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range input {
			input[i] = 0
		}
		after, _ := json.Marshal(opts)
		if string(before) != string(after) {
			t.Fatalf("snapshot changed when the input bytes did")
		}
		for _, o := range opts {
			if o.Changes == nil {
				if !o.Durable && o.Kind != "allow_once" && o.Kind != "reject_once" {
					t.Fatalf("option %q of kind %q not durable", o.OptionID, o.Kind)
				}
				continue
			}
			if !o.Durable {
				t.Fatalf("option %q with changes not durable", o.OptionID)
			}
			if err := checkBounds(*o.Changes); err != nil {
				t.Fatalf("option %q: %v", o.OptionID, err)
			}
		}
	})
}
