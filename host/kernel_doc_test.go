package host

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"
)

// docs/abi.md lists every function of the kernel, and of permhost's own
// additions to it, with its wasm signature, for authors who write the
// imports by hand (C, Rust without a PDK): each table must be exactly what
// the host provides.
func TestKernelDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/abi.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		module  string
		fns     []hostFunction
		minRows int
	}{
		{extismModule, kernelFunctions, 20},
		{hostEnvModule, hostEnvFunctions, 2},
	} {
		_, section, found := strings.Cut(string(doc), "### `"+m.module+"`")
		if !found {
			t.Errorf("docs/abi.md has no section on %s", m.module)
			continue
		}
		section, _, _ = strings.Cut(section, "\n### ")
		row := regexp.MustCompile("(?m)^\\| ((?:`[a-z0-9_]+`(?:, )?)+) \\| `(\\([a-z0-9, ]*\\) -> \\(?[a-z0-9]*\\)?)` \\|")
		documented := map[string]string{}
		for _, r := range row.FindAllStringSubmatch(section, -1) {
			for _, name := range strings.Split(r[1], ", ") {
				documented[strings.Trim(name, "`")] = r[2]
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
		for _, f := range m.fns {
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
				t.Errorf("%s is not in docs/abi.md's table of %s", f.name, m.module)
			case got != want:
				t.Errorf("%s.%s: docs/abi.md says %s, the host provides %s", m.module, f.name, got, want)
			}
		}
		for name := range documented {
			if !slices.Contains(provided, name) {
				t.Errorf("docs/abi.md documents %s.%s, which the host does not provide", m.module, name)
			}
		}
		if len(documented) < m.minRows {
			t.Errorf("read only %d rows from docs/abi.md's %s: has the table changed shape?", len(documented), m.module)
		}
	}
}
