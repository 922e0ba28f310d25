package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/sandbox"
)

// instance is one instantiation of a plugin's module with its kernel state.
// It serves one call at a time.
type instance struct {
	plugin *Plugin
	mod    api.Module

	// Exports, looked up once.
	initialize, decide, abiFn, describe, checkConfig api.Function

	stack []uint64 // the results of a call; one i32
	cc    callCtx
	// stdio carries the instance's stdout and stderr writers for the
	// sandbox's fd_write; callCtx.Value consults it.
	stdio context.Context

	// Per-call state, reset by begin.
	input      []byte
	arena      arena
	inputOff   uint64 // the input's block, made on the first input_offset
	outOff     uint64
	outLen     uint64
	outSet     bool
	errMsg     []byte
	errSet     bool
	arenaBytes uint64 // the arena capacity recorded in the memory budget
	vars       []variable
	varBytes   int

	collectLogs bool
	warming     bool // the warm-up call: its logs are dropped
	// logMu guards the logs: the caller takes them from an abandoned call
	// while the guest may still be logging.
	logMu       sync.Mutex
	logsSealed  bool
	logs        []Log
	logBytes    int  // the messages kept, and logEntryBytes for each entry
	logDropped  int  // message bytes dropped
	logLost     int  // entries dropped whole
	logOpen     bool // the last log entry is a stream write without its newline yet
	outOfMemory bool // Go's runtime said "out of memory" on stderr

	// stopping is set when Close stops this instance mid-call.
	stopping atomic.Bool

	// The instance's goroutine: run sends on work and waits for done.
	work      chan struct{}
	done      chan struct{}
	timer     *time.Timer
	fn        api.Function // what the next work runs
	budget    time.Duration
	callErr   error
	stopErr   error
	abandoned atomic.Bool
	closed    atomic.Bool // for tests: a closed instance is never pooled
}

// streamWriter captures the plugin's stdout or stderr into the call's logs.
type streamWriter struct {
	inst  *instance
	level string
}

func (w streamWriter) Write(p []byte) (int, error) {
	if w.level == "stderr" && bytes.Contains(p, []byte("out of memory")) {
		w.inst.outOfMemory = true
	}
	w.inst.stream(w.level, p)
	return len(p), nil
}

// newInstance instantiates p's module and looks up its exports. The
// module's start function runs inside instantiation, instrumented like any
// function and bounded by Limits.InitTimeout; it may use the Extism kernel
// and write to stdout and stderr (logged like a call's output).
func (p *Plugin) newInstance(ctx context.Context) (*instance, *Error) {
	inst := &instance{plugin: p, stack: make([]uint64, 1)}
	inst.cc.inst = inst
	inst.stdio = sandbox.WithStdio(context.Background(), streamWriter{inst, "stdout"}, streamWriter{inst, "stderr"})
	cfg := sandbox.ModuleConfig().
		WithName("").        // anonymous, so that one runtime can hold many instances
		WithStartFunctions() // the pool runs _initialize under the init budget
	ictx, cancel := context.WithTimeout(ctx, p.limits.InitTimeout)
	defer cancel()
	inst.cc.Context = experimental.WithMemoryAllocator(ictx, memoryAllocator)
	inst.input = inst.input[:0]
	inst.begin(false)
	mod, err := p.rt.InstantiateModule(&inst.cc, p.compiled, cfg)
	inst.cc.Context = nil
	inst.sealLogs()
	if err != nil {
		if ctx.Err() != nil {
			return nil, p.fail(KindCancelled, fmt.Errorf("instantiate: %w", ctx.Err()))
		}
		// The guest's poll reads the clock against the context's deadline
		// before the context's own timer fires.
		if dl, _ := ictx.Deadline(); !time.Now().Before(dl) {
			return nil, p.fail(KindLoad, fmt.Errorf("instantiate: the start function ran past Limits.InitTimeout (%v): %w", p.limits.InitTimeout, &trapError{err: err}))
		}
		return nil, p.fail(KindLoad, fmt.Errorf("instantiate: %w", &trapError{err: err}))
	}
	inst.mod = mod
	inst.work, inst.done = make(chan struct{}), make(chan struct{}, 1)
	inst.timer = time.NewTimer(time.Hour)
	inst.timer.Stop()
	go inst.serve()
	check := func(name string, required bool, results ...api.ValueType) (api.Function, *Error) {
		f := mod.ExportedFunction(name)
		if f == nil {
			if required {
				return nil, p.fail(KindABI, fmt.Errorf("%w %s", ErrMissingExport, name))
			}
			return nil, nil
		}
		d := f.Definition()
		if len(d.ParamTypes()) != 0 || !equalTypes(d.ResultTypes(), results) {
			return nil, p.fail(KindABI, fmt.Errorf("%w %s: has type %s, want %s",
				ErrMissingExport, name, signature(d.ParamTypes(), d.ResultTypes()), signature(nil, results)))
		}
		return f, nil
	}
	var e *Error
	if inst.decide, e = check(abi.ExportDecide, true, api.ValueTypeI32); e == nil {
		if inst.abiFn, e = check(abi.ExportABI, true, api.ValueTypeI32); e == nil {
			if inst.describe, e = check(abi.ExportDescribe, false, api.ValueTypeI32); e == nil {
				if inst.checkConfig, e = check(abi.ExportCheckConfig, false, api.ValueTypeI32); e == nil {
					inst.initialize, e = check("_initialize", false)
				}
			}
		}
	}
	if e != nil {
		inst.close()
		return nil, e
	}
	return inst, nil
}

func equalTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ",") + ")"
	}
	return names(params) + "->" + names(results)
}

// close closes an instance that is not running and reports true; an
// abandoned one is left to its own goroutine, which closes it when its guest
// stops and calls Plugin.retire.
func (inst *instance) close() bool {
	if inst.abandoned.Load() {
		return false
	}
	inst.closed.Store(true)
	close(inst.work)
	// The caller's context may be done already; closing must still happen.
	_ = inst.mod.Close(context.Background())
	return true
}

// encode makes req the input of the next call.
func (inst *instance) encode(req *abi.Request) error {
	if cap(inst.input) > 1<<20 {
		inst.input = nil
	}
	var err error
	inst.input, err = appendRequest(inst.input[:0], req)
	return err
}

// begin resets the per-call state.
func (inst *instance) begin(collectLogs bool) {
	inst.arena.reset()
	if inst.mod != nil {
		inst.accountArena(inst.mod)
	}
	inst.inputOff = 0
	inst.outOff, inst.outLen, inst.outSet = 0, 0, false
	inst.errMsg, inst.errSet = inst.errMsg[:0], false
	inst.vars, inst.varBytes = inst.vars[:0], 0
	inst.collectLogs = collectLogs
	inst.logs, inst.logBytes, inst.logDropped, inst.logLost, inst.logOpen = inst.logs[:0], 0, 0, 0, false
	inst.logsSealed = false
	inst.outOfMemory = false
}

// deadlineGrace is how long past its deadline a caller waits for a guest
// that has not stopped yet (stuck inside wazero's own code, such as a stack
// or memory copy, where no deadline check runs) before it returns without
// it.
const deadlineGrace = time.Millisecond

// run calls the export fn under budget and returns its output, which
// aliases the arena: it is valid until the next call on inst.
func (inst *instance) run(ctx context.Context, fn api.Function, budget time.Duration) ([]byte, *Error) {
	p := inst.plugin
	if e := inst.exec(ctx, fn, budget); e != nil {
		return nil, e
	}
	if rc := int32(inst.stack[0]); rc != 0 || inst.errSet {
		msg := "no message"
		if inst.errSet {
			msg = strings.ToValidUTF8(string(inst.errMsg), "\uFFFD")
		}
		if rc != 0 {
			return nil, p.fail(KindPluginError, fmt.Errorf("%s returned %d: %s", fn.Definition().ExportNames()[0], rc, msg))
		}
		return nil, p.fail(KindPluginError, errors.New(msg))
	}
	if !inst.outSet {
		return nil, p.fail(KindBadOutput, errors.New("no output"))
	}
	if inst.outLen == 0 {
		return nil, nil
	}
	return inst.arena.mem[inst.outOff : inst.outOff+inst.outLen], nil
}

