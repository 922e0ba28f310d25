package worker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/stdplugins"
)

// TestConfigProblemsCrossTheWall: what a plugin's permhost_check_config
// finds in its configuration reaches the parent as the in-process plugin
// has it (the ready frame carries it; a parent that refused the key saw a
// protocol violation and a dead worker instead).
func TestConfigProblemsCrossTheWall(t *testing.T) {
	module, err := stdplugins.Module("team-rules")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "team-rules.wasm")
	if err := os.WriteFile(path, module, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o := host.Options{Path: path, CacheDir: t.TempDir(),
		Config: json.RawMessage(`{"rules":[{"action":"allow","family":"read"},{"acton":"reject","family":"shell"}]}`)}
	in, err := host.Load(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	want := in.ConfigProblems()
	if len(want) == 0 {
		t.Fatal("the in-process plugin found no problem in a rule with a misspelt key")
	}
	got := startWorker(t, o).ConfigProblems()
	if len(got) != len(want) || got[0] != want[0] {
		t.Errorf("across the wall: %+v, in process: %+v", got, want)
	}
}
