package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"encoding/json"

	extism "github.com/extism/go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/proctest"
	"github.com/permhost/permhost/internal/wasmgen"
	"github.com/permhost/permhost/sandbox"
)

// The hostile suite runs every fixture of testdata/wasm (see its README.md)
// and the generated ones of internal/wasmgen through the real host and
// checks how each one ends, that a call never returns before its deadline
// when it timed out, and that nothing is left behind: no busy core, no
// goroutine, no heap. How late past the deadline a call returned is logged;
// `make bench` measures it (tests on a loaded 2-core machine assert order
// and outcome, not wall-clock margins).

const (
	// After the suite the process must settle into idling: a window of
	// idleWindow in which it uses less than idleCPUBudget, within idleWithin
	// (a runaway guest uses a core's share in every window).
	idleWindow    = 300 * time.Millisecond
	idleCPUBudget = 30 * time.Millisecond
	idleWithin    = 10 * time.Second
	// heapGrowthBudget bounds the live heap left after the suite.
	heapGrowthBudget = 64 << 20
)

func hostileFixture(name string) string {
	return filepath.Join("..", "testdata", "wasm", name+".wasm")
}

// hostileRequest is a claude-agent-acp Bash request.
func hostileRequest() abi.Request {
	return abi.Request{
		ABI:        abi.Current,
		DecisionID: "hostile-1",
		Session:    abi.Session{ID: "sess-1", Cwd: "/home/dev/project", Mode: "default"},
		ToolCall: abi.ToolCall{ID: "toolu_01", Title: "`npm test`", Kind: abi.KindExecute,
			RawInput: []byte(`{"command":"npm test","description":"Run the tests"}`), ToolName: "Bash"},
		Options: []abi.Option{
			{OptionID: "allow_always", Name: "Always Allow", Kind: abi.OptionAllowAlways, Durable: true},
			{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
			{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
		},
	}
}

// generousTimeout is the deadline of fixtures that must end other than by
// timing out (4 million host calls of log_flood took up to a minute under
// -race on a loaded 2-core machine).
const generousTimeout = 5 * time.Minute

// overshoots collects how far past their deadline stopped calls returned.
type overshoots []time.Duration

func (o overshoots) report(t *testing.T) {
	if len(o) == 0 {
		return
	}
	s := slices.Clone(o)
	slices.Sort(s)
	t.Logf("deadline overshoot over %d stopped calls: p50 %v, max %v (goal 2ms; measured by make bench)",
		len(s), s[len(s)/2], s[len(s)-1])
}

func TestHostileSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile suite takes a few seconds")
	}
	leaks := goleak.IgnoreCurrent()
	heapBefore := liveHeap()

	var over overshoots
	t.Run("decide", func(t *testing.T) { testHostileDecide(t, &over) })
	t.Run("load", testHostileLoad)
	t.Run("cancelled", func(t *testing.T) { testHostileCancelled(t, &over) })
	t.Run("compile abandoned", testCompileAbandoned)
	over.report(t)
	host.WaitAbandonedCompiles()

	// Everything is closed by now. A guest still running would keep a
	// core busy; a goroutine left behind would show here.
	t.Run("idle CPU", func(t *testing.T) {
		r, err := proctest.WaitIdle(0, idleWindow, idleCPUBudget, idleWithin)
		if errors.Is(err, proctest.ErrUnsupported) {
			t.Skip(err)
		}
		require.NoError(t, err)
		t.Logf("after the suite: %v", r)
		assert.True(t, r.Idle, "a runaway plugin still uses CPU after the suite: %v", r)
	})
	t.Run("goroutines", func(t *testing.T) {
		goleak.VerifyNone(t, leaks)
	})
	t.Run("heap", func(t *testing.T) {
		after := liveHeap()
		growth := int64(after) - int64(heapBefore)
		t.Logf("live heap: %d KiB before the suite, %d KiB after (growth %d KiB)", heapBefore>>10, after>>10, growth>>10)
		assert.Less(t, growth, int64(heapGrowthBudget))
	})
}