// exec calls fn with the guest's deadline budget from now.
//
// The guest runs on the instance's own goroutine, so that the caller gets
// its answer at the deadline whatever the guest is doing; a guest that has
// not stopped by then is abandoned: the instance is closed by its goroutine
// once the guest reaches its next deadline check.
func (inst *instance) exec(ctx context.Context, fn api.Function, budget time.Duration) *Error {
	p := inst.plugin
	if err := ctx.Err(); err != nil {
		return p.fail(KindCancelled, err)
	}
	inst.cc.Context = ctx
	inst.fn, inst.budget = fn, budget
	if p.onCallersGoroutine {
		inst.invokeRecovered()
		inst.cc.Context = nil
		inst.sealLogs()
		return inst.failure(inst.callErr, inst.stopErr)
	}
	inst.work <- struct{}{}
	inst.timer.Reset(budget + deadlineGrace)
	select {
	case <-inst.done:
		inst.timer.Stop()
	case <-inst.timer.C:
		inst.abandon()
		return p.fail(KindTimeout, fmt.Errorf("abandoned at the %v deadline", budget))
	case <-ctx.Done():
		inst.timer.Stop()
		inst.abandon()
		return p.fail(KindCancelled, ctx.Err())
	}
	inst.cc.Context = nil
	inst.sealLogs()
	return inst.failure(inst.callErr, inst.stopErr)
}

// serve runs the instance's calls until work is closed.
func (inst *instance) serve() {
	for range inst.work {
		inst.invokeRecovered()
		inst.done <- struct{}{}
	}
	if inst.abandoned.Load() {
		inst.closed.Store(true)
		_ = inst.mod.Close(context.Background())
		inst.plugin.retire()
	}
}

// invokeRecovered is invoke with a panic (wazero turns the guest's own
// into errors; this is for the host's and wazero's) made the call's error.
func (inst *instance) invokeRecovered() {
	defer func() {
		if r := recover(); r != nil {
			inst.callErr, inst.stopErr = fmt.Errorf("%w: %v", errPanic, r), nil
		}
	}()
	inst.invoke()
}

// invoke is one call on the instance's goroutine.
func (inst *instance) invoke() {
	w := sandbox.Watch(&inst.cc, inst.mod, inst.budget)
	err := inst.fn.CallWithStack(&inst.cc, inst.stack)
	inst.callErr, inst.stopErr = err, w.Stop()
}

// abandon gives up on a running call: the instance's goroutine closes it
// when the guest stops, and counts it out of the plugin then.
func (inst *instance) abandon() {
	inst.abandoned.Store(true)
	inst.sealLogs()
	close(inst.work)
}

// failure classifies how a call ended; nil when it returned normally.
func (inst *instance) failure(callErr, stopErr error) *Error {
	p := inst.plugin
	switch {
	case inst.stopping.Load():
		return p.fail(KindCancelled, ErrClosed)
	case errors.Is(stopErr, sandbox.ErrTimeout):
		return p.fail(KindTimeout, fmt.Errorf("stopped at the %v deadline", p.limits.Timeout))
	case errors.Is(stopErr, context.Canceled), errors.Is(stopErr, context.DeadlineExceeded):
		return p.fail(KindCancelled, stopErr)
	case stopErr != nil:
		// The instance cannot be stopped (not instrumented): never run it.
		return p.fail(KindLoad, stopErr)
	case callErr == nil:
		return nil
	}
	var kf *kernelFault
	if errors.As(callErr, &kf) {
		return p.fail(kf.kind, kf.err)
	}
	memory := inst.outOfMemory || inst.atMemoryCap()
	var exit *sys.ExitError
	if errors.As(callErr, &exit) {
		err := fmt.Errorf("exited with code %d", exit.ExitCode())
		if memory {
			return p.fail(KindMemory, fmt.Errorf("%w after running out of memory", err))
		}
		return p.fail(KindTrap, err)
	}
	err := &trapError{err: callErr}
	if memory {
		return p.fail(KindMemory, fmt.Errorf("%w at the %d-byte memory limit", err, p.limits.MemoryBytes))
	}
	return p.fail(KindTrap, err)
}

