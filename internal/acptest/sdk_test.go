package acptest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recordTB is a testing.TB whose Fatal and Skip end the calling goroutine
// and are recorded, so a helper's failure paths can be tested.
type recordTB struct {
	testing.TB
	mu      sync.Mutex
	fatal   string
	skipped string
}

func (r *recordTB) Helper() {}

func (r *recordTB) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recordTB) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f with r in its own goroutine and waits for it.
func (r *recordTB) run(f func(testing.TB) []string) []string {
	var out []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		out = f(r)
	}()
	<-done
	return out
}

// fakeTools makes a directory holding the given executable scripts, first in
// PATH (the whole of it when alone), and a fresh checkout root as working
// directory.
func fakeTools(t *testing.T, alone bool, scripts map[string]string) (root string) {
	bin := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := bin
	if !alone {
		path += string(os.PathListSeparator) + os.Getenv("PATH")
	}
	t.Setenv("PATH", path)
	root = t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	return root
}

func TestSDKAgentWithoutNodeSkips(t *testing.T) {
	fakeTools(t, true, map[string]string{"npm": "exit 0\n"})
	r := &recordTB{TB: t}
	r.run(SDKAgent)
	if !strings.Contains(r.skipped, "node not found") || r.fatal != "" {
		t.Errorf("skip %q, fatal %q; want a skip naming node", r.skipped, r.fatal)
	}
}

func TestSDKAgentReportsNpmFailure(t *testing.T) {
	root := fakeTools(t, false, map[string]string{
		"node": "exit 0\n",
		"npm":  "echo 'npm error code ENOTFOUND' >&2\nexit 1\n",
	})
	r := &recordTB{TB: t}
	r.run(SDKAgent)
	if !strings.Contains(r.fatal, "npm install @agentclientprotocol/sdk@0.17.0 failed") || !strings.Contains(r.fatal, "ENOTFOUND") {
		t.Errorf("fatal %q; want npm's output", r.fatal)
	}
	// Nothing half-installed is left to be mistaken for an install.
	if left, _ := filepath.Glob(filepath.Join(root, "build", "npm", "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestSDKAgentConcurrentInstall(t *testing.T) {
	// A fake npm that installs the script under --prefix.
	root := fakeTools(t, false, map[string]string{
		"node": "exit 0\n",
		"npm": `while [ "$1" != --prefix ]; do shift; done
d="$2/node_modules/@agentclientprotocol/sdk/dist/examples"
mkdir -p "$d" && echo run >"$d/agent.js"
`,
	})
	const n = 4
	results := make([][]string, n)
	tbs := make([]*recordTB, n)
	var wg sync.WaitGroup
	for i := range n {
		tbs[i] = &recordTB{TB: t}
		wg.Go(func() { results[i] = tbs[i].run(SDKAgent) })
	}
	wg.Wait()
	want := filepath.Join(root, "build", "npm", "sdk-0.17.0", sdkAgentScript)
	for i := range n {
		if tbs[i].fatal != "" || tbs[i].skipped != "" {
			t.Fatalf("install %d: fatal %q skip %q", i, tbs[i].fatal, tbs[i].skipped)
		}
		if len(results[i]) != 2 || filepath.Base(results[i][0]) != "node" || results[i][1] != want {
			t.Errorf("install %d returned %q, want [node %s]", i, results[i], want)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(root, "build", "npm"))
	if len(entries) != 1 || entries[0].Name() != "sdk-0.17.0" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("build/npm holds %q, want only sdk-0.17.0", names)
	}
	// Installed once, later calls reuse it without npm.
	t.Setenv("PATH", filepath.Dir(results[0][0]))
	if err := os.Remove(filepath.Join(filepath.Dir(results[0][0]), "npm")); err != nil {
		t.Fatal(err)
	}
	r := &recordTB{TB: t}
	if got := r.run(SDKAgent); r.fatal != "" || len(got) != 2 || got[1] != want {
		t.Errorf("second call: %q, fatal %q", got, r.fatal)
	}
}