// testHostileDecide runs the fixtures that load and then fail, or decide,
// when called.
func testHostileDecide(t *testing.T, over *overshoots) {
	pathOpen := regexp.MustCompile(`^path_open errno (\d\d)$`)
	tests := []struct {
		fixture string
		limits  sandbox.Limits // zero fields: the defaults
		// calls is how many calls to make (default 2: a failed instance
		// is replaced, and the replacement must fail the same way).
		calls int
		// wantKind is the failure; "" means a decision, checked by check.
		wantKind host.Kind
		check    func(t *testing.T, r host.Result)
		config   json.RawMessage
	}{
		{fixture: "good", check: func(t *testing.T, r host.Result) {
			assert.Equal(t, abi.Decision{Outcome: abi.OutcomeAbstain, Reason: "good fixture: constant decision"}, r.Decision)
		}},
		{fixture: "infinite_loop", wantKind: host.KindTimeout},
		{fixture: "infinite_loop", limits: sandbox.Limits{Timeout: 30 * time.Millisecond}, wantKind: host.KindTimeout},
		// The one wazero's own cancellation cannot stop.
		{fixture: "call_tree", wantKind: host.KindTimeout},
		{fixture: "call_tree", limits: sandbox.Limits{Timeout: 30 * time.Millisecond}, wantKind: host.KindTimeout},
		// The sandbox's call-depth bound (sandbox.Limits.MaxCallDepth)
		// stops it within a millisecond, long before the deadline and
		// wazero's 400 MB stack ceiling.
		{fixture: "deep_recursion", wantKind: host.KindTrap},
		// Under a small cap the cap comes first...
		{fixture: "memory_grow", limits: sandbox.Limits{MemoryBytes: 2 << 20}, wantKind: host.KindMemory},
		// ...and under the default 32 MiB too: the host reserves each
		// instance's memory up to the cap, so growing one page at a time
		// never copies (~0.4 ms to the cap, where it took ~1 s).
		{fixture: "memory_grow", wantKind: host.KindMemory},
		{fixture: "huge_output", wantKind: host.KindOutputTooLarge},
		{fixture: "huge_output", limits: sandbox.Limits{MaxOutput: 4 << 20}, wantKind: host.KindBadOutput},
		{fixture: "invalid_json", wantKind: host.KindBadOutput},
		{fixture: "unknown_outcome", wantKind: host.KindBadOutput},
		{fixture: "select_not_offered", wantKind: host.KindBadOutput},
		// The same key in another case: Go's encoding/json would take the
		// second as the same field.
		{fixture: "scripted", config: json.RawMessage(`{"decision":"{\"outcome\":\"reject\",\"Outcome\":\"allow\"}"}`),
			wantKind: host.KindBadOutput, check: checkTrapMessage("duplicate key")},
		{fixture: "unreachable", wantKind: host.KindTrap},
		// table.grow by 2^30 (once the Go runtime's fatal out of memory),
		// then by 65536 until refused: refused past MaxTableEntries with
		// -1, then the fixture traps.
		{fixture: "table_grow", wantKind: host.KindTrap, check: checkTrapMessage("unreachable")},
		{fixture: "table_grow", limits: sandbox.Limits{MaxTableEntries: 10_000}, wantKind: host.KindTrap},
		// Host calls bounded by the sandbox: the loops around them meet
		// the deadline like any loop.
		{fixture: "fd_write_iovecs", wantKind: host.KindTimeout},
		{fixture: "random_get_loop", wantKind: host.KindTimeout},
		{fixture: "random_get_loop", limits: sandbox.Limits{Timeout: 30 * time.Millisecond}, wantKind: host.KindTimeout},
		// {"outcome":"reject","outcome":"allow"}: read strictly, not as
		// the last duplicate.
		{fixture: "duplicate_key", wantKind: host.KindBadOutput, check: checkTrapMessage("duplicate key")},
		{fixture: "wasi_path_open", check: func(t *testing.T, r host.Result) {
			assert.Equal(t, abi.OutcomeAbstain, r.Decision.Outcome)
			m := pathOpen.FindStringSubmatch(r.Decision.Reason)
			require.NotNil(t, m, "reason %q", r.Decision.Reason)
			assert.NotEqual(t, "00", m[1], "path_open succeeded: the sandbox granted a directory")
			t.Logf("path_open was refused with WASI errno %s", m[1])
		}},
		// A million log calls: under a generous deadline the plugin
		// decides and only MaxLogBytes of its 16 MB of logs are kept...
		// (4 million host calls: ~0.7 s here, several seconds under
		// -race, so one call and a deadline that only catches a hang.)
		{fixture: "log_flood", calls: 1, check: func(t *testing.T, r host.Result) {
			assert.Equal(t, "logged 1000000 lines", r.Decision.Reason)
			checkLogsBounded(t, r.Logs, sandbox.DefaultMaxLogBytes)
			assert.Equal(t, "warn", r.Logs[len(r.Logs)-1].Level, "16 MB of logs must overflow the limit")
			t.Logf("log_flood took %v", r.Duration)
		}},
		// A million empty entries (stdout newlines) cost the log limit
		// more than their messages: at most MaxLogBytes/33 are kept.
		{fixture: "empty_logs", calls: 1, check: func(t *testing.T, r host.Result) {
			assert.Equal(t, "wrote 1000000 empty lines", r.Decision.Reason)
			require.NotEmpty(t, r.Logs)
			kept := r.Logs[:len(r.Logs)-1]
			assert.LessOrEqual(t, len(kept), sandbox.DefaultMaxLogBytes/33, "empty entries are charged")
			assert.Greater(t, len(kept), sandbox.DefaultMaxLogBytes/66, "within the limit, entries are kept")
			for _, l := range kept {
				assert.Equal(t, host.Log{Level: "stdout", Message: ""}, l)
			}
			last := r.Logs[len(r.Logs)-1]
			assert.Equal(t, "warn", last.Level)
			assert.Contains(t, last.Message, fmt.Sprintf("%d more entries", 1000000-len(kept)))
		}},
		// ...and under a short one it is stopped like any loop.
		{fixture: "log_flood", limits: sandbox.Limits{Timeout: 20 * time.Millisecond}, wantKind: host.KindTimeout,
			check: func(t *testing.T, r host.Result) { checkLogsBounded(t, r.Logs, sandbox.DefaultMaxLogBytes) }},
		// ~20-40 ms on a quiet machine.
		{fixture: "slow", check: func(t *testing.T, r host.Result) {
			assert.Equal(t, abi.Decision{Outcome: abi.OutcomeAbstain, Reason: "slow but legal"}, r.Decision)
			t.Logf("slow took %v", r.Duration)
		}},
	}
	for _, tt := range tests {
		name := tt.fixture
		if tt.limits != (sandbox.Limits{}) {
			name += fmt.Sprintf("/%+v", tt.limits)
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			limits := tt.limits
			if tt.wantKind != host.KindTimeout && limits.Timeout == 0 {
				// A fixture that must end some other way gets a deadline
				// a loaded machine cannot reach: this tests the outcome,
				// make bench measures the time.
				limits.Timeout, limits.InitTimeout = generousTimeout, time.Minute
			}
			p, err := host.Load(ctx, host.Options{Path: hostileFixture(tt.fixture), Limits: limits, CacheDir: "off", PoolSize: 1,
				Config: tt.config})
			require.NoError(t, err)
			defer func() { assert.NoError(t, p.Close(ctx)) }()
			deadline := p.Limits().Timeout

			calls := tt.calls
			if calls == 0 {
				calls = 2
			}
			for call := range calls {
				start := time.Now()
				r := p.Call(ctx, hostileRequest())
				wall := time.Since(start)

				assert.Equal(t, tt.wantKind, host.KindOf(r.Err), "call %d: %v", call, r.Err)
				if tt.wantKind == "" && r.Err == nil && tt.check != nil {
					tt.check(t, r)
				}
				if tt.wantKind != "" {
					assert.Zero(t, r.Decision, "a failed call has no decision")
					if tt.check != nil {
						tt.check(t, r)
					}
				}
				if tt.wantKind == host.KindTimeout {
					*over = append(*over, wall-deadline)
					t.Logf("call %d: stopped %v after its %v deadline", call, wall-deadline, deadline)
					assert.GreaterOrEqual(t, r.Duration, deadline, "call %d: a timeout before the deadline", call)
				}
				assert.LessOrEqual(t, r.Duration, wall, "Result.Duration is the wall time of the call")
			}
		})
	}
}

