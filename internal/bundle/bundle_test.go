package bundle_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/stdplugins"
)

// makeBundle writes a bundle with one plugin at revision rev into dir.
func makeBundle(t *testing.T, dir string, rev int) {
	t.Helper()
	wasm, err := os.ReadFile("../../testdata/wasm/good.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	files := map[string]string{
		"good.wasm":       string(wasm),
		"tests/good.toml": "# cases\n",
		"bundle.toml": fmt.Sprintf(`name = "acme"
revision = %d
layer = "team"
tests = ["tests/good.toml"]

[[plugin]]
name = "good"
path = "good.wasm"
sha256 = "%s"
[plugin.config]
paths = [".env"]
`, rev, hex.EncodeToString(sum[:])),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSignVerifyTamper(t *testing.T) {
	dir := t.TempDir()
	makeBundle(t, dir, 3)
	pub, priv, err := bundle.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if derived, _ := bundle.PublicKeyOf(priv); derived != pub {
		t.Fatalf("PublicKeyOf = %s, want %s", derived, pub)
	}
	if _, err := bundle.Verify(dir, []string{pub}); !errors.Is(err, bundle.ErrUnsigned) {
		t.Fatalf("unsigned bundle: %v", err)
	}
	if err := bundle.Sign(dir, priv); err != nil {
		t.Fatal(err)
	}
	if k, err := bundle.Verify(dir, []string{pub}); err != nil || k != pub {
		t.Fatalf("Verify = %q, %v", k, err)
	}
	other, _, _ := bundle.GenerateKey()
	if _, err := bundle.Verify(dir, []string{other}); !errors.Is(err, bundle.ErrBadSignature) {
		t.Fatalf("untrusted key verified: %v", err)
	}
	// One byte changed in the plugin: refused.
	p := filepath.Join(dir, "good.wasm")
	b, _ := os.ReadFile(p)
	b[len(b)-1] ^= 1
	os.WriteFile(p, b, 0o644)
	if _, err := bundle.Verify(dir, []string{pub}); !errors.Is(err, bundle.ErrBadSignature) {
		t.Fatalf("tampered bundle verified: %v", err)
	}
	if _, err := bundle.Load(dir, []string{pub}, nil); !errors.Is(err, bundle.ErrBadSignature) {
		t.Fatalf("Load of tampered bundle: %v", err)
	}
	// Even without keys, the pin catches it.
	if _, err := bundle.Load(dir, nil, nil); err == nil || !strings.Contains(err.Error(), "pins") {
		t.Fatalf("Load without keys: %v", err)
	}
	b[len(b)-1] ^= 1
	os.WriteFile(p, b, 0o644)
	// An added file breaks the signature too.
	os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("x"), 0o644)
	if _, err := bundle.Verify(dir, []string{pub}); !errors.Is(err, bundle.ErrBadSignature) {
		t.Fatalf("bundle with an added file verified: %v", err)
	}
	os.Remove(filepath.Join(dir, "extra.txt"))
	if _, err := bundle.Load(dir, []string{pub}, nil); err != nil {
		t.Fatalf("restored bundle: %v", err)
	}
}

func TestSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	makeBundle(t, dir, 1)
	os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	if _, err := bundle.Manifest(dir); !errors.Is(err, bundle.ErrLayout) {
		t.Fatalf("Manifest with a symlink: %v", err)
	}
}

func TestRollbackRefused(t *testing.T) {
	state := bundle.OpenState(filepath.Join(t.TempDir(), "state", "bundles.json"))
	dir := t.TempDir()
	makeBundle(t, dir, 5)
	b, err := bundle.Load(dir, nil, state)
	if err != nil || b.Revision != 5 || b.Layer != "team" || b.Plugins[0].Name != "acme/good" || b.Plugins[0].Layer != "team" {
		t.Fatalf("Load = %+v, %v", b, err)
	}
	makeBundle(t, dir, 4)
	if _, err := bundle.Load(dir, nil, state); !errors.Is(err, bundle.ErrRollback) {
		t.Fatalf("rollback accepted: %v", err)
	}
	makeBundle(t, dir, 5)
	if _, err := bundle.Load(dir, nil, state); err != nil {
		t.Fatalf("same revision refused: %v", err)
	}
	makeBundle(t, dir, 6)
	if _, err := bundle.Load(dir, nil, state); err != nil {
		t.Fatalf("newer revision refused: %v", err)
	}
	makeBundle(t, dir, 5)
	if _, err := bundle.Load(dir, nil, state); !errors.Is(err, bundle.ErrRollback) {
		t.Fatalf("rollback to 5 after 6 accepted: %v", err)
	}
}

func TestBadKeys(t *testing.T) {
	for _, k := range []string{"", "rsa:abc", "ed25519:!!!", "ed25519:AAAA"} {
		if err := bundle.Sign(t.TempDir(), k); !errors.Is(err, bundle.ErrBadKey) {
			t.Errorf("Sign with %q: %v", k, err)
		}
	}
}

// TestStandardPluginInBundle: a bundle may use a standard plugin
// (path = "std:NAME"); its pin is checked against the module inside this
// permhost, so a signed bundle names the exact bytes it was reviewed with.
func TestStandardPluginInBundle(t *testing.T) {
	sum, err := stdplugins.SHA256("plan-mode")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, pin, wantErr string
	}{
		{"pinned to the module inside permhost", sum, ""},
		{"pinned to other bytes", strings.Repeat("0", 64), "std:plan-mode is sha256 " + sum},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			toml := fmt.Sprintf("name = \"acme\"\nrevision = 1\nlayer = \"team\"\n\n[[plugin]]\npath = \"std:plan-mode\"\nsha256 = %q\n[plugin.config]\nonly_in_mode = \"plan\"\n", tt.pin)
			if err := os.WriteFile(filepath.Join(dir, "bundle.toml"), []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
			pub, priv, err := bundle.GenerateKey()
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr == "" {
				if err := bundle.Sign(dir, priv); err != nil {
					t.Fatal(err)
				}
			}
			m, err := bundle.Load(dir, []string{pub}, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := m.Plugins[0]
			if p.Std != "plan-mode" || p.Name != "acme/plan-mode" || p.Layer != "team" {
				t.Errorf("plugin = std %q name %q layer %q", p.Std, p.Name, p.Layer)
			}
		})
	}
}
