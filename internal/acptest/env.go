package acptest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
)

// RepoRoot returns the root of the permhost checkout: the nearest directory at
// or above the working directory that holds go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("acptest: no go.mod at or above the working directory")
		}
		dir = parent
	}
}

// TranscriptDir returns <repo>/testdata/transcripts, the recorded ACP
// traffic the tests replay (copied from the real agents' recordings; its
// README says how they were made).
func TranscriptDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(RepoRoot(t), "testdata", "transcripts")
}

// TranscriptFiles returns the paths of every *.jsonl file in TranscriptDir,
// sorted; it fails the test if there is none.
func TranscriptFiles(t testing.TB) []string {
	t.Helper()
	dir := TranscriptDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("acptest: no transcripts in %s", dir)
	}
	sort.Strings(files)
	return files
}

var fakeAgentBuild struct {
	once sync.Once
	path string
	err  error
}

// FakeAgent returns the command line of a separate process that plays the
// agent side of the transcript file at path (see the fakeagent command). The
// program is built once per test process into <repo>/build/acptest.
func FakeAgent(t testing.TB, path string) []string {
	t.Helper()
	root := RepoRoot(t)
	b := &fakeAgentBuild
	b.once.Do(func() {
		dir := filepath.Join(root, "build", "acptest")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.err = err
			return
		}
		// Build under a private name and rename: other test processes may
		// be running or replacing the same binary at the same time.
		final := filepath.Join(dir, "fakeagent")
		tmp := final + ".tmp" + strconv.Itoa(os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, "./internal/acptest/fakeagent")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building fakeagent: %v\n%s", err, out)
			return
		}
		if err := os.Rename(tmp, final); err != nil {
			b.err = err
			return
		}
		b.path = final
	})
	if b.err != nil {
		t.Fatalf("acptest: %v", b.err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return []string{b.path, "-transcript", abs}
}

// WriteTranscript writes tr to a file in a test temporary directory and
// returns its path, for FakeAgent.
func WriteTranscript(t testing.TB, tr *Transcript) string {
	t.Helper()
	name := tr.Name
	if name == "" {
		name = "script"
	}
	path := filepath.Join(t.TempDir(), name+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(tr.Encode(f), f.Close()); err != nil {
		t.Fatalf("acptest: writing transcript: %v", err)
	}
	return path
}
