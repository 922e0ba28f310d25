package stdplugins_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/stdplugins"
)

// repoRoot is the checkout this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestCommittedModulesAreFresh builds the example plugins from their
// sources, as `make plugins` does (into $PERMHOST_PLUGINS_DIR or
// build/plugins: make rebuilds only what is stale, so after `make test`'s
// own build this costs nothing), and requires every committed standard
// plugin to be byte for byte what the build wrote, and TOOLCHAIN to name
// the toolchains that wrote it. A different local toolchain is not a
// reason to skip: its build differs, and the test says so.
func TestCommittedModulesAreFresh(t *testing.T) {
	root := repoRoot(t)
	out := os.Getenv("PERMHOST_PLUGINS_DIR")
	if out == "" {
		out = filepath.Join(root, "build", "plugins")
	}
	mk := filepath.Join(root, "plugins", "examples", "plugins.mk")
	cmd := exec.Command("make", "-s", "--no-print-directory", "-f", mk, "OUT="+out, "all")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the example plugins (make -f plugins/examples/plugins.mk): %v\n%s", err, b)
	}
	b, err := exec.Command("make", "-s", "--no-print-directory", "-f", mk, "names").Output()
	if err != nil {
		t.Fatalf("make names: %v", err)
	}
	want := strings.Fields(string(b))
	slices.Sort(want)
	if got := stdplugins.Names(); !slices.Equal(got, want) {
		t.Errorf("standard plugins %q, plugins.mk builds %q: refresh internal/stdplugins with `make plugins`", got, want)
	}

	var problems []string
	for _, name := range want {
		built, err := os.ReadFile(filepath.Join(out, name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := stdplugins.Module(name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s.wasm: not committed", name))
			continue
		}
		if !bytes.Equal(committed, built) {
			problems = append(problems, fmt.Sprintf("%s.wasm: sha256 %s committed, %s built from the sources (%s)",
				name, short(committed), short(built), filepath.Join(out, name+".wasm")))
		}
	}
	builtWith, err := os.ReadFile(filepath.Join(out, "TOOLCHAIN"))
	if err != nil {
		t.Fatal(err)
	}
	toolchainDiffers := string(builtWith) != stdplugins.Toolchain
	if len(problems) == 0 && !toolchainDiffers {
		return
	}
	var msg strings.Builder
	msg.WriteString("the committed standard plugins (internal/stdplugins) are not what the sources build to with this toolchain; rebuild with `make plugins` and commit internal/stdplugins.\n")
	for _, p := range problems {
		fmt.Fprintf(&msg, "  %s\n", p)
	}
	fmt.Fprintf(&msg, "The committed modules record (internal/stdplugins/TOOLCHAIN):\n%s", indent(stdplugins.Toolchain))
	fmt.Fprintf(&msg, "this build used (%s):\n%s", filepath.Join(out, "TOOLCHAIN"), indent(string(builtWith)))
	if toolchainDiffers {
		msg.WriteString("The toolchains differ. The committed modules must be built with CI's toolchain, the recorded one:\n" +
			"run `make plugins` with it (a module built with another toolchain has other bytes and fails CI);\n" +
			"when CI itself moves to a new toolchain, rebuild with `make plugins` on it and commit the modules with the new TOOLCHAIN.\n")
	}
	t.Error(msg.String())
}

// TestToolchainRecord holds TOOLCHAIN to what the committed modules say
// about themselves: the Go and clang versions in each module's producers
// section, the AssemblyScript compiler the example's package-lock.json
// pins. So the record cannot drift from the bytes it describes.
func TestToolchainRecord(t *testing.T) {
	root := repoRoot(t)
	record := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdplugins.Toolchain), "\n") {
		tool, version, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("TOOLCHAIN line %q: want \"TOOL VERSION\"", line)
		}
		record[tool] = version
	}
	for _, tool := range []string{"rustc", "assemblyscript", "clang", "wasm-ld"} {
		if record[tool] == "" {
			t.Errorf("TOOLCHAIN names no %s version:\n%s", tool, stdplugins.Toolchain)
		}
	}
	for _, name := range stdplugins.Names() {
		wasm, err := stdplugins.Module(name)
		if err != nil {
			t.Fatal(err)
		}
		prod, err := producers(wasm)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lock := filepath.Join(root, "plugins", "examples", name, "package-lock.json")
		_, rustErr := os.Stat(filepath.Join(root, "plugins", "std", name, "main.rs"))
		switch {
		case rustErr == nil:
			// rustc 1.63 writes no producers section; the module's panic
			// messages name the source of Debian's std, which carries the
			// version: /usr/src/rustc-VERSION/library/....
			version, _, _ := strings.Cut(record["rustc"], " ")
			if !bytes.Contains(wasm, []byte("/rustc-"+version+"/")) {
				t.Errorf("%s: built from plugins/std/%s, but not by Debian's rustc %s (TOOLCHAIN)", name, name, record["rustc"])
			}
		case prod["language"]["Go"] != "":
			if got := prod["processed-by"]["Go cmd/compile"]; got != record["go"] {
				t.Errorf("%s: built by Go %s, TOOLCHAIN says go %s", name, got, record["go"])
			}
		case prod["processed-by"] != nil && anyKeyContains(prod["processed-by"], "clang"):
			for producer, version := range prod["processed-by"] {
				if !strings.Contains(record["clang"], producer) || !strings.Contains(record["clang"], version) {
					t.Errorf("%s: processed by %s %s, TOOLCHAIN says clang %s", name, producer, version, record["clang"])
				}
			}
		default:
			b, err := os.ReadFile(lock)
			if err != nil {
				t.Fatalf("%s: no Go or clang producer and no package-lock.json: %v", name, err)
			}
			var l struct {
				Packages map[string]struct {
					Version string `json:"version"`
				} `json:"packages"`
			}
			if err := json.Unmarshal(b, &l); err != nil {
				t.Fatal(err)
			}
			if got := l.Packages["node_modules/assemblyscript"].Version; got == "" || got != record["assemblyscript"] {
				t.Errorf("%s: package-lock.json pins assemblyscript %q, TOOLCHAIN says %q", name, got, record["assemblyscript"])
			}
		}
	}
}