// checkTrapMessage checks that the failure's message says want.
func checkTrapMessage(want string) func(t *testing.T, r host.Result) {
	return func(t *testing.T, r host.Result) {
		require.Error(t, r.Err)
		assert.Contains(t, r.Err.Error(), want)
	}
}

// checkLogsBounded checks that logs keep at most limit bytes of messages
// and entries (32 bytes each), and when they dropped some, end by saying
// how much.
func checkLogsBounded(t *testing.T, logs []host.Log, limit int) {
	t.Helper()
	require.NotEmpty(t, logs)
	kept, dropped := 0, 0
	for i, l := range logs {
		if i == len(logs)-1 && l.Level == "warn" {
			m := regexp.MustCompile(`^permhost: (\d+) more bytes of plugin logs, \d+ more entries, dropped`).FindStringSubmatch(l.Message)
			require.NotNil(t, m, "last log %q should count the dropped bytes", l.Message)
			dropped, _ = strconv.Atoi(m[1])
			assert.Positive(t, dropped)
			break
		}
		kept += 32 + len(l.Message) // an entry counts 32 bytes besides its message
		assert.Equal(t, "info", l.Level)
		assert.Equal(t, "log_flood: line!", l.Message)
	}
	assert.LessOrEqual(t, kept, limit)
	if kept+32+len("log_flood: line!") > limit {
		assert.Positive(t, dropped, "logs were cut at the limit without saying so")
	}
	t.Logf("kept %d bytes of logs, dropped %d bytes", kept, dropped)
}

