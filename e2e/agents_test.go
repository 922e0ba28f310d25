package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// builtAgents are the scripted agents of testdata built so far, by name.
var builtAgents sync.Map // name -> *builtAgent

type builtAgent struct {
	once sync.Once
	bin  string
	err  error
}

// testAgent builds the program testdata/NAME once per run, beside the
// permhost under test, and returns its path.
func testAgent(t testing.TB, name string) string {
	t.Helper()
	v, _ := builtAgents.LoadOrStore(name, &builtAgent{})
	b := v.(*builtAgent)
	b.once.Do(func() {
		b.bin = filepath.Join(agentsDir, name)
		if out, err := exec.Command("go", "build", "-o", b.bin, "./testdata/"+name).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("building testdata/%s: %v", name, b.err)
	}
	return b.bin
}
