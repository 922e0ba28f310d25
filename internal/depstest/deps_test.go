// Package depstest enforces the import direction of DESIGN §2:
// abi ← suggestions, sandbox ← host, builtin, acp ← cmd/permhost.
package depstest

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/permhost/permhost"

// tier of each top-level package: a package may import only packages of a
// lower tier (or internal helpers allowed below). Packages not listed are
// internal helpers; they may not import tiers above 1 unless listed.
var tiers = map[string]int{
	"abi":              0,
	"suggestions":      1,
	"sandbox":          1,
	"internal/shell":   1,
	"internal/profile": 1,
	"internal/answer":  1,
	"plugins/pdk":      1,
	"host":             2,
	"builtin":          2,
	"acp":              2,
	"internal/worker":  3, // a host.Decider in a child process
	"policy":           4,
	"cmd/permhost":     5,
}

// forbidden pairs within a tier or below that the tiers alone do not catch.
var forbidden = map[string][]string{
	"abi": {"*"}, // standard library only
	// plugins/pdk is compiled into every Go plugin: abi is all it may use
	// of this module (TestPDKImports checks the rest).
	"plugins/pdk": {"suggestions", "sandbox", "internal/shell", "host", "builtin", "acp", "policy", "cmd/permhost"},
	"acp":         {"abi", "host", "sandbox", "suggestions", "builtin", "policy"},
	// The strict JSON helpers and the one answer path sit under everything
	// that reads a peer: jsontext imports nothing of permhost, answer only
	// abi and jsontext.
	"internal/jsontext": {"abi", "suggestions", "sandbox", "internal/shell", "host", "builtin", "acp", "policy", "cmd/permhost", "internal/answer"},
	"internal/answer":   {"suggestions", "sandbox", "internal/shell", "host", "builtin", "acp", "policy", "cmd/permhost"},
	// What every package shows a person goes through safetext: it imports
	// nothing of permhost.
	"internal/safetext": {"abi", "suggestions", "sandbox", "internal/shell", "host", "builtin", "acp", "policy", "cmd/permhost", "internal/answer", "internal/jsontext"},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func rel(p string) string {
	return strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
}

// top returns the tier key a package belongs to.
func top(p string) (string, bool) {
	r := rel(p)
	for k := range tiers {
		if r == k || strings.HasPrefix(r, k+"/") {
			return k, true
		}
	}
	return r, false
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		from, ok := top(p.ImportPath)
		for _, imp := range p.Imports {
			if from == "abi" && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				t.Errorf("abi imports %s: abi must use the standard library only", imp)
			}
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to, toOK := top(imp)
			if from == "abi" {
				t.Errorf("abi imports %s", imp)
			}
			for _, f := range forbidden[from] {
				if f == to {
					t.Errorf("%s imports %s: forbidden by DESIGN §2", p.ImportPath, imp)
				}
			}
			if ok && toOK && tiers[to] >= tiers[from] && to != from {
				t.Errorf("%s (tier %d) imports %s (tier %d): lower never imports upper", p.ImportPath, tiers[from], imp, tiers[to])
			}
			if !ok && toOK && tiers[to] > 1 {
				t.Errorf("helper %s imports %s: internal helpers stay below host/acp", p.ImportPath, imp)
			}
		}
	}
	if seen < 2 {
		t.Fatalf("go list saw %d packages", seen)
	}
}

// TestPDKImports keeps what plugins/pdk pulls into a plugin author's build
// to abi, github.com/extism/go-pdk and the standard library, for every
// platform it builds on (the Extism imports exist only under wasip1).
func TestPDKImports(t *testing.T) {
	for _, goos := range []string{"wasip1", ""} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"/plugins/pdk")
		if goos != "" {
			cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH=wasm")
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (GOOS=%s): %v", goos, err)
		}
		deps := strings.Fields(string(out))
		for _, d := range deps {
			switch {
			case d == module+"/plugins/pdk", d == module+"/abi",
				d == "github.com/extism/go-pdk", strings.HasPrefix(d, "github.com/extism/go-pdk/internal/"):
			default:
				t.Errorf("plugins/pdk depends on %s (GOOS=%s): a plugin gets only abi, github.com/extism/go-pdk and the standard library", d, goos)
			}
		}
		if goos == "wasip1" && !slices.Contains(deps, "github.com/extism/go-pdk") {
			t.Errorf("go list under wasip1 did not see github.com/extism/go-pdk: %q", deps)
		}
	}
}