// testHostileLoad checks the fixtures refused at load time, and modules that
// are not the ones pinned or not modules at all.
func testHostileLoad(t *testing.T) {
	good, err := os.ReadFile(hostileFixture("good"))
	require.NoError(t, err)
	goodSum := sha256.Sum256(good)
	wrongPin := strings.Repeat("ab", sha256.Size)

	tests := []struct {
		name     string
		opts     host.Options
		wantKind host.Kind
		wantMsg  []string
	}{
		{name: "abi_major", opts: host.Options{Path: hostileFixture("abi_major")}, wantKind: host.KindABI, wantMsg: []string{"abi_major", "2.0", abi.Current.String()}},
		{name: "abi_minor", opts: host.Options{Path: hostileFixture("abi_minor")}, wantKind: host.KindABI, wantMsg: []string{"abi_minor", "1.99"}},
		{name: "no_decide", opts: host.Options{Path: hostileFixture("no_decide")}, wantKind: host.KindABI, wantMsg: []string{abi.ExportDecide}},
		{name: "forbidden_import", opts: host.Options{Path: hostileFixture("forbidden_import")}, wantKind: host.KindForbiddenImport, wantMsg: []string{"env", "connect"}},
		{name: "sha256 mismatch", opts: host.Options{Name: "pinned", Wasm: good, SHA256: wrongPin}, wantKind: host.KindLoad,
			wantMsg: []string{"pinned", wrongPin, hex.EncodeToString(goodSum[:])}},
		{name: "garbage", opts: host.Options{Name: "garbage", Wasm: []byte("#!/bin/sh\nrm -rf ~\n")}, wantKind: host.KindLoad, wantMsg: []string{"garbage"}},
		{name: "truncated", opts: host.Options{Name: "truncated", Wasm: good[:len(good)/2]}, wantKind: host.KindLoad},
		{name: "empty", opts: host.Options{Name: "empty", Wasm: []byte{}}, wantKind: host.KindLoad},
		// The start function grows a table by 2^30 entries (which once
		// killed the process at load) and traps when refused.
		{name: "table_grow_start", opts: host.Options{Path: hostileFixture("table_grow_start")}, wantKind: host.KindLoad,
			wantMsg: []string{"instantiate", "unreachable"}},
		// The start function loops: stopped at the init budget.
		{name: "start_loop", opts: host.Options{Path: hostileFixture("start_loop"), Limits: sandbox.Limits{InitTimeout: 50 * time.Millisecond}},
			wantKind: host.KindLoad, wantMsg: []string{"start function", "InitTimeout"}},
		// No linear memory, and permhost_abi traps: a failure, not the
		// nil-memory panic it once was.
		{name: "memoryless", opts: host.Options{Path: hostileFixture("memoryless")}, wantKind: host.KindTrap,
			wantMsg: []string{"permhost_abi", "unreachable"}},
		// Over the load-time limits: refused before compiling, naming the
		// limit and the value.
		{name: "huge_tables", opts: host.Options{Path: hostileFixture("huge_tables")}, wantKind: host.KindLoad,
			wantMsg: []string{"Limits.MaxTables", "17"}},
		{name: "huge_table", opts: host.Options{Path: hostileFixture("huge_table")}, wantKind: host.KindLoad,
			wantMsg: []string{"Limits.MaxTableEntries", "100000000"}},
	}
	for _, g := range wasmgen.Hostile {
		tests = append(tests, struct {
			name     string
			opts     host.Options
			wantKind host.Kind
			wantMsg  []string
		}{name: g.Name, opts: host.Options{Name: g.Name, Wasm: wasmgen.Module(g.Shape)}, wantKind: host.KindLoad,
			wantMsg: []string{g.Name, "Limits." + g.Limit}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.CacheDir = "off"
			p, err := host.Load(context.Background(), tt.opts)
			if p != nil {
				assert.NoError(t, p.Close(context.Background()))
			}
			require.Error(t, err)
			assert.Nil(t, p)
			assert.Equal(t, tt.wantKind, host.KindOf(err), "%v", err)
			for _, s := range tt.wantMsg {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// testHostileCancelled gives up on runaways from the caller's side: the call
// returns when the caller's context ends, long before the plugin's
// deadline.
func testHostileCancelled(t *testing.T, over *overshoots) {
	for _, fixture := range []string{"infinite_loop", "call_tree"} {
		t.Run(fixture, func(t *testing.T) {
			p, err := host.Load(context.Background(), host.Options{Path: hostileFixture(fixture), CacheDir: "off",
				Limits: sandbox.Limits{Timeout: 5 * time.Second}})
			require.NoError(t, err)
			defer func() { assert.NoError(t, p.Close(context.Background())) }()

			const after = 20 * time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			timer := time.AfterFunc(after, cancel)
			defer timer.Stop()
			start := time.Now()
			r := p.Call(ctx, hostileRequest())
			wall := time.Since(start)
			cancel()

			// Cancelled long before the plugin's 5 s deadline.
			assert.Equal(t, host.KindCancelled, host.KindOf(r.Err), "%v", r.Err)
			*over = append(*over, wall-after)
			t.Logf("returned %v after the caller cancelled", wall-after)

			// A context that is already done never starts the call.
			r = p.Call(ctx, hostileRequest())
			assert.Equal(t, host.KindCancelled, host.KindOf(r.Err), "%v", r.Err)
		})
	}

	// The caller's own deadline counts as a cancellation too, not as the
	// plugin's timeout.
	t.Run("caller deadline", func(t *testing.T) {
		p, err := host.Load(context.Background(), host.Options{Path: hostileFixture("infinite_loop"), CacheDir: "off",
			Limits: sandbox.Limits{Timeout: 5 * time.Second}})
		require.NoError(t, err)
		defer func() { assert.NoError(t, p.Close(context.Background())) }()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		r := p.Call(ctx, hostileRequest())
		assert.Equal(t, host.KindCancelled, host.KindOf(r.Err), "%v", r.Err)
	})
}

// testCompileAbandoned: a module under every load-time limit (one raised)
// whose compile takes seconds (a br_table of 100,000 targets) fails to load
// at Limits.CompileTimeout, while its compile still runs; the compile is
// left to finish by itself, and the suite waits for it only to check that
// nothing is left running.
func testCompileAbandoned(t *testing.T) {
	bin := wasmgen.Module(wasmgen.Shape{BrTableTargets: 100_000})
	p, err := host.Load(context.Background(), host.Options{Name: "slow_compile", Wasm: bin, CacheDir: "off",
		Limits: sandbox.Limits{MaxBrTableTargets: 100_000, CompileTimeout: 10 * time.Millisecond}})
	require.Error(t, err)
	assert.Nil(t, p)
	assert.Equal(t, host.KindLoad, host.KindOf(err), "%v", err)
	assert.ErrorIs(t, err, host.ErrCompileTimeout)
	assert.Contains(t, err.Error(), "CompileTimeout")
}

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestFixturesOnStockExtism runs the fixtures that end quickly on the stock
// Extism SDK, which implements the same host ABI: they are Extism plugins,
// not modules shaped to fit permhost's own kernel. (The runaways are left
// out: Extism cannot stop call_tree at all, and memory_grow, deep_recursion
// and log_flood take seconds there.)
func TestFixturesOnStockExtism(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every fixture with the Extism SDK")
	}
	abi10 := `{"major":1,"minor":0}`
	tests := []struct {
		fixture string
		abi     string
		// output of permhost_decide, or wantErr: the error Extism reports.
		output  string
		wantErr string
	}{
		{fixture: "good", abi: abi10, output: `{"outcome":"abstain","reason":"good fixture: constant decision"}`},
		{fixture: "invalid_json", abi: abi10, output: `{"outcome":"allow",`},
		{fixture: "unknown_outcome", abi: abi10, output: `{"outcome":"maybe"}`},
		{fixture: "select_not_offered", abi: abi10, output: `{"outcome":"select","optionId":"permhost-fixture-never-offered"}`},
		{fixture: "abi_major", abi: `{"major":2,"minor":0}`, output: `{"outcome":"abstain","reason":"abi_major should never be called"}`},
		{fixture: "abi_minor", abi: `{"major":1,"minor":99}`, output: `{"outcome":"abstain","reason":"abi_minor should never be called"}`},
		{fixture: "slow", abi: abi10, output: `{"outcome":"abstain","reason":"slow but legal"}`},
		{fixture: "unreachable", abi: abi10, wantErr: "unreachable"},
		{fixture: "infinite_loop", abi: abi10, wantErr: "deadline exceeded"},
		{fixture: "no_decide", abi: abi10, wantErr: "unknown function"},
		// Extism grants no directory either: path_open fails.
		{fixture: "wasi_path_open", abi: abi10, output: `{"outcome":"abstain","reason":"path_open errno 63"}`},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			manifest := extism.Manifest{
				Wasm: []extism.Wasm{extism.WasmFile{Path: hostileFixture(tt.fixture)}},
				// ms; generous: this tests what Extism answers, not how fast
				// (the slow fixture is ~15x slower under Extism's
				// cancellation checks, more on a loaded machine).
				Timeout: 120000,
				Memory:  &extism.ManifestMemory{MaxPages: 512},
			}
			if tt.fixture == "infinite_loop" {
				manifest.Timeout = 100
			}
			p, err := extism.NewPlugin(ctx, manifest, extism.PluginConfig{EnableWasi: true}, nil)
			require.NoError(t, err)
			defer p.Close(ctx)

			_, out, err := p.Call(abi.ExportABI, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.abi, string(out))

			_, out, err = p.Call(abi.ExportDecide, []byte(`{}`))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.output, string(out))
		})
	}

	// The import outside WASI and the Extism host module does not link.
	_, err := extism.NewPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmFile{Path: hostileFixture("forbidden_import")}}},
		extism.PluginConfig{EnableWasi: true}, nil)
	assert.ErrorContains(t, err, "env")
}
