package grants_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/permhost/permhost/internal/grants"
)

// BenchmarkStoreMatch is what a grant costs each decision with allow_always
// "permhost": a stat of the grants file (re-read only when it changed) and
// matching a request against 100 command grants of the project.
func BenchmarkStoreMatch(b *testing.B) {
	path := filepath.Join(b.TempDir(), "permhost", grants.FileName)
	s := grants.Open(path)
	for i := range 100 {
		req := shellRequest("s1", "/home/dev/project", "", fmt.Sprintf("make target%d", i))
		for _, o := range grants.Offers(req) {
			if o.Grant.Scope == grants.ScopeProject {
				if _, err := s.Add(o.Grant); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, tc := range []struct {
		name   string
		script string
		hit    bool
	}{{"miss", "rm -rf build", false}, {"hit-last", "make target99", true}} {
		req := shellRequest("s1", "/home/dev/project", "", tc.script)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, ok, err := s.Match(req)
				if err != nil || ok != tc.hit {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
