package acptest

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the players, the Conn and the process helpers leave
// no goroutine behind once their streams are closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSharedDirOverride(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "transcripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b.jsonl", "a.jsonl", "README.md"} {
		if err := os.WriteFile(filepath.Join(dir, "transcripts", name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(SharedDirEnv, dir)
	got := TranscriptFiles(t)
	want := []string{filepath.Join(dir, "transcripts", "a.jsonl"), filepath.Join(dir, "transcripts", "b.jsonl")}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("TranscriptFiles = %q, want %q", got, want)
	}
}

func TestSharedDirDefaultIsBesideTheRepository(t *testing.T) {
	t.Setenv(SharedDirEnv, "")
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("RepoRoot %s has no go.mod", root)
	}
	want := filepath.Join(filepath.Dir(root), "shared")
	if _, err := os.Stat(want); err != nil {
		t.Skipf("no shared directory beside the checkout: %v", err)
	}
	if got := SharedDir(t); got != want {
		t.Errorf("SharedDir = %s, want %s", got, want)
	}
}
