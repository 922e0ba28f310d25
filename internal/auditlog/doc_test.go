package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/edkey"
)

// docBlock returns the fenced block after marker in docs/audit-log.md.
func docBlock(t *testing.T, marker string) []byte {
	t.Helper()
	doc, err := os.ReadFile("../../docs/audit-log.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(doc, []byte(marker+"\n```"))
	if !ok {
		t.Fatalf("docs/audit-log.md has no %s", marker)
	}
	_, rest, _ = bytes.Cut(rest, []byte("\n"))
	block, _, ok := bytes.Cut(rest, []byte("```\n"))
	if !ok {
		t.Fatalf("the block after %s is not closed", marker)
	}
	return block
}

var chainHead = regexp.MustCompile(`^\{"seq":[0-9]+,"prev":"[0-9a-f]{64}",`)

const docKey = "ed25519:A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg="

// TestDocExample: the worked example of docs/audit-log.md is what the
// writer writes with the example's key and time, and it verifies; edited as
// the page says, verify says what the page says.
func TestDocExample(t *testing.T) {
	example := docBlock(t, "<!-- example log -->")
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	key := ed25519.NewKeyFromSeed(seed)
	if got := edkey.FormatPublic(key.Public().(ed25519.PublicKey)); got != docKey {
		t.Fatalf("the example seed's public key is %s, the page says %s", got, docKey)
	}
	path := filepath.Join(t.TempDir(), "d.jsonl")
	w, err := Open(path, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.now = func() time.Time { return time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC) }
	for _, l := range bytes.Split(bytes.TrimSpace(example), []byte("\n"))[:2] {
		obj := chainHead.ReplaceAll(l, []byte("{"))
		if err := w.Append(obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, example) {
		t.Errorf("the writer writes:\n%s\nthe page shows:\n%s", b, example)
	}
	pub, _ := edkey.ParsePublic(docKey)
	if r := Verify([]File{{Name: "d.jsonl", Data: example}}, []ed25519.PublicKey{pub}); r.Problem != nil {
		t.Errorf("Verify of the example: %v", r.Problem)
	}
	edited := bytes.Replace(example, []byte(`"reject"`), []byte(`"allow"`), 1)
	if r := Verify([]File{{Name: "d.jsonl", Data: edited}}, []ed25519.PublicKey{pub}); r.Problem == nil || r.Problem.Kind+": "+r.Problem.Msg != "modified: entry seq 2 (decisionId d-2) was modified: its sha256 is not the prev of the next line" {
		t.Errorf("Verify of the edited example: %v", r.Problem)
	}
}

// TestPythonVerifier runs the page's Python verifier on its example.
func TestPythonVerifier(t *testing.T) {
	if exec.Command("python3", "-c", "import cryptography").Run() != nil {
		t.Skip("python3 with the cryptography package is not installed")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "verify.py")
	os.WriteFile(script, docBlock(t, "<!-- example verifier -->"), 0o600)
	example := docBlock(t, "<!-- example log -->")
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"intact", example, "ok"},
		{"edited", bytes.Replace(example, []byte(`"reject"`), []byte(`"allow"`), 1), "line 3: seq 3 does not follow seq 2"},
		{"cut", example[:len(example)-20], "truncated: the last line is incomplete"},
	} {
		log := filepath.Join(dir, tt.name+".jsonl")
		os.WriteFile(log, tt.data, 0o600)
		out, err := exec.Command("python3", script, docKey, log).CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
