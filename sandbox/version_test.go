package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// instrumentedDigest is the sha256 over the instrumented fixtures of
// ../testdata/wasm, for InstrumentVersion.
const (
	pinnedVersion      = "2"
	instrumentedDigest = "126e7fe42fbf703b9a8ce6609fe9f622f16e9e1c56c632f019213cf1f6275f7e"
)

// Caches keep Instrument's output under InstrumentVersion: an output that
// changes under the same version would make them run modules instrumented
// by an older rewrite.
func TestInstrumentVersionPinsOutput(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "wasm", "*.wasm"))
	if err != nil || len(files) < 10 {
		t.Fatalf("fixtures: %v (%d files)", err, len(files))
	}
	h := sha256.New()
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Instrument(wasm)
		h.Write([]byte(filepath.Base(f) + "\x00"))
		if err != nil {
			h.Write([]byte("error: " + err.Error()))
		}
		h.Write(out)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if InstrumentVersion != pinnedVersion || got != instrumentedDigest {
		t.Fatalf("Instrument's output or version changed (version %q, digest %s; pinned %q, %s).\n"+
			"If the rewrite changed, bump InstrumentVersion; then set pinnedVersion and instrumentedDigest here to the new values.",
			InstrumentVersion, got, pinnedVersion, instrumentedDigest)
	}
}
