package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Several permhost processes that load one plugin at once into one empty
// compile cache all succeed with the same decision, in-process and behind
// the process wall (a child per plugin): one compiles and writes the entry,
// the others wait for it and read it, and nobody finds an entry half
// written and deletes it under its writer. (Several proxies start together;
// each walled plugin is a child of its own.) Rounds, since the race it
// guards against needs the loads to overlap.
func TestEvalConcurrentColdCache(t *testing.T) {
	plugin := examplePlugin(t, "plan-mode")
	const processes, rounds = 4, 3
	for round := range rounds {
		cache := filepath.Join(t.TempDir(), "cache")
		type result struct {
			code           int
			stdout, stderr string
		}
		results := make([]result, processes)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range processes {
			isolation := "in-process"
			if i%2 == 1 {
				isolation = "process"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(permhostBin, "eval", "--cache-dir", cache, "--isolation", isolation,
					"--plugin", plugin)
				cmd.Stdin = strings.NewReader(evalRequest)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				<-start
				err := cmd.Run()
				results[i] = result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
				if err != nil && cmd.ProcessState == nil {
					results[i] = result{code: -1, stderr: err.Error()}
				}
			}()
		}
		close(start)
		wg.Wait()
		var decisions []string
		for i, r := range results {
			require.Equal(t, 0, r.code, "round %d, process %d: stderr: %s\nstdout: %s", round, i, r.stderr, r.stdout)
			var out evalOutput
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), "round %d, process %d: %s", round, i, r.stdout)
			require.NotNil(t, out.Decision, "round %d, process %d: %s", round, i, r.stdout)
			decisions = append(decisions, fmt.Sprintf("%+v", *out.Decision))
			assert.NotContains(t, r.stderr, "discarded", "round %d, process %d: an entry another load was writing looked corrupt", round, i)
		}
		for _, d := range decisions[1:] {
			assert.Equal(t, decisions[0], d, "round %d: every process decides alike", round)
		}
		entries, err := filepath.Glob(filepath.Join(cache, "*", "permhost.sum"))
		require.NoError(t, err)
		assert.Len(t, entries, 1, "round %d: one sealed entry", round)
		_, err = os.Stat(filepath.Join(cache))
		require.NoError(t, err)
	}
}
