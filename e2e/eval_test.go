package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const evalRequest = `{"decisionId":"d1","session":{"id":"s1","cwd":"/tmp/project"},
"toolCall":{"id":"t1","title":"npm test","kind":"execute","rawInput":{"command":"npm test"}},
"options":[{"optionId":"allow","name":"Allow","kind":"allow_once","durable":false},
{"optionId":"reject","name":"Reject","kind":"reject_once","durable":false}]}`

type evalOutput struct {
	Decision *struct {
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
	} `json:"decision"`
	Failure *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"failure"`
	DurationUs int64             `json:"durationUs"`
	Logs       []json.RawMessage `json:"logs"`
}

// runEval runs the real binary and returns its exit status, parsed output,
// stderr and wall time.
func runEval(t *testing.T, args ...string) (int, evalOutput, string, time.Duration) {
	t.Helper()
	start := time.Now()
	code, stdout, stderr := runPermhostIn(t, "", strings.NewReader(evalRequest), append([]string{"eval", "--cache-dir", "off"}, args...)...)
	wall := time.Since(start)
	var out evalOutput
	if stdout != "" {
		require.NoError(t, json.Unmarshal([]byte(stdout), &out), "stdout: %s", stdout)
	}
	return code, out, stderr, wall
}

func fixture(name string) string {
	return filepath.Join("..", "testdata", "wasm", name+".wasm")
}

// TestEvalRunaway runs the real binary on plugins that never return: it
// must answer with a timeout, never before the deadline, and exit, whatever
// the guest is doing. How late past the deadline the call returns is
// logged; `make bench` measures it (the time-to-fallback table), since a
// loaded machine makes any bound here a coin toss.
func TestEvalRunaway(t *testing.T) {
	const deadline = 50 * time.Millisecond
	for _, name := range []string{"infinite_loop", "call_tree"} {
		t.Run(name, func(t *testing.T) {
			code, out, stderr, wall := runEval(t, "--plugin", fixture(name), "--timeout", deadline.String())
			assert.Equal(t, 3, code, "stderr: %s", stderr)
			assert.Nil(t, out.Decision)
			require.NotNil(t, out.Failure)
			assert.Equal(t, "timeout", out.Failure.Kind)
			call := time.Duration(out.DurationUs) * time.Microsecond
			t.Logf("call returned %v after its %v deadline; the process took %v in all", call-deadline, deadline, wall)
			assert.GreaterOrEqual(t, call, deadline, "stopped before its deadline")
		})
	}
}

func TestEvalExitStatus(t *testing.T) {
	code, out, stderr, _ := runEval(t, "--plugin", fixture("good"))
	assert.Equal(t, 0, code, "stderr: %s", stderr)
	require.NotNil(t, out.Decision)
	assert.Equal(t, "abstain", out.Decision.Outcome)
	assert.Nil(t, out.Failure)

	code, out, _, _ = runEval(t, "--plugin", fixture("select_not_offered"))
	assert.Equal(t, 3, code)
	require.NotNil(t, out.Failure)
	assert.Equal(t, "bad-output", out.Failure.Kind)

	code, _, stderr, _ = runEval(t, "--plugin", fixture("good"), "--timeout", "soon")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `"soon"`)
}