// atMemoryCap reports whether the plugin's memory cannot grow by another
// page: a trap there almost always follows a failed memory.grow. A module
// without linear memory is at its cap when its tables and the arena are.
func (inst *instance) atMemoryCap() bool {
	return inst.mod != nil && sandbox.MemoryInUse(inst.mod)+sandbox.WasmPageSize > inst.plugin.limits.MemoryBytes
}

// trapError shows the first line of a wazero error (the trap itself) and
// keeps the rest, the wasm stack trace, behind Unwrap.
type trapError struct{ err error }

func (e *trapError) Error() string {
	s := e.err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func (e *trapError) Unwrap() error { return e.err }

// log records one Extism log call.
func (inst *instance) log(level string, msg []byte) {
	if inst.warming || !inst.collectLogs && inst.plugin.logger == nil {
		return
	}
	inst.logMu.Lock()
	defer inst.logMu.Unlock()
	if inst.logsSealed {
		return
	}
	inst.logOpen = false
	inst.appendLog(level, msg)
}

// stream records a write to stdout or stderr, joining writes until a line
// ends so that one message is one log entry.
func (inst *instance) stream(level string, p []byte) {
	if len(p) == 0 || inst.warming || !inst.collectLogs && inst.plugin.logger == nil {
		return // an empty write (wasi-libc's fflush sends one) is no message
	}
	inst.logMu.Lock()
	defer inst.logMu.Unlock()
	if inst.logsSealed {
		return
	}
	if inst.logOpen && len(inst.logs) > 0 && inst.logs[len(inst.logs)-1].Level == level {
		room := inst.plugin.limits.MaxLogBytes - inst.logBytes
		take := min(len(p), max(room, 0))
		last := &inst.logs[len(inst.logs)-1]
		last.Message += string(p[:take])
		inst.logBytes += take
		inst.logDropped += len(p) - take
	} else {
		inst.appendLog(level, p)
	}
	inst.logOpen = len(p) > 0 && p[len(p)-1] != '\n'
}

// logEntryBytes is what an entry costs of Limits.MaxLogBytes besides its
// message: an entry is a Go value, a JSON object in eval's output, a record
// for the logger and a frame field behind the process wall, whatever its
// message, so empty messages cannot pile up for free (a plugin writing
// "\n" a million times). It bounds the entries of a call to
// MaxLogBytes/logEntryBytes (2,048 at the default).
const logEntryBytes = 32

// maxLogEntries bounds the entries of one call whatever MaxLogBytes.
const maxLogEntries = 1 << 16

// appendLog adds an entry; logMu is held.
func (inst *instance) appendLog(level string, msg []byte) {
	room := inst.plugin.limits.MaxLogBytes - inst.logBytes - logEntryBytes
	if room < 0 || room == 0 && len(msg) > 0 || len(inst.logs) >= maxLogEntries {
		inst.logDropped += len(msg)
		inst.logLost++
		return
	}
	take := min(len(msg), room)
	inst.logs = append(inst.logs, Log{Level: level, Message: string(msg[:take])})
	inst.logBytes += logEntryBytes + take
	inst.logDropped += len(msg) - take
}

// sealLogs ends the call's logs: later writes are dropped, the entries
// are tidied and handed to the plugin's logger.
func (inst *instance) sealLogs() {
	inst.logMu.Lock()
	defer inst.logMu.Unlock()
	inst.logsSealed = true
	for i := range inst.logs {
		l := &inst.logs[i]
		if l.Level == "stdout" || l.Level == "stderr" {
			l.Message = strings.TrimSuffix(l.Message, "\n")
		}
		l.Message = strings.ToValidUTF8(l.Message, "\uFFFD")
	}
	if inst.logDropped > 0 || inst.logLost > 0 {
		inst.logs = append(inst.logs, Log{Level: "warn",
			Message: fmt.Sprintf("permhost: %d more bytes of plugin logs, %d more entries, dropped at the %d-byte limit (an entry counts %d bytes besides its message)",
				inst.logDropped, inst.logLost, inst.plugin.limits.MaxLogBytes, logEntryBytes)})
	}
	if lg := inst.plugin.logger; lg != nil {
		for _, l := range inst.logs {
			lg.Debug("plugin log", "plugin", inst.plugin.name, "level", l.Level, "message", l.Message)
		}
	}
}
