package policy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

func writeBundle(t *testing.T, dir string, rev int, wasm []byte, pin []byte) {
	t.Helper()
	sum := sha256.Sum256(pin)
	toml := fmt.Sprintf("name = \"acme\"\nrevision = %d\nlayer = \"admin\"\n[[plugin]]\nname = \"good\"\npath = \"good.wasm\"\nsha256 = \"%s\"\n", rev, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(filepath.Join(dir, "good.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bundle.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBundleHotReloadKeepsLastGood(t *testing.T) {
	wasm, err := os.ReadFile("../testdata/wasm/good.wasm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeBundle(t, dir, 1, wasm, wasm)
	pub, priv, _ := bundle.GenerateKey()
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Strategy: "sequential", Bundles: []config.Bundle{{Path: dir, TrustedKeys: []string{pub}}}}
	logs := &acptest.SyncBuffer{}
	e, err := policy.New(context.Background(), policy.Options{
		Config: cfg, CacheDir: "off", BundleState: filepath.Join(t.TempDir(), "state.json"),
		ReloadEvery: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	<-e.Ready()
	v := e.Run(context.Background(), abi.Request{Options: []abi.Option{{OptionID: "a", Kind: "allow_once"}}})
	if len(v.Votes) != 1 || v.Votes[0].Plugin != "acme/good" || v.Votes[0].Layer != "admin" || v.Votes[0].Err != nil {
		t.Fatalf("votes = %+v", v.Votes)
	}

	// Revision 2 with one byte changed in the plugin: the signature fails.
	tampered := bytes.Clone(wasm)
	tampered[len(tampered)-1] ^= 1
	writeBundle(t, dir, 2, tampered, tampered)
	waitFor(t, "the failed reload to be logged", func() bool { return strings.Contains(logs.String(), "bundle reload failed") })
	if got := e.Bundles()["acme"]; got != 1 {
		t.Fatalf("revision in use = %d after a failed reload", got)
	}
	if v := e.Run(context.Background(), abi.Request{}); len(v.Votes) != 1 || v.Votes[0].Err != nil {
		t.Fatalf("last good bundle not in use: %+v", v.Votes)
	}

	// Revision 2 properly signed: reloaded.
	writeBundle(t, dir, 2, wasm, wasm)
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "revision 2", func() bool { return e.Bundles()["acme"] == 2 })

	// Back to revision 1, signed: a rollback, refused, 2 stays.
	writeBundle(t, dir, 1, wasm, wasm)
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rollback to be refused", func() bool { return strings.Contains(logs.String(), "lower than one already accepted") })
	if got := e.Bundles()["acme"]; got != 2 {
		t.Fatalf("revision in use = %d after a rollback", got)
	}
}

func TestBundleMustVerifyAtStart(t *testing.T) {
	wasm, _ := os.ReadFile("../testdata/wasm/good.wasm")
	dir := t.TempDir()
	writeBundle(t, dir, 1, wasm, wasm)
	pub, _, _ := bundle.GenerateKey()
	cfg := &config.Config{File: "permhost.toml", Bundles: []config.Bundle{{Path: dir, TrustedKeys: []string{pub}}}}
	_, err := policy.New(context.Background(), policy.Options{Config: cfg, BundleState: filepath.Join(t.TempDir(), "s.json")})
	if err == nil || !strings.Contains(err.Error(), "not signed") || !strings.Contains(err.Error(), "bundle[0]") {
		t.Fatalf("unsigned bundle with keys configured: %v", err)
	}
}

// A bundles.json of null (or any other shape) is an error at start naming
// it, not a panic.
func TestBundleStateDamagedAtStart(t *testing.T) {
	wasm, _ := os.ReadFile("../testdata/wasm/good.wasm")
	dir := t.TempDir()
	writeBundle(t, dir, 1, wasm, wasm)
	state := filepath.Join(t.TempDir(), "bundles.json")
	if err := os.WriteFile(state, []byte("null"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{File: "permhost.toml", Bundles: []config.Bundle{{Path: dir}}}
	_, err := policy.New(context.Background(), policy.Options{Config: cfg, BundleState: state})
	if !errors.Is(err, bundle.ErrState) || !strings.Contains(err.Error(), state) || !strings.Contains(err.Error(), "bundle[0]") {
		t.Fatalf("start with a bundles.json of null: %v", err)
	}
}

// goroutines returns the stacks of every goroutine by id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(strings.TrimPrefix(g, "goroutine "), " ")
		out[id] = g
	}
	return out
}

// hostGoroutines counts the goroutines running code of package host (the
// instances and pool fillers of loaded plugins), leaving out those in
// before (other tests' leftovers).
func hostGoroutines(before map[string]string) int {
	count := 0
	for id, g := range goroutines() {
		if _, old := before[id]; !old && strings.Contains(g, "github.com/permhost/permhost/host.") {
			count++
		}
	}
	return count
}

// N bundle reloads leave the plugin goroutines of one revision, not of N:
// each reload closes the plugins it replaced (a leak of 8 revisions would
// add at least 16); after Close nothing is left.
func TestBundleReloadsCloseReplacedPlugins(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	before := goroutines()
	wasm, err := os.ReadFile("../testdata/wasm/good.wasm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeBundle(t, dir, 1, wasm, wasm)
	pub, priv, _ := bundle.GenerateKey()
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	// In-process, so that its plugins' goroutines are this process's to
	// count (a bundle's plugins run in a worker child by default).
	cfg := &config.Config{Strategy: "sequential", Bundles: []config.Bundle{{Path: dir, TrustedKeys: []string{pub}, Isolation: config.IsolationInProcess}}}
	e, err := policy.New(context.Background(), policy.Options{
		Config: cfg, CacheDir: "off", BundleState: filepath.Join(t.TempDir(), "state.json"), ReloadEvery: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	<-e.Ready()
	req := abi.Request{Options: []abi.Option{{OptionID: "a", Kind: abi.OptionAllowOnce}}}
	if v := e.Run(context.Background(), req); v.Votes[0].Err != nil {
		t.Fatalf("revision 1: %+v", v.Votes[0])
	}
	if hostGoroutines(before) == 0 {
		t.Fatal("no plugin goroutines to count")
	}
	// One revision's plugin keeps at most PoolSize+1 idle instances, one
	// goroutine each (PoolSize is GOMAXPROCS by default), and a filler
	// while it makes one; every revision left open would add at least two.
	one := runtime.GOMAXPROCS(0) + 2
	const reloads = 8
	for rev := 2; rev <= 1+reloads; rev++ {
		writeBundle(t, dir, rev, wasm, wasm)
		if err := bundle.Sign(dir, priv); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprint("revision ", rev), func() bool { return e.Bundles()["acme"] == int64(rev) })
		if v := e.Run(context.Background(), req); v.Votes[0].Err != nil {
			t.Fatalf("revision %d: %+v", rev, v.Votes[0])
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for hostGoroutines(before) > one {
		if time.Now().After(deadline) {
			var extra []string
			for id, g := range goroutines() {
				if _, old := before[id]; !old && strings.Contains(g, "github.com/permhost/permhost/host.") {
					extra = append(extra, g)
				}
			}
			t.Fatalf("%d plugin goroutines after %d reloads, want those of one revision (%d):\n%s", len(extra), reloads, one, strings.Join(extra, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
