package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/sandbox"
)

// fixture returns the path of a module: host/testdata first, then the
// shared testdata/wasm fixtures.
func fixture(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range []string{"testdata", "../testdata/wasm"} {
		p := filepath.Join(dir, name+".wasm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("no fixture %s.wasm", name)
	return ""
}

func load(t testing.TB, name string, opts Options) *Plugin {
	t.Helper()
	opts.Path = fixture(t, name)
	if opts.CacheDir == "" {
		opts.CacheDir = "off"
	}
	p, err := Load(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
	return p
}

// offered is what claude-agent-acp offers for a Bash call.
var offered = []abi.Option{
	{OptionID: "allow_always", Name: "Always Allow", Kind: abi.OptionAllowAlways, Durable: true},
	{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
	{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
}

func request(id string) abi.Request {
	return abi.Request{ABI: abi.Current, DecisionID: id, Options: offered,
		Session:  abi.Session{ID: "s1", Cwd: "/work"},
		ToolCall: abi.ToolCall{ID: "t1", Kind: abi.KindExecute, Title: "npm test"}}
}

func requireKind(t *testing.T, err error, kind Kind) *Error {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e, "want a %s failure", kind)
	require.Equal(t, kind, e.Kind, "error: %v", err)
	require.True(t, strings.HasPrefix(e.Error(), fmt.Sprintf("host: plugin %q: %s: ", e.Plugin, kind)), e.Error())
	return e
}

func TestLoadAndDecide(t *testing.T) {
	p := load(t, "good", Options{})
	d, err := p.Decide(context.Background(), request("d1"))
	require.NoError(t, err)
	assert.Equal(t, abi.Decision{Outcome: abi.OutcomeAbstain, Reason: "good fixture: constant decision"}, d)
	assert.Equal(t, "good", p.Name())
	assert.Equal(t, abi.Info{Name: "good", Version: "1.0.0", Description: "constant abstain"}, p.Info())
	assert.Equal(t, abi.Version{Major: 1, Minor: 0}, p.ABI())
	assert.Equal(t, sandbox.DefaultLimits(), p.Limits())
	b, err := os.ReadFile(fixture(t, "good"))
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	assert.Equal(t, hex.EncodeToString(sum[:]), p.SHA256())
}

func TestLoadFromBytes(t *testing.T) {
	b, err := os.ReadFile(fixture(t, "echo"))
	require.NoError(t, err)
	p, err := Load(context.Background(), Options{Wasm: b, CacheDir: "off"})
	require.NoError(t, err)
	defer p.Close(context.Background())
	assert.Equal(t, "plugin", p.Name())
	assert.Equal(t, abi.Info{}, p.Info(), "no permhost_describe")
	d, err := p.Decide(context.Background(), request("from-bytes"))
	require.NoError(t, err)
	assert.Equal(t, "from-bytes", d.Reason)
}

func TestBadOptions(t *testing.T) {
	good := fixture(t, "good")
	for _, tc := range []struct {
		name string
		opts Options
		want error
	}{
		{"neither path nor bytes", Options{}, ErrBadOptions},
		{"both path and bytes", Options{Path: good, Wasm: []byte{0}}, ErrBadOptions},
		{"negative pool", Options{Path: good, PoolSize: -1}, ErrBadOptions},
		{"config not an object", Options{Path: good, Config: json.RawMessage(`[1]`)}, ErrBadOptions},
		{"config not JSON", Options{Path: good, Config: json.RawMessage(`{`)}, ErrBadOptions},
		{"config null", Options{Path: good, Config: json.RawMessage(`null`)}, ErrBadOptions},
		{"pin not hex", Options{Path: good, SHA256: "xyz"}, ErrBadOptions},
		{"bad limits", Options{Path: good, Limits: sandbox.Limits{Timeout: -1}}, sandbox.ErrBadLimits},
		{"missing file", Options{Path: "testdata/nope.wasm"}, os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.CacheDir = "off"
			_, err := Load(context.Background(), tc.opts)
			requireKind(t, err, KindLoad)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	t.Run("garbage bytes", func(t *testing.T) {
		_, err := Load(context.Background(), Options{Wasm: []byte("not wasm at all"), CacheDir: "off"})
		requireKind(t, err, KindLoad)
	})
}

func TestSHA256Pin(t *testing.T) {
	b, err := os.ReadFile(fixture(t, "good"))
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	pin := hex.EncodeToString(sum[:])

	p := load(t, "good", Options{SHA256: strings.ToUpper(pin)})
	assert.Equal(t, pin, p.SHA256())

	wrong := strings.Repeat("ab", 32)
	_, err = Load(context.Background(), Options{Path: fixture(t, "good"), SHA256: wrong, CacheDir: "off"})
	e := requireKind(t, err, KindLoad)
	assert.ErrorIs(t, err, ErrPinMismatch)
	assert.Contains(t, e.Error(), wrong)
	assert.Contains(t, e.Error(), pin)
}

func TestABIHandshake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    Kind // "" = loads
		want    error
		message string
	}{
		{"abi_1_0", "", nil, ""},
		{"good", "", nil, ""},
		{"abi_1_1", "", nil, ""}, // an older minor than this host's 1.2
		{"abi_0_9", KindABI, ErrIncompatibleABI, "speaks ABI 0.9, this host speaks 1.4"},
		{"abi_2_0", KindABI, ErrIncompatibleABI, "speaks ABI 2.0, this host speaks 1.4"},
		{"abi_major", KindABI, ErrIncompatibleABI, "speaks ABI 2.0"},
		{"abi_minor", KindABI, ErrIncompatibleABI, "speaks ABI 1.99"},
		{"abi_garbage", KindABI, nil, `is not {"major":N,"minor":N}`},
		{"abi_no_minor", KindABI, nil, `is not {"major":N,"minor":N}`},
		{"abi_missing", KindABI, ErrMissingExport, "permhost_abi"},
		{"no_decide", KindABI, ErrMissingExport, "permhost_decide"},
		{"abi_decide_param", KindABI, ErrMissingExport, "has type (i32)->(i32), want ()->(i32)"},
		{"abi_traps", KindTrap, nil, "permhost_abi: wasm error: unreachable"},
		{"forbidden_import", KindForbiddenImport, sandbox.ErrForbiddenImport, "env.connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(context.Background(), Options{Path: fixture(t, tc.name), CacheDir: "off"})
			if tc.kind == "" {
				require.NoError(t, err)
				require.NoError(t, p.Close(context.Background()))
				return
			}
			require.Nil(t, p)
			e := requireKind(t, err, tc.kind)
			assert.Equal(t, tc.name, e.Plugin)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			}
			assert.Contains(t, err.Error(), tc.message)
		})
	}
}

func TestFailureKinds(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		fixture string
		limits  sandbox.Limits
		id      string
		options []abi.Option
		kind    Kind
		want    error
		message string
	}{
		{fixture: "echo", id: "TRAP!", kind: KindTrap, message: "unreachable"},
		{fixture: "echo", id: "ERRSET!", kind: KindPluginError, message: "permhost_decide returned 1: echo: asked to fail"},
		{fixture: "echo", id: "NET!", kind: KindTrap, want: ErrNetwork},
		{fixture: "echo", id: "SPIN!", limits: sandbox.Limits{Timeout: 20 * time.Millisecond}, kind: KindTimeout},
		{fixture: "echo", id: "no allow offered", options: offered[2:], kind: KindBadOutput, want: abi.ErrNotOffered},
		{fixture: "echo", id: strings.Repeat("x", 2000), limits: sandbox.Limits{MaxInput: 1000}, kind: KindInputTooLarge},
		{fixture: "echo", id: strings.Repeat("x", 2000), limits: sandbox.Limits{MaxOutput: 1000}, kind: KindOutputTooLarge},
		{fixture: "unreachable", kind: KindTrap},
		// Generous deadlines: these must end by their own limit (call depth,
		// memory cap), not by the deadline.
		{fixture: "deep_recursion", limits: sandbox.Limits{Timeout: time.Minute}, kind: KindTrap, message: "call depth exceeded"},
		{fixture: "memory_grow", limits: sandbox.Limits{Timeout: time.Minute}, kind: KindMemory},
		{fixture: "memory_grow", limits: sandbox.Limits{MemoryBytes: 1 << 20, Timeout: time.Minute}, kind: KindMemory},
		{fixture: "huge_output", kind: KindOutputTooLarge},
		{fixture: "invalid_json", kind: KindBadOutput},
		{fixture: "unknown_outcome", kind: KindBadOutput, want: abi.ErrUnknownOutcome},
		{fixture: "select_not_offered", kind: KindBadOutput, want: abi.ErrNotOffered},
		{fixture: "infinite_loop", limits: sandbox.Limits{Timeout: 20 * time.Millisecond}, kind: KindTimeout},
		{fixture: "call_tree", limits: sandbox.Limits{Timeout: 20 * time.Millisecond}, kind: KindTimeout},
	} {
		name := tc.fixture + "/" + string(tc.kind)
		t.Run(name, func(t *testing.T) {
			p := load(t, tc.fixture, Options{Limits: tc.limits, PoolSize: 1})
			req := request(tc.id)
			if tc.options != nil {
				req.Options = tc.options
			}
			for range 2 { // the failed instance is replaced, and fails the same way
				d, err := p.Decide(ctx, req)
				assert.Zero(t, d)
				requireKind(t, err, tc.kind)
				if tc.want != nil {
					assert.ErrorIs(t, err, tc.want)
				}
				assert.Contains(t, err.Error(), tc.message)
				assertNoClosedIdle(t, p)
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	p := load(t, "echo", Options{Limits: sandbox.Limits{Timeout: 10 * time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := p.Decide(ctx, request("SPIN!"))
	requireKind(t, err, KindCancelled)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 5*time.Second)

	_, err = p.Decide(ctx, request("already cancelled"))
	requireKind(t, err, KindCancelled)

	// The plugin still answers callers whose context is alive.
	d, err := p.Decide(context.Background(), request("after"))
	require.NoError(t, err)
	assert.Equal(t, "after", d.Reason)
}

func TestCallerDeadline(t *testing.T) {
	p := load(t, "echo", Options{Limits: sandbox.Limits{Timeout: 10 * time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := p.Decide(ctx, request("SPIN!"))
	requireKind(t, err, KindCancelled)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// assertNoClosedIdle checks that no failed (closed) instance is pooled.
func assertNoClosedIdle(t *testing.T, p *Plugin) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, inst := range p.idle {
		assert.False(t, inst.closed.Load(), "a closed instance is pooled")
	}
}

// settled waits until the filler has stopped and returns the idle
// instances and how many instances are alive.
func settled(t *testing.T, p *Plugin) (idle []*instance, live int) {
	t.Helper()
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		idle, live = append([]*instance(nil), p.idle...), p.live
		return !p.filling && len(p.busy) == 0
	}, 30*time.Second, time.Millisecond)
	return idle, live
}

func TestPoolReuse(t *testing.T) {
	p := load(t, "echo", Options{PoolSize: 1})
	ctx := context.Background()
	idle, live := settled(t, p)
	require.Len(t, idle, 2, "Load's instance and a spare (PoolSize 1 plus the spare)")
	assert.Equal(t, 2, live)

	// Calls reuse the pool: nothing is made.
	for i := range 5 {
		d, err := p.Decide(ctx, request(fmt.Sprint("call-", i)))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint("call-", i), d.Reason)
	}
	again, live := settled(t, p)
	assert.ElementsMatch(t, idle, again, "the same instances served every call")
	assert.Equal(t, 2, live)

	// A failed instance is discarded and replaced; the spare serves the
	// next call meanwhile.
	_, err := p.Decide(ctx, request("TRAP!"))
	requireKind(t, err, KindTrap)
	d, err := p.Decide(ctx, request("fresh"))
	require.NoError(t, err)
	assert.Equal(t, "fresh", d.Reason)
	after, live := settled(t, p)
	assert.Len(t, after, 2)
	assert.Equal(t, 2, live)
	assertNoClosedIdle(t, p)
	replaced := 0
	for _, inst := range after {
		if !slices.Contains(again, inst) {
			replaced++
		}
	}
	assert.Equal(t, 1, replaced, "the trapped instance was replaced")
}

func TestPoolSizeBoundsIdle(t *testing.T) {
	p := load(t, "echo", Options{PoolSize: 2, Limits: sandbox.Limits{Timeout: 5 * time.Second}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := p.Decide(context.Background(), request(fmt.Sprint(i)))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	idle, live := settled(t, p)
	assert.LessOrEqual(t, len(idle), 2+1, "PoolSize plus the spare")
	assert.LessOrEqual(t, live, p.maxIdle)
}

func TestVarsLastOneCall(t *testing.T) {
	p := load(t, "echo", Options{PoolSize: 1})
	ctx := context.Background()
	d, err := p.Decide(ctx, request("VAR!"))
	require.NoError(t, err)
	assert.Equal(t, "v1", d.Reason, "var_get sees var_set within a call")
	d, err = p.Decide(ctx, request("PEEK!"))
	require.NoError(t, err)
	assert.Equal(t, "-", d.Reason, "the next call on the same instance starts without vars")
}

func TestConfig(t *testing.T) {
	ctx := context.Background()
	t.Run("config_get", func(t *testing.T) {
		p := load(t, "echo", Options{Config: json.RawMessage(`{"mode": "strict", "n": [1, 2]}`)})
		d, err := p.Decide(ctx, request("CONFIG!"))
		require.NoError(t, err)
		assert.Equal(t, "strict", d.Reason)
		assert.Equal(t, map[string]string{"mode": "strict", "n": "[1, 2]"}, p.configStrings)
	})
	t.Run("request carries it", func(t *testing.T) {
		p := load(t, "echo", Options{PoolSize: 1, Config: json.RawMessage(`{"mode": "strict"}`)})
		req := request("r")
		req.Config = json.RawMessage(`{"mode":"other"}`)
		_, err := p.Decide(ctx, req)
		require.NoError(t, err)
		idle, _ := settled(t, p)
		var inputs []string
		for _, inst := range idle {
			if strings.Contains(string(inst.input), `"decisionId":"r"`) {
				inputs = append(inputs, string(inst.input))
			}
		}
		require.Len(t, inputs, 1, "one instance served the call")
		assert.Contains(t, inputs[0], `"config":{"mode":"strict"}`)
	})
	t.Run("absent", func(t *testing.T) {
		p := load(t, "echo", Options{})
		d, err := p.Decide(ctx, request("CONFIG!"))
		require.NoError(t, err)
		assert.Equal(t, "-", d.Reason)
	})
}

func TestLogs(t *testing.T) {
	ctx := context.Background()
	p := load(t, "echo", Options{})
	r := p.Call(ctx, request("LOG!"))
	require.NoError(t, r.Err)
	assert.Equal(t, []Log{{Level: "info", Message: "echo: logged"}}, r.Logs)
	assert.Positive(t, r.Duration)

	r = p.Call(ctx, request("quiet"))
	require.NoError(t, r.Err)
	assert.Empty(t, r.Logs, "logs belong to their call")

	r = p.Call(ctx, request("TRAP!"))
	requireKind(t, r.Err, KindTrap)
	assert.Zero(t, r.Decision)

	t.Run("bounded", func(t *testing.T) {
		const limit = 1000
		// The deadline is not what this tests: a million host calls take
		// 5-30 s under -race on a loaded 2-core machine.
		p := load(t, "log_flood", Options{Limits: sandbox.Limits{MaxLogBytes: limit, Timeout: 5 * time.Minute, InitTimeout: time.Minute}})
		r := p.Call(ctx, request("flood"))
		require.NoError(t, r.Err)
		assert.Equal(t, "logged 1000000 lines", r.Decision.Reason)
		require.NotEmpty(t, r.Logs)
		total := 0
		for _, l := range r.Logs[:len(r.Logs)-1] {
			assert.Equal(t, "info", l.Level)
			total += len(l.Message)
		}
		assert.LessOrEqual(t, total+32*(len(r.Logs)-1), limit, "each entry counts 32 bytes besides its message")
		last := r.Logs[len(r.Logs)-1]
		assert.Equal(t, "warn", last.Level)
		assert.Contains(t, last.Message, "more entries, dropped at the 1000-byte limit")
		t.Logf("log_flood: %v for 10^6 log calls", r.Duration)
	})
}

func TestCloseIdempotent(t *testing.T) {
	ctx := context.Background()
	p, err := Load(ctx, Options{Path: fixture(t, "good"), CacheDir: "off"})
	require.NoError(t, err)
	require.NoError(t, p.Close(ctx))
	require.NoError(t, p.Close(ctx))
	_, err = p.Decide(ctx, request("late"))
	requireKind(t, err, KindCancelled)
	assert.ErrorIs(t, err, ErrClosed)
	r := p.Call(ctx, request("late"))
	assert.ErrorIs(t, r.Err, ErrClosed)
}

func TestCloseStopsInFlight(t *testing.T) {
	ctx := context.Background()
	p, err := Load(ctx, Options{Path: fixture(t, "echo"), CacheDir: "off", Limits: sandbox.Limits{Timeout: time.Minute}})
	require.NoError(t, err)
	const n = 4
	// Close must stop guests that are running, not calls that have not
	// entered yet: each call reads its input before it spins.
	entered := make(chan struct{}, n)
	hook := func(inst *instance) {
		if inst.plugin == p && bytes.Contains(inst.input, []byte("SPIN!")) {
			entered <- struct{}{}
		}
	}
	testHookInput.Store(&hook)
	t.Cleanup(func() { testHookInput.Store(nil) })
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := p.Decide(ctx, request("SPIN!"))
			errs <- err
		}()
	}
	for range n {
		<-entered
	}
	start := time.Now()
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, p.Close(closeCtx))
	t.Logf("Close stopped %d spinning calls in %v", n, time.Since(start))
	for range n {
		err := <-errs
		requireKind(t, err, KindCancelled)
		assert.ErrorIs(t, err, ErrClosed)
	}
}

// TestConcurrentDecisions runs 100 decisions at once on one plugin, some of
// them made to trap or to report an error; every caller gets its own answer.
func TestConcurrentDecisions(t *testing.T) {
	p := load(t, "echo", Options{Limits: sandbox.Limits{Timeout: 10 * time.Second}})
	const n = 100
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("decision-%03d", i)
			want := Kind("")
			switch {
			case i%7 == 0:
				id, want = id+"-TRAP!", KindTrap
			case i%11 == 0:
				id, want = id+"-ERRSET!", KindPluginError
			case i%13 == 0:
				id, want = id+"-NET!", KindTrap
			}
			r := p.Call(context.Background(), request(id))
			if want != "" {
				assert.Equal(t, want, KindOf(r.Err), "%s: %v", id, r.Err)
				assert.Zero(t, r.Decision)
				return
			}
			if assert.NoError(t, r.Err, id) {
				assert.Equal(t, abi.Decision{Outcome: abi.OutcomeAllow, Reason: id}, r.Decision)
			}
		})
	}
	wg.Wait()
	idle, live := settled(t, p)
	assert.LessOrEqual(t, len(idle), p.maxIdle)
	assert.Equal(t, len(idle), live, "every instance left is idle")
	assertNoClosedIdle(t, p)
}

func TestErrorFormat(t *testing.T) {
	e := &Error{Kind: KindTimeout, Plugin: "team-rules", Err: sandbox.ErrTimeout}
	assert.Equal(t, `host: plugin "team-rules": timeout: sandbox: deadline exceeded`, e.Error())
	wrapped := fmt.Errorf("chain: %w", e)
	assert.ErrorIs(t, wrapped, sandbox.ErrTimeout)
	assert.Equal(t, KindTimeout, KindOf(wrapped))
	assert.Equal(t, Kind(""), KindOf(errors.New("other")))
}

// TestMaxLive: a burst of runaway calls never makes more than maxLive
// instances exist at once (abandoned ones included), and every caller
// gets its answer, the guest's timeout or no instance within the deadline.
// The burst saturates the CPU by design, so the wall time is only checked
// against hangs (a waiter nobody wakes); the worst overshoot is logged.
func TestMaxLive(t *testing.T) {
	const timeout = 20 * time.Millisecond
	p := load(t, "echo", Options{PoolSize: 1, Limits: sandbox.Limits{Timeout: timeout}})
	n := 3 * p.maxLive
	var most int
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			p.mu.Lock()
			most = max(most, p.live)
			p.mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	var wg sync.WaitGroup
	walls := make([]time.Duration, n)
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			_, err := p.Decide(context.Background(), request("SPIN!"))
			walls[i] = time.Since(start)
			assert.Equal(t, KindTimeout, KindOf(err), "%v", err)
			assert.Less(t, walls[i], 30*time.Second, "a caller nobody woke")
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	t.Logf("%d runaway calls at once: at most %d instances alive (cap %d); slowest returned %v after its deadline",
		n, most, p.maxLive, slices.Max(walls)-timeout)
	assert.LessOrEqual(t, most, p.maxLive)
	d, err := p.Decide(context.Background(), request("after"))
	require.NoError(t, err, "the plugin recovers once the runaways are stopped")
	assert.Equal(t, "after", d.Reason)
}

// TestInputTooLargeKeepsInstance: a request over MaxInput is refused
// before the plugin runs, so its instance is not replaced.
func TestInputTooLargeKeepsInstance(t *testing.T) {
	p := load(t, "echo", Options{PoolSize: 1, Limits: sandbox.Limits{MaxInput: 1000}})
	before, _ := settled(t, p)
	_, err := p.Decide(context.Background(), request(strings.Repeat("x", 2000)))
	requireKind(t, err, KindInputTooLarge)
	after, live := settled(t, p)
	assert.ElementsMatch(t, before, after)
	assert.Equal(t, len(before), live)
}

// A plugin built with the Extism C PDK reads its input through
// input_offset and load_u8/load_u64 on that block: every byte must be the
// input's, on every call (the arena is reset between calls).
func TestInputOffset(t *testing.T) {
	p := load(t, "input_offset", Options{PoolSize: 1})
	for i, id := range []string{"first", "a much longer decision id than the first one", "3"} {
		d, err := p.Decide(context.Background(), request(id))
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, abi.OutcomeAllow, d.Outcome, "call %d: the block named by input_offset is not the input", i)
	}
}
