package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/sandbox"
)

// goPluginPath returns a standard Go plugin (GOOS=wasip1, c-shared, ~3 MB):
// NAME.wasm from $PERMHOST_PLUGINS_DIR or <repo>/build/plugins as `make
// plugins` builds them, else plugins/examples/NAME built into a temporary
// directory (~30 s, offline with a warm module cache).
func goPluginPath(t *testing.T, name string) string {
	t.Helper()
	dirs := []string{os.Getenv("PERMHOST_PLUGINS_DIR"), filepath.Join("..", "build", "plugins")}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name+".wasm"); fileExists(p) {
			return p
		}
	}
	if testing.Short() {
		t.Skipf("no %s.wasm built (make plugins) and -short", name)
	}
	out := filepath.Join(t.TempDir(), name+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, ".")
	cmd.Dir = filepath.Join("..", "plugins", "examples", name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, b)
	}
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// planModeCase is a request and what plan-mode answers.
type planModeCase struct {
	req  abi.Request
	want abi.Outcome
}

func planModeCases() []planModeCase {
	execute := request("exec")
	execute.ToolCall.RawInput = json.RawMessage(`{"command":"rm -rf build"}`)
	read := request("read")
	read.ToolCall.Kind = abi.KindRead
	read.ToolCall.Title = "Read README.md"
	edit := request("edit")
	edit.ToolCall.Kind = abi.KindEdit
	return []planModeCase{{execute, abi.OutcomeReject}, {read, abi.OutcomeAbstain}, {edit, abi.OutcomeReject}}
}

// TestGoPluginNoTimeouts: a standard Go plugin under the default 100 ms
// deadline (1 s under the race detector) answers every call, from the first one after Load on: its
// instances are made ready (the Go runtime's _initialize) outside any
// decision's deadline.
func TestGoPluginNoTimeouts(t *testing.T) {
	path := goPluginPath(t, "plan-mode")
	ctx := context.Background()
	start := time.Now()
	timeout := 100 * time.Millisecond * raceSlowdown
	p, err := Load(ctx, Options{Path: path, CacheDir: t.TempDir(), Limits: sandbox.Limits{Timeout: timeout}})
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close(ctx)) }()
	t.Logf("Load (compile included): %v; deadline %v", time.Since(start), timeout)
	cases := planModeCases()

	decide := func(t *testing.T, i int) time.Duration {
		c := cases[i%len(cases)]
		r := p.Call(ctx, c.req)
		if assert.NoError(t, r.Err, "call %d", i) {
			assert.Equal(t, c.want, r.Decision.Outcome, "call %d", i)
		}
		return r.Duration
	}
	sequential := func(t *testing.T) {
		var worst time.Duration
		for i := range 20 {
			d := decide(t, i)
			if i == 0 {
				t.Logf("first call: %v", d)
			}
			worst = max(worst, d)
		}
		t.Logf("20 sequential calls: slowest %v", worst)
	}
	concurrent := func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() { decide(t, i) })
		}
		wg.Wait()
	}

	t.Run("sequential right after Load", sequential)
	t.Run("concurrent", concurrent)
	t.Run("after a discard", func(t *testing.T) {
		// A config plan-mode cannot decode makes it report an error: the
		// instance is discarded and replaced in the background.
		bad := cases[0].req
		bad.Config = json.RawMessage(`{"only_in_mode": 5}`)
		_, err := p.Decide(ctx, bad)
		requireKind(t, err, KindPluginError)
		sequential(t)
		_, err = p.Decide(ctx, bad)
		requireKind(t, err, KindPluginError)
		concurrent(t)
	})
	idle, live := settled(t, p)
	t.Logf("after the test: %d instances idle, %d alive", len(idle), live)
	assert.LessOrEqual(t, live, p.maxIdle)
	assertNoClosedIdle(t, p)
}

