package host

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/permhost/permhost/abi"
)

// FuzzDecodeDecision feeds arbitrary plugin output through the decoder: it
// either fails or yields a decision that names only an offered option.
func FuzzDecodeDecision(f *testing.F) {
	for _, s := range []string{
		`{"outcome":"allow"}`, `{"outcome":"allow","scope":"always"}`, `{"outcome":"reject","scope":"always"}`,
		`{"outcome":"select","optionId":"reject"}`, `{"outcome":"select","optionId":"nope"}`,
		`{"outcome":"ask","explanation":{"summary":"s","riskLevel":"high"}}`, `{"outcome":"maybe"}`,
		`{"outcome":"abstain","extra":[1,2]}`, `{"outcome":1}`, `{"outcome":"allow",`, `null`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		d, err := decodeDecision(out, offered)
		if err != nil {
			if d != (abi.Decision{}) {
				t.Fatalf("a failed decode returned %+v", d)
			}
			return
		}
		switch d.Outcome {
		case abi.OutcomeAllow, abi.OutcomeSelect:
			o, ok := d.Option(offered)
			if !ok {
				t.Fatalf("%s names no offered option", out)
			}
			found := false
			for _, x := range offered {
				found = found || x == o
			}
			if !found {
				t.Fatalf("%s chose %+v, not offered", out, o)
			}
		case abi.OutcomeReject, abi.OutcomeCancel, abi.OutcomeAsk, abi.OutcomeAbstain:
		default:
			t.Fatalf("%s: unknown outcome %q accepted", out, d.Outcome)
		}
	})
}

// FuzzManifest checks that any manifest either verifies against the files it
// names or is refused; it never panics.
func FuzzManifest(f *testing.F) {
	f.Add([]byte("0000000000000000000000000000000000000000000000000000000000000000  a\n"))
	f.Add([]byte("junk"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, manifestName), manifest, 0o600); err != nil {
			t.Fatal(err)
		}
		// sha256("x")
		const good = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881  a\n"
		_, _, err := verifyEntry(dir)
		if err == nil && string(manifest) != good && string(manifest) != good[:len(good)-1] {
			t.Fatalf("manifest %q verified", manifest)
		}
		if err != nil && errors.Is(err, os.ErrNotExist) {
			t.Fatalf("manifest exists: %v", err)
		}
	})
}

func TestArena(t *testing.T) {
	var a arena
	a.reset()
	off1, f := a.alloc(3, 1<<20)
	if f != nil || off1 != arenaStart {
		t.Fatalf("first block at %d (%v), want %d", off1, f, arenaStart)
	}
	off2, _ := a.alloc(5, 1<<20)
	if off2 != 16 {
		t.Fatalf("second block at %d, want 8-aligned 16", off2)
	}
	if a.length(off1) != 3 || a.length(off2) != 5 || a.length(off1+1) != 0 || a.length(0) != 0 {
		t.Fatal("length table wrong")
	}
	if off, _ := a.alloc(0, 1<<20); off != 0 {
		t.Fatalf("empty alloc gave %d, want the null offset", off)
	}
	if _, ok := a.span(off2, 6); !ok {
		// Within the allocated arena even if past the block: the PDKs copy
		// in 8-byte steps only within blocks, but this is what Extism allows.
		t.Log("span past block end refused")
	}
	if _, ok := a.span(off2, 1<<20); ok {
		t.Fatal("span past the arena allowed")
	}
	if _, ok := a.span(0, 1); ok {
		t.Fatal("span at the null offset allowed")
	}
	a.free(off2)
	if a.length(off2) != 0 || len(a.mem) != int(off2) {
		t.Fatal("freeing the newest block did not give its bytes back")
	}
	a.free(12345) // not a block: ignored
	if _, f := a.alloc(1<<20, 1<<20); f == nil || f.kind != KindMemory {
		t.Fatalf("alloc past the limit: %v", f)
	}
	if _, f := a.alloc(^uint64(0), ^uint64(0)); f == nil {
		t.Fatal("overflowing alloc allowed")
	}
	a.reset()
	if len(a.blocks) != 0 || len(a.mem) != arenaStart {
		t.Fatal("reset kept state")
	}
}
