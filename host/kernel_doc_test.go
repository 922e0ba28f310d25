package host

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"
)

// docs/abi.md lists every function of the kernel with its wasm signature,
// for authors who write the imports by hand (C, Rust without a PDK): the
// table must be exactly what the host provides.
func TestKernelDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/abi.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### `extism:host/env`")
	section, _, _ = strings.Cut(section, "\n### ")
	row := regexp.MustCompile("(?m)^\\| ((?:`[a-z0-9_]+`(?:, )?)+) \\| `(\\([a-z0-9, ]*\\) -> \\(?[a-z0-9]*\\)?)` \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		for _, name := range strings.Split(m[1], ", ") {
			documented[strings.Trim(name, "`")] = m[2]
		}
	}
	types := func(ts []api.ValueType) string {
		names := make([]string, len(ts))
		for i, v := range ts {
			names[i] = api.ValueTypeName(v)
		}
		return strings.Join(names, ", ")
	}
	var provided []string
	for _, f := range kernelFunctions {
		provided = append(provided, f.name)
		want := "(" + types(f.params) + ") -> "
		if len(f.results) == 1 {
			want += types(f.results)
		} else {
			want += "(" + types(f.results) + ")"
		}
		got, ok := documented[f.name]
		switch {
		case !ok:
			t.Errorf("%s is not in docs/abi.md's table of extism:host/env", f.name)
		case got != want:
			t.Errorf("%s: docs/abi.md says %s, the host provides %s", f.name, got, want)
		}
	}
	for name := range documented {
		if !slices.Contains(provided, name) {
			t.Errorf("docs/abi.md documents %s, which the host does not provide", name)
		}
	}
	if len(documented) < 20 {
		t.Errorf("read only %d rows from docs/abi.md: has the table changed shape?", len(documented))
	}
}
