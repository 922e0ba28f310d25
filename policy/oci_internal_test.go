package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/registrytest"
)

// ociFixture is a team's bundle in a real registry, and a developer's
// state and cache directories.
type ociFixture struct {
	t      *testing.T
	reg    *registrytest.Registry
	ref    string
	pub    string
	priv   string
	state  string
	cache  string
	digest map[int]string // revision -> digest pushed
}

func newOCIFixture(t *testing.T) *ociFixture {
	pub, priv, _ := bundle.GenerateKey()
	r := registrytest.Start(t)
	return &ociFixture{t: t, reg: r, ref: r.Addr + "/team/acme:stable", pub: pub, priv: priv,
		state: filepath.Join(t.TempDir(), "bundles.json"), cache: t.TempDir(), digest: map[int]string{}}
}

// push signs revision rev of a bundle whose plugin rejects with reason
// "revision REV", and pushes it under the tag; tamper changes the
// plugin's configuration after signing.
func (f *ociFixture) push(rev int, tamper bool) {
	t := f.t
	t.Helper()
	wasm, err := os.ReadFile("../testdata/wasm/scripted.wasm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum := sha256.Sum256(wasm)
	manifest := func(reason string) []byte {
		return fmt.Appendf(nil, "name = \"acme\"\nrevision = %d\nlayer = \"team\"\n[[plugin]]\nname = \"scripted\"\npath = \"scripted.wasm\"\nsha256 = %q\n[plugin.config]\ndecision = '{\"outcome\":\"reject\",\"reason\":\"%s\"}'\n",
			rev, hex.EncodeToString(sum[:]), reason)
	}
	os.WriteFile(filepath.Join(dir, "scripted.wasm"), wasm, 0o644)
	os.WriteFile(filepath.Join(dir, "bundle.toml"), manifest(fmt.Sprintf("revision %d", rev)), 0o644)
	if err := bundle.Sign(dir, f.priv); err != nil {
		t.Fatal(err)
	}
	if tamper {
		os.WriteFile(filepath.Join(dir, "bundle.toml"), manifest("tampered"), 0o644)
	}
	reg := bundle.Registry{Ref: f.ref, PlainHTTP: true}
	d, err := reg.Push(context.Background(), dir, &config.BundleManifest{Name: "acme", Revision: int64(rev)})
	if err != nil {
		t.Fatal(err)
	}
	f.digest[rev] = d
}

// engine starts an engine with the bundle configured as oci://…, its
// refresh left to the test (refreshOCI).
func (f *ociFixture) engine(logs *acptest.SyncBuffer) (*Engine, error) {
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject,
		Bundles: []config.Bundle{{OCI: f.ref, PlainHTTP: true, TrustedKeys: []string{f.pub},
			Isolation: config.IsolationInProcess, Refresh: config.DefaultBundleRefresh}}}
	return New(context.Background(), Options{Config: cfg, CacheDir: "off", BundleState: f.state, BundleCache: f.cache,
		ReloadEvery: -1, Logger: slog.New(slog.NewTextHandler(logs, nil))})
}

// ociDecides asserts that the bundle's plugin decides, with the reason of
// revision rev.
func ociDecides(t *testing.T, e *Engine, rev int) {
	t.Helper()
	v := e.Run(context.Background(), abi.Request{Options: []abi.Option{{OptionID: "no", Kind: "reject_once"}}})
	if v.Outcome != abi.OutcomeReject || v.DecidedBy != "acme/scripted" || v.Reason != fmt.Sprintf("revision %d", rev) {
		t.Fatalf("verdict %s by %q (%q), want reject by acme/scripted for revision %d; votes %+v", v.Outcome, v.DecidedBy, v.Reason, rev, v.Votes)
	}
	if got := e.Bundles()["acme"]; got != int64(rev) {
		t.Fatalf("revision in use %d, want %d", got, rev)
	}
}