// TestSlowInit: slow_init's _initialize takes 150 ms, longer than the
// decision deadline. Load gives it the init budget; decisions never pay for
// it while an instance is ready; when none is, the caller gets a timeout at
// its deadline and the instance joins the pool once it is ready.
func TestSlowInit(t *testing.T) {
	ctx := context.Background()
	const timeout = 50 * time.Millisecond
	p := load(t, "slow_init", Options{PoolSize: 1, Limits: sandbox.Limits{Timeout: timeout}})
	ok := request("ok")
	fail := request(fmt.Sprintf("%04100d", 0)) // over 4096 bytes: traps

	// The spare is made while the first instance serves.
	for i := range 5 {
		d, err := p.Decide(ctx, ok)
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, abi.OutcomeAllow, d.Outcome)
	}
	idle, live := settled(t, p)
	require.Len(t, idle, 2)
	require.Equal(t, 2, live)

	// Discarding one leaves the other ready: no wait.
	_, err := p.Decide(ctx, fail)
	requireKind(t, err, KindTrap)
	d, err := p.Decide(ctx, ok)
	require.NoError(t, err)
	assert.Equal(t, "slow_init", d.Reason)

	// Discard both at once: the next call finds none ready and times out at
	// its deadline, not 150 ms later.
	settled(t, p)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, err := p.Decide(ctx, fail)
			assert.Equal(t, KindTrap, KindOf(err), "%v", err)
		})
	}
	wg.Wait()
	start := time.Now()
	_, err = p.Decide(ctx, ok)
	wall := time.Since(start)
	// Had it waited the 150 ms for the instance being made, it would have
	// decided; it times out at its own deadline instead.
	if err != nil { // a loaded machine may have made one ready already
		e := requireKind(t, err, KindTimeout)
		assert.Contains(t, e.Error(), "no instance was ready")
		t.Logf("no instance ready: returned after %v (deadline %v)", wall, timeout)
	}
	// ...and the instance being made serves later calls.
	require.Eventually(t, func() bool {
		_, err := p.Decide(ctx, ok)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	idle, live = settled(t, p)
	assert.NotEmpty(t, idle)
	assert.LessOrEqual(t, live, p.maxIdle)
}

// TestWarmup: instances of a module with a runtime to start (_initialize)
// are warmed up with one synthetic decision in the background, except for
// a plugin that fails it, which is then made ready without it: the filler's
// instances when it makes them, Load's own only after a warmed spare is
// pooled (a decision that comes at once takes Load's instance as it is).
// Modules without _initialize are not warmed up.
func TestWarmup(t *testing.T) {
	ctx := context.Background()
	p := load(t, "slow_init", Options{})
	idle, _ := settled(t, p)
	assert.False(t, p.noWarmup.Load())
	require.Len(t, idle, 2)
	for _, inst := range idle {
		assert.Contains(t, string(inst.input), `"decisionId":"permhost-warmup"`, "the warm-up ran")
	}
	r := p.Call(ctx, request("d"))
	require.NoError(t, r.Err)
	assert.Empty(t, r.Logs)

	// slow_init traps on an input over 4096 bytes: a config that long makes
	// the warm-up (and every decision) fail.
	long := json.RawMessage(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 5000)))
	u := load(t, "slow_init", Options{PoolSize: 1, Config: long})
	settled(t, u)
	assert.True(t, u.noWarmup.Load())
	_, err := u.Decide(ctx, request("d"))
	requireKind(t, err, KindTrap)
	_, live := settled(t, u)
	assert.Equal(t, 2, live, "the failed instance was replaced")

	e := load(t, "echo", Options{})
	idle, _ = settled(t, e)
	require.Len(t, idle, 2)
	for _, inst := range idle {
		assert.Empty(t, inst.input, "no _initialize: no warm-up")
	}
}

// TestWarmupNeverHoldsADecision (issue 15, point 9): a plugin whose warm-up
// never returns still answers its first decision, at once, from the
// instance Load made; the warm-up runs into the plugin's own timeout in the
// background, and from then on instances are made without one.
func TestWarmupNeverHoldsADecision(t *testing.T) {
	ctx := context.Background()
	p := load(t, "warmup_loop", Options{PoolSize: 1, Limits: sandbox.Limits{Timeout: 2 * time.Second}})
	// The filler is warming a spare up, which takes the whole 2 s timeout;
	// the decision does not wait for it.
	d, err := p.Decide(ctx, request("first"))
	require.NoError(t, err)
	assert.Equal(t, abi.Decision{Outcome: abi.OutcomeReject, Reason: "warmup_loop: not the warm-up"}, d)
	assert.False(t, p.noWarmup.Load(), "the warm-up was still running")
	settled(t, p)
	assert.True(t, p.noWarmup.Load(), "a warm-up that timed out means no warm-up")
	d, err = p.Decide(ctx, request("second"))
	require.NoError(t, err)
	assert.Equal(t, abi.OutcomeReject, d.Outcome)
}
