package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/stdplugins"
	"github.com/permhost/permhost/sandbox"
)

// TestStandardConfigKeys holds internal/stdplugins/CONFIGKEYS, which lets
// a first run check a standard plugin's configuration keys before the
// agent starts without compiling it, to what each embedded module's own
// permhost_describe declares (go test ./plugins/examples -run
// TestStandardConfigKeys -update rewrites it; `make plugins` does). It
// runs here, without the race detector: compiling six modules under it
// takes a minute.
func TestStandardConfigKeys(t *testing.T) {
	names := stdplugins.Names()
	declared := make([][]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names { // in parallel: a Go plugin compiles for seconds
		wg.Go(func() {
			wasm, _ := stdplugins.Module(name)
			p, err := host.Load(context.Background(), host.Options{Name: name, Wasm: wasm, CacheDir: "off", PoolSize: 1,
				Limits: sandbox.Limits{Timeout: 30 * time.Second}})
			if err != nil {
				errs[i] = err
				return
			}
			declared[i] = p.Info().ConfigKeys
			p.Close(context.Background())
		})
	}
	wg.Wait()

	var b strings.Builder
	b.WriteString("# NAME SHA256 CONFIG-KEYS... (written by: go test ./plugins/examples -run TestStandardConfigKeys -update)\n")
	for i, name := range names {
		if errs[i] != nil {
			t.Fatalf("%s: %v", name, errs[i])
		}
		sum, _ := stdplugins.SHA256(name)
		b.WriteString(strings.TrimSpace(strings.Join(append([]string{name, sum}, declared[i]...), " ")) + "\n")
		if *update {
			continue
		}
		got, ok := stdplugins.ConfigKeys(name, sum)
		switch {
		case !ok:
			t.Errorf("CONFIGKEYS has no line for %s at %s: refresh it with `make plugins`", name, sum)
		case !slices.Equal(got, declared[i]) && len(got)+len(declared[i]) > 0:
			t.Errorf("CONFIGKEYS says %s declares %q, the module says %q: refresh it with `make plugins`", name, got, declared[i])
		}
	}
	if *update {
		path := filepath.Join("..", "..", "internal", "stdplugins", stdplugins.ConfigKeysFile)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
