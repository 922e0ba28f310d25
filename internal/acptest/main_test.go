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

func TestTranscriptFilesAreInTheRepository(t *testing.T) {
	root := RepoRoot(t)
	files := TranscriptFiles(t)
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil || filepath.IsAbs(rel) || rel[:2] == ".." {
			t.Errorf("transcript %s is outside the repository %s", f, root)
		}
	}
	if _, err := os.Stat(filepath.Join(TranscriptDir(t), "README.md")); err != nil {
		t.Errorf("the transcripts' README is missing: %v", err)
	}
}