// A bundle pulled from a real registry decides; a new revision pushed is
// taken at the next refresh; a rolled-back tag and a tampered artifact are
// refused and the last good kept; an outage is survived on the bundle in
// use and logged once, and a fresh start with the registry down takes the
// cached bundle.
func TestOCIBundleLifecycle(t *testing.T) {
	f := newOCIFixture(t)
	f.push(1, false)
	logs := &acptest.SyncBuffer{}
	e, err := f.engine(logs)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	<-e.Ready()
	ociDecides(t, e, 1)

	f.push(2, false)
	e.refreshOCI(context.Background(), 1)
	ociDecides(t, e, 2)

	// Revision 1 re-pushed under the tag: a rollback, refused.
	f.push(1, false)
	e.refreshOCI(context.Background(), 1)
	if !strings.Contains(logs.String(), "lower than one already accepted") {
		t.Fatalf("rollback not logged:\n%s", logs)
	}
	ociDecides(t, e, 2)

	// Revision 3 changed after signing: refused.
	f.push(3, true)
	e.refreshOCI(context.Background(), 1)
	if !strings.Contains(logs.String(), "signature does not verify") {
		t.Fatalf("bad signature not logged:\n%s", logs)
	}
	ociDecides(t, e, 2)

	// The registry down: the bundle in use stays, and the outage is
	// logged once however many refreshes fail.
	f.reg.Kill()
	e.refreshOCI(context.Background(), 1)
	e.refreshOCI(context.Background(), 1)
	if n := strings.Count(logs.String(), "bundle registry unreachable"); n != 1 {
		t.Fatalf("outage logged %d times, want once:\n%s", n, logs)
	}
	ociDecides(t, e, 2)
	e.Close(context.Background())

	// A fresh start with the registry down takes the last good bundle
	// from the cache, and says so.
	logs2 := &acptest.SyncBuffer{}
	e2, err := f.engine(logs2)
	if err != nil {
		t.Fatalf("start with the registry down and the cache warm: %v", err)
	}
	defer e2.Close(context.Background())
	<-e2.Ready()
	ociDecides(t, e2, 2)
	if !strings.Contains(logs2.String(), "bundle registry unreachable; using the cached bundle") {
		t.Fatalf("start on the cache not logged:\n%s", logs2)
	}

	// Back up, still serving the tampered revision 3: refused, once.
	f.reg.Restart()
	e2.refreshOCI(context.Background(), 1)
	e2.refreshOCI(context.Background(), 1)
	if !strings.Contains(logs2.String(), "bundle registry reachable again") || strings.Count(logs2.String(), "signature does not verify") != 1 {
		t.Fatalf("after the outage:\n%s", logs2)
	}
	ociDecides(t, e2, 2)
}

// With the cache cold, a registry that is down or serves a refused bundle
// fails the start, as a directory bundle that does not verify does; with
// it warm, a rolled-back tag at start falls back to the last good bundle.
func TestOCIBundleStart(t *testing.T) {
	f := newOCIFixture(t)
	f.push(2, false)
	f.push(1, false)
	// Revision 2 was accepted once (on another engine, say).
	if err := bundle.OpenState(f.state).Accept("acme", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.engine(&acptest.SyncBuffer{}); !errors.Is(err, bundle.ErrRollback) {
		t.Fatalf("start on a rolled-back tag, cache cold: %v, want ErrRollback", err)
	}

	f.push(2, false)
	e, err := f.engine(&acptest.SyncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	<-e.Ready()
	ociDecides(t, e, 2)
	e.Close(context.Background())

	f.push(1, false)
	logs := &acptest.SyncBuffer{}
	e, err = f.engine(logs)
	if err != nil {
		t.Fatalf("start on a rolled-back tag, cache warm: %v", err)
	}
	defer e.Close(context.Background())
	<-e.Ready()
	ociDecides(t, e, 2)
	if !strings.Contains(logs.String(), "bundle from registry refused; using the cached last good revision") {
		t.Fatalf("fallback not logged:\n%s", logs)
	}

	f.reg.Kill()
	f.cache = t.TempDir()
	if _, err := f.engine(&acptest.SyncBuffer{}); !errors.Is(err, bundle.ErrRegistry) {
		t.Fatalf("start with the registry down, cache cold: %v, want ErrRegistry", err)
	}
}
