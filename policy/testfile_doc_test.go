package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// docs/testing.md documents the test-file format: every key LoadTestFile
// reads has a row there and a place in its full example, the example is a
// valid test file, and the option sets it lists are the shorthand's.
func TestTestFileDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- testing-example -->\n```toml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/testing.md has no testing-example block")
	}
	example := m[1]
	path := filepath.Join(t.TempDir(), "example.toml")
	if err := os.WriteFile(path, example, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTestFile(path); err != nil {
		t.Fatalf("the example is not a valid test file: %v", err)
	}
	var raw map[string]any
	if _, err := toml.Decode(string(example), &raw); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for k := range raw {
		used[k] = true
	}
	for k := range raw["defaults"].(map[string]any) {
		used["defaults."+k] = true
	}
	for _, c := range raw["case"].([]map[string]any) {
		for k := range c {
			used["case."+k] = true
		}
	}
	keys := func(prefix string, v any) {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			tag := rt.Field(i).Tag.Get("toml")
			if tag == "" {
				continue
			}
			row := "| `" + tag + "` |"
			if rt.Field(i).Type.Kind() == reflect.Map || rt.Field(i).Type.Kind() == reflect.Struct {
				row = "| `[" + tag + "]` |"
			}
			if rt.Field(i).Type.Kind() == reflect.Slice {
				row = "| `[[" + tag + "]]` |"
			}
			if !strings.Contains(string(doc), row) {
				t.Errorf("docs/testing.md has no row %s", row)
			}
			if !used[prefix+tag] {
				t.Errorf("docs/testing.md's full example does not use %s%s", prefix, tag)
			}
		}
	}
	keys("", TestFile{})
	keys("defaults.", CaseDefaults{})
	keys("case.", TestCase{})

	for name, preset := range optionPresets {
		var opts []struct{ OptionID, Kind string }
		if err := json.Unmarshal([]byte(preset), &opts); err != nil {
			t.Fatal(err)
		}
		var cells []string
		for _, o := range opts {
			cells = append(cells, "`"+o.OptionID+"` ("+o.Kind+")")
		}
		if row := "| `" + name + "` | " + strings.Join(cells, ", ") + " |"; !strings.Contains(string(doc), row) {
			t.Errorf("docs/testing.md lacks the row %s", row)
		}
	}
}