func TestModuleAndSHA256(t *testing.T) {
	names := stdplugins.Names()
	for _, want := range []string{"explainer", "no-force-push", "plan-mode", "protect-secrets", "readonly-as", "team-rules"} {
		if !slices.Contains(names, want) {
			t.Errorf("no standard plugin %s in %q", want, names)
		}
	}
	wasm, err := stdplugins.Module("team-rules")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		t.Errorf("team-rules is not a wasm module: % x", wasm[:8])
	}
	sum, err := stdplugins.SHA256("team-rules")
	if err != nil {
		t.Fatal(err)
	}
	if h := sha256.Sum256(wasm); hex.EncodeToString(h[:]) != sum {
		t.Errorf("SHA256 %s, module hashes to %x", sum, h)
	}
	wasm[0] = 'X' // a copy: the next caller still gets the module
	if again, _ := stdplugins.Module("team-rules"); again[0] != 0 {
		t.Error("Module returned the embedded bytes themselves, not a copy")
	}
	for _, bad := range []string{"team-rule", "", "../team-rules", "team-rules.wasm"} {
		if _, err := stdplugins.Module(bad); !errors.Is(err, stdplugins.ErrUnknown) || !strings.Contains(err.Error(), "team-rules") {
			t.Errorf("Module(%q) = %v, want ErrUnknown listing the names", bad, err)
		}
		if _, err := stdplugins.SHA256(bad); !errors.Is(err, stdplugins.ErrUnknown) {
			t.Errorf("SHA256(%q) = %v, want ErrUnknown", bad, err)
		}
	}
	if n, ok := stdplugins.Name("std:plan-mode"); !ok || n != "plan-mode" {
		t.Errorf("Name(std:plan-mode) = %q, %v", n, ok)
	}
	if _, ok := stdplugins.Name("build/plugins/plan-mode.wasm"); ok {
		t.Error("a file path taken for a standard plugin")
	}
}

func short(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

func anyKeyContains(m map[string]string, sub string) bool {
	for k := range m {
		if strings.Contains(k, sub) {
			return true
		}
	}
	return false
}

// producers reads a module's producers custom section: field → producer
// name → version (the tool-conventions format).
func producers(wasm []byte) (map[string]map[string]string, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errors.New("not a wasm module")
	}
	r := reader{b: wasm[8:]}
	for len(r.b) > 0 {
		id := r.byte()
		body := reader{b: r.bytes(int(r.uleb()))}
		if r.err != nil {
			return nil, r.err
		}
		if id != 0 || body.str() != "producers" {
			continue
		}
		out := map[string]map[string]string{}
		for range body.uleb() {
			field := body.str()
			out[field] = map[string]string{}
			for range body.uleb() {
				name := body.str()
				out[field][name] = body.str()
			}
		}
		return out, body.err
	}
	return map[string]map[string]string{}, nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.err = errors.New("truncated module")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uleb() uint64 {
	var x uint64
	for shift := uint(0); shift < 64 && r.err == nil; shift += 7 {
		c := r.byte()
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
	return x
}

func (r *reader) bytes(n int) []byte {
	if n > len(r.b) {
		r.err = errors.New("truncated module")
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) str() string { return string(r.bytes(int(r.uleb()))) }
