package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExamplePluginTests runs the test files shipped with every example
// plugin.
func TestExamplePluginTests(t *testing.T) {
	var dirs []string
	for _, name := range []string{"plan-mode", "protect-secrets", "explainer", "team-rules", "readonly-as", "no-force-push"} {
		examplePlugin(t, name)
		dir := filepath.Join("plugins", "examples", name)
		if _, err := os.Stat(filepath.Join(repoRoot, dir, "tests.toml")); err != nil {
			t.Errorf("example plugin %s ships no tests.toml", name)
			continue
		}
		dirs = append(dirs, dir)
	}
	code, out, errOut := runPermhost(t, append([]string{"test"}, dirs...)...)
	m := regexp.MustCompile(`(?m)^(\d+) passed, 0 failed$`).FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] == "0" {
		t.Fatalf("permhost test: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestBrokenExpectationFails(t *testing.T) {
	plan := examplePlugin(t, "plan-mode")
	dir := t.TempDir()
	file := filepath.Join(dir, "broken.toml")
	os.WriteFile(file, []byte(fmt.Sprintf(`plugin = %q
[[case]]
name = "wrongly expects rm to pass"
kind = "execute"
command = "rm -rf ~"
expect = "allow"

[[case]]
name = "right"
kind = "read"
path = "x"
expect = "abstain"
`, plan)), 0o644)
	code, out, _ := runPermhost(t, "test", file)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"FAIL " + file + ": wrongly expects rm to pass: expect allow, got reject (option \"reject\") by plan-mode",
		"1 passed, 1 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBadTestFileIsAUsageError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(file, []byte("plugin = \"x.wasm\"\n[[case]]\nname = \"n\"\nkind = \"read\"\nexpect = \"maybe\"\n"), 0o644)
	code, out, errOut := runPermhost(t, "test", file)
	if code != 2 || !strings.Contains(errOut, "bad.toml:5: case[0].expect: ") || !strings.Contains(errOut, `"maybe" is not an outcome`) || !strings.Contains(out, "0 passed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestBundleTests(t *testing.T) {
	plan := examplePlugin(t, "plan-mode")
	wasm, _ := os.ReadFile(plan)
	sum := sha256.Sum256(wasm)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plan-mode.wasm"), wasm, 0o644)
	os.WriteFile(filepath.Join(dir, "bundle.toml"), []byte(fmt.Sprintf(`name = "acme"
revision = 1
layer = "team"
tests = ["cases.toml"]
[[plugin]]
path = "plan-mode.wasm"
sha256 = %q
`, hex.EncodeToString(sum[:]))), 0o644)
	os.WriteFile(filepath.Join(dir, "cases.toml"), []byte(`[[case]]
name = "rm is rejected by the bundle"
kind = "execute"
command = "rm -rf /"
expect_option = "reject"
`), 0o644)
	code, out, errOut := runPermhost(t, "test", dir)
	if code != 0 || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// bundle verify and sign through the CLI.
	key := filepath.Join(t.TempDir(), "key")
	code, pub, errOut := runPermhost(t, "bundle", "keygen", "--out", key)
	if code != 0 || !strings.HasPrefix(pub, "ed25519:") {
		t.Fatalf("keygen: %d %s %s", code, pub, errOut)
	}
	if st, _ := os.Stat(key); st.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v", st.Mode().Perm())
	}
	if code, out, errOut := runPermhost(t, "bundle", "sign", "--key", key, dir); code != 0 {
		t.Fatalf("sign: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runPermhost(t, "bundle", "verify", "--key", strings.TrimSpace(pub), dir); code != 0 || !strings.Contains(out, "signature verified") {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "cases.toml"), []byte("# changed\n"), 0o644)
	if code, _, errOut := runPermhost(t, "bundle", "verify", "--key", strings.TrimSpace(pub), dir); code != 1 || !strings.Contains(errOut, "signature does not verify") {
		t.Fatalf("verify after tampering: %d %s", code, errOut)
	}
}
