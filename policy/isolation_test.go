package policy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/proctest"
	"github.com/permhost/permhost/internal/worker"
	"github.com/permhost/permhost/policy"
)

// TestIsolationWhereConfigured: each plugin runs where its configuration
// says, shown by a request that only a worker child reacts to (a test hook
// that makes the child exit): a process-isolated plugin fails with the
// child's death (its failure, the engine lives on), an in-process one
// decides. The defaults: the user's plugins in-process, a bundle's in a
// process; both overridden here.
func TestIsolationWhereConfigured(t *testing.T) {
	t.Setenv("PERMHOST_WORKER_TEST_HOOK", "1")
	good, err := filepath.Abs("../testdata/wasm/good.wasm")
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bundleDir := func(name string) string {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(wasm)
		toml := fmt.Sprintf("name = %q\nrevision = 1\n[[plugin]]\nname = \"good\"\npath = \"good.wasm\"\nsha256 = %q\n", name, hex.EncodeToString(sum[:]))
		if err := os.WriteFile(filepath.Join(dir, "good.wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bundle.toml"), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := t.TempDir()
	toml := fmt.Sprintf(`[[plugin]]
name = "mine"
path = %q
failure_policy = "abstain"

[[plugin]]
name = "walled"
path = %[1]q
isolation = "process"
failure_policy = "abstain"

[[bundle]]
path = %q

[[bundle]]
path = %q
isolation = "in-process"
`, good, bundleDir("third-party"), bundleDir("trusted"))
	if err := os.WriteFile(filepath.Join(dir, "permhost.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, "permhost.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// Compiled once first: four loads of one module into an empty cache at
	// once trip over each other's entry (a host cache issue of its own).
	cache := filepath.Join(t.TempDir(), "cache")
	warm, err := host.Load(context.Background(), host.Options{Path: good, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	warm.Close(context.Background())
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, CacheDir: cache,
		BundleState: filepath.Join(t.TempDir(), "state.json"), ReloadEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	<-e.Ready()

	req := abi.Request{ABI: abi.Current, DecisionID: "d1",
		ToolCall: abi.ToolCall{ID: "t1", Title: "permhost-worker-test: exit", Kind: abi.KindExecute},
		Options:  []abi.Option{{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce}}}
	v := e.Run(context.Background(), req)
	walled := map[string]bool{"mine": false, "walled": true, "third-party/good": true, "trusted/good": false}
	if len(v.Votes) != len(walled) {
		t.Fatalf("votes = %+v", v.Votes)
	}
	for _, vote := range v.Votes {
		want, ok := walled[vote.Plugin]
		if !ok {
			t.Fatalf("unexpected vote %+v", vote)
		}
		crashed := errors.Is(vote.Err, worker.ErrCrashed) && host.KindOf(vote.Err) == host.KindTrap
		if crashed != want {
			t.Errorf("%s: err %v, want a worker's death: %v", vote.Plugin, vote.Err, want)
		}
		if !want && (vote.Err != nil || vote.Decision.Outcome != abi.OutcomeAbstain) {
			t.Errorf("%s: in-process, want its decision: %+v", vote.Plugin, vote)
		}
	}
}

// workerChildren counts this process's plugin worker children.
func workerChildren(t *testing.T) int {
	t.Helper()
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			id, _ := strconv.Atoi(pid)
			if strings.Contains(string(cmd), worker.Command) && proctest.Alive(id) {
				n++
			}
		}
	}
	return n
}

// TestBundleReloadsEndReplacedWorkers: a bundle's plugins run in worker
// children; each reload ends the children of the revision it replaces, and
// Close ends the last.
func TestBundleReloadsEndReplacedWorkers(t *testing.T) {
	wasm, err := os.ReadFile("../testdata/wasm/good.wasm")
	if err != nil {
		t.Fatal(err)
	}
	before := workerChildren(t)
	dir := t.TempDir()
	writeBundle(t, dir, 1, wasm, wasm)
	cfg := &config.Config{Strategy: "sequential", Bundles: []config.Bundle{{Path: dir}}}
	e, err := policy.New(context.Background(), policy.Options{
		Config: cfg, CacheDir: filepath.Join(t.TempDir(), "cache"), BundleState: filepath.Join(t.TempDir(), "state.json"),
		ReloadEvery: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	<-e.Ready()
	req := abi.Request{Options: []abi.Option{{OptionID: "a", Kind: abi.OptionAllowOnce}}}
	// Decided by the plugin (a first call of a fresh child may miss its
	// 100 ms on a loaded machine: asked again).
	decides := func() bool { v := e.Run(context.Background(), req); return v.Votes[0].Err == nil }
	waitFor(t, "revision 1 to decide", decides)
	if n := workerChildren(t) - before; n != 1 {
		t.Fatalf("%d worker children for one bundle plugin", n)
	}
	for rev := 2; rev <= 4; rev++ {
		writeBundle(t, dir, rev, wasm, wasm)
		waitFor(t, fmt.Sprint("revision ", rev), func() bool { return e.Bundles()["acme"] == int64(rev) })
		waitFor(t, fmt.Sprint("revision ", rev, " to decide"), decides)
	}
	waitFor(t, "the replaced revisions' children to end", func() bool { return workerChildren(t)-before == 1 })
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the last child to end", func() bool { return workerChildren(t) == before })
}
