package bundle_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/registrytest"
)

// signed writes and signs a bundle of revision rev.
func signed(t *testing.T, rev int, priv string) string {
	t.Helper()
	dir := t.TempDir()
	makeBundle(t, dir, rev)
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	return dir
}

func push(t *testing.T, reg bundle.Registry, dir string) string {
	t.Helper()
	b, err := bundle.Load(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := reg.Push(context.Background(), dir, b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A bundle pushed to a real registry and pulled back is admitted by the
// same checks as its directory: same revision, the plugin's module as
// verified bytes; pulled again, its layer comes from the cache.
func TestOCIPushPull(t *testing.T) {
	r := registrytest.Start(t)
	pub, priv, _ := bundle.GenerateKey()
	reg := bundle.Registry{Ref: r.Addr + "/team/acme:stable", PlainHTTP: true}
	dir := signed(t, 4, priv)
	pushed := push(t, reg, dir)
	if again := push(t, reg, dir); again != pushed {
		t.Fatalf("the same bundle pushed twice: %s then %s (want one digest)", pushed, again)
	}
	if d, err := reg.Resolve(context.Background()); err != nil || d != pushed {
		t.Fatalf("Resolve = %s, %v; want %s", d, err, pushed)
	}
	cache := bundle.OpenCache(t.TempDir())
	p, err := reg.Pull(context.Background(), cache)
	if err != nil {
		t.Fatal(err)
	}
	if p.Manifest != pushed {
		t.Fatalf("pulled %s, pushed %s", p.Manifest, pushed)
	}
	state := bundle.OpenState(filepath.Join(t.TempDir(), "bundles.json"))
	m, err := bundle.LoadArchive(cache.Dir(p.Layer), p.Archive, []string{pub}, state)
	if err != nil {
		t.Fatal(err)
	}
	wasm, _ := os.ReadFile(filepath.Join(dir, "good.wasm"))
	if m.Name != "acme" || m.Revision != 4 || len(m.Plugins) != 1 || string(m.Plugins[0].Wasm) != string(wasm) {
		t.Fatalf("admitted %s revision %d, %d plugins", m.Name, m.Revision, len(m.Plugins))
	}

	// The registry gone, the layer is in the cache, and the reference's
	// last good bundle once remembered.
	if err := cache.Remember(reg.Ref, p); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	if _, err := reg.Pull(context.Background(), cache); !errors.Is(err, bundle.ErrRegistry) {
		t.Fatalf("pull with the registry down: %v, want ErrRegistry", err)
	}
	last, err := cache.Last(reg.Ref)
	if err != nil || last.Manifest != pushed || string(last.Archive) != string(p.Archive) {
		t.Fatalf("cache.Last = %+v, %v", last, err)
	}
	if _, err := cache.Last(r.Addr + "/team/other:stable"); !errors.Is(err, bundle.ErrNotCached) {
		t.Fatalf("cache.Last of another reference: %v", err)
	}
}

// What the registry serves is verified as a directory is: a file changed
// after signing is refused, as is an older revision re-pushed under the
// tag once a newer one was accepted.
func TestOCIRefused(t *testing.T) {
	r := registrytest.Start(t)
	pub, priv, _ := bundle.GenerateKey()
	reg := bundle.Registry{Ref: r.Addr + "/team/acme:stable", PlainHTTP: true}
	state := bundle.OpenState(filepath.Join(t.TempDir(), "bundles.json"))
	pullAdmit := func() error {
		t.Helper()
		p, err := reg.Pull(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bundle.LoadArchive(t.TempDir(), p.Archive, []string{pub}, state)
		return err
	}

	tampered := signed(t, 5, priv)
	if err := os.WriteFile(filepath.Join(tampered, "tests", "good.toml"), []byte("# changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	push(t, reg, tampered)
	if err := pullAdmit(); !errors.Is(err, bundle.ErrBadSignature) {
		t.Fatalf("tampered artifact: %v, want ErrBadSignature", err)
	}

	push(t, reg, signed(t, 5, priv))
	if err := pullAdmit(); err != nil {
		t.Fatalf("revision 5: %v", err)
	}
	push(t, reg, signed(t, 4, priv))
	if err := pullAdmit(); !errors.Is(err, bundle.ErrRollback) {
		t.Fatalf("revision 4 re-pushed under the tag: %v, want ErrRollback", err)
	}
}
