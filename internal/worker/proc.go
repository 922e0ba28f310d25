package worker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
)

// proc is one child process, from the parent's side: its pipes, the calls
// it has, and the goroutines that read its stdout and stderr and wait for
// its end.
type proc struct {
	p   *Plugin
	cmd *exec.Cmd
	pid int

	// addressSpace is the RLIMIT_AS set on it.
	addressSpace uint64

	stdin  *os.File // the parent's end; nonblocking, so writes take deadlines
	stdout *bufio.Reader
	stderr *stderrRelay
	wlock  chan struct{} // one writer at a time, acquired under a deadline
	// Owned by the writer: the frame being sent.
	frame []byte

	mu      sync.Mutex
	calls   map[uint64]*pending
	nextID  uint64
	exited  bool        // seen by waitExited: a zombie, safe to kill until reaped
	cause   error       // why the parent killed it, for the death message
	death   *host.Error // set before dead is closed
	closing bool        // the parent is ending it: not a crash

	dead     chan struct{} // closed once it has exited and its calls have failed
	done     chan struct{} // closed once it is reaped and every goroutine of it ended
	answered atomic.Bool   // it answered a call: a restart after it is not a crash loop
	retired  sync.Once
}

// pending is a call waiting for its answer.
type pending struct {
	options []abi.Option
	ch      chan host.Result // buffered: the answer, or the failure that ended the call
	overdue *time.Timer      // set once the caller gave up at the deadline
}

// spawn starts a child and completes the handshake: hello, limits, load,
// ready. On failure the child is gone.
func (p *Plugin) spawn(ctx context.Context) (*proc, *readyMsg, *host.Error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, p.fail(host.KindLoad, fmt.Errorf("worker pipes: %w", err))
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, p.fail(host.KindLoad, fmt.Errorf("worker pipes: %w", err))
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, nil, p.fail(host.KindLoad, fmt.Errorf("worker pipes: %w", err))
	}
	cmd := &exec.Cmd{
		Path: p.exe, Args: []string{"permhost", Command, p.name},
		Env: p.env, Dir: "/",
		Stdin: inR, Stdout: outW, Stderr: errW,
		SysProcAttr: sysProcAttr(),
	}
	err = start(cmd)
	// The child has its copies; the parent keeps only its own ends.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, nil, p.fail(host.KindLoad, fmt.Errorf("start plugin worker: %w", err))
	}
	c := &proc{p: p, cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: bufio.NewReaderSize(outR, 64<<10),
		wlock: make(chan struct{}, 1), calls: map[uint64]*pending{},
		dead: make(chan struct{}), done: make(chan struct{})}
	c.stderr = newStderrRelay(p.logger, "plugin", p.name, "pid", c.pid)
	if !p.track(c) { // closed meanwhile
		killGroup(c.pid)
		inW.Close()
		outR.Close()
		errR.Close()
		_ = cmd.Wait()
		released()
		return nil, nil, p.fail(host.KindCancelled, host.ErrClosed)
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		c.stderr.run(errR)
		errR.Close()
	}()
	handshake := make(chan *readyMsg, 1)
	handshakeErr := make(chan *host.Error, 1)
	readers.Add(1)
	go func() {
		defer readers.Done()
		c.readLoop(handshake, handshakeErr)
		outR.Close()
	}()
	go c.wait(&readers)

	// The whole start is bounded (Options.LoadTimeout): the host bounds its
	// own phases, this bounds a child that never gets that far.
	timer := time.NewTimer(p.loadBudget)
	defer timer.Stop()
	select {
	case r := <-handshake:
		return c, r, nil
	case e := <-handshakeErr:
		c.kill(nil)
		<-c.done
		return nil, nil, e
	case <-c.dead:
		<-c.done
		// Dying before it is ready is failing to load.
		return nil, nil, p.fail(host.KindLoad, c.death.Err)
	case <-timer.C:
		c.kill(fmt.Errorf("not ready within %v", p.loadBudget))
		<-c.done
		return nil, nil, p.fail(host.KindLoad, fmt.Errorf("%w: not ready within %v", ErrCrashed, p.loadBudget))
	case <-ctx.Done():
		c.kill(ctx.Err())
		<-c.done
		return nil, nil, p.fail(host.KindCancelled, ctx.Err())
	}
}

// readLoop reads the child's frames: the handshake, then answers.
func (c *proc) readLoop(ready chan<- *readyMsg, failed chan<- *host.Error) {
	p := c.p
	maxAnswer := maxAnswerBytes(p.limits)
	limit := func(typ byte) int {
		switch typ {
		case frameHello:
			return maxHelloBytes
		case frameReady, frameFailed, frameRetire:
			return maxReadyBytes
		case frameAnswer, frameLogs:
			return maxAnswer
		}
		return 0
	}
	protocol := func(format string, args ...any) {
		c.kill(fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...)))
	}
	// Handshake.
	typ, _, payload, err := readFrame(c.stdout, limit)
	var hello helloMsg
	switch {
	case err != nil:
		c.kill(nil) // it died or closed stdout; wait reports how
		return
	case typ != frameHello:
		protocol("want hello, got frame %q", typ)
		return
	case decodeStrict(payload, &hello, "protocol") != nil || hello.Protocol != protocolVersion:
		protocol("hello %.100q: want protocol %d", payload, protocolVersion)
		return
	}
	if err := c.limit(); err != nil {
		failed <- p.fail(host.KindLoad, err)
		return
	}
	load, err := marshal(p.loadMsg)
	if err == nil {
		err = c.write(frameLoad, 0, load, time.Now().Add(p.loadBudget))
	}
	if err != nil {
		c.kill(nil)
		return
	}
	typ, _, payload, err = readFrame(c.stdout, limit)
	switch {
	case err != nil:
		c.kill(nil)
		return
	case typ == frameFailed:
		var f failureMsg
		if err := decodeStrict(payload, &f, "kind", "message"); err != nil || !knownKinds[f.Kind] {
			protocol("failed frame %.200q", payload)
			return
		}
		failed <- p.fail(f.Kind, &remoteError{f.Message})
		return
	case typ != frameReady:
		protocol("want ready, got frame %q", typ)
		return
	}
	var r readyMsg
	if err := decodeStrict(payload, &r, "name", "sha256", "abi", "info", "limits", "configProblems"); err != nil {
		protocol("ready frame: %v", err)
		return
	}
	ready <- &r

	var (
		logsOf uint64 // the call the logs below are for, from the frame before its answer
		logs   []host.Log
		big    *tooLargeError
	)
	for {
		typ, id, payload, err := readFrame(c.stdout, limit)
		var tl *tooLargeError
		switch {
		case errors.As(err, &tl) && typ == frameLogs:
			big, logsOf, logs = tl, id, nil
			continue
		case errors.As(err, &tl) && typ == frameAnswer:
			c.finish(id, host.Result{Err: p.fail(host.KindOutputTooLarge,
				fmt.Errorf("answer of %d bytes exceeds the worker's bound of %d", tl.size, tl.max))})
			continue
		case err != nil:
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: %v", ErrProtocol, err)
			} else {
				err = nil
			}
			c.kill(err)
			return
		}
		switch typ {
		case frameLogs:
			big, logsOf, logs = nil, id, nil
			if c.waiting(id) { // nobody reads the logs of a call given up on
				if logs, err = parseLogs(payload); err != nil {
					c.kill(err)
					return
				}
			}
		case frameAnswer:
			c.answered.Store(true) // alive and speaking: not a crash loop
			if !c.waiting(id) {
				c.finish(id, host.Result{}) // late: stops the stuck timer, nothing to decode
				continue
			}
			r := c.decodeAnswer(id, payload)
			if logsOf == id {
				r.Logs = logs
				if big != nil && r.Err == nil {
					r = host.Result{Err: p.fail(host.KindOutputTooLarge,
						fmt.Errorf("logs of %d bytes exceed the worker's bound of %d", big.size, big.max))}
				}
			}
			logsOf, logs, big = 0, nil, nil
			c.finish(id, r)
		case frameRetire:
			var m retireMsg
			if decodeStrict(payload, &m, "reason") != nil {
				protocol("retire frame %.200q", payload)
				return
			}
			c.retired.Do(func() { p.retire(c) })
		default:
			protocol("unexpected frame %q", typ)
			return
		}
	}
}

// limit measures the idle child and sets its rlimits before it reads any
// plugin: its address space is what the Go runtime and permhost already
// reserved plus the plugin's budget (see Plugin.addressBudget).
func (c *proc) limit() error {
	p := c.p
	as := p.addressSpace
	if as == 0 {
		base, err := vmSize(c.pid)
		if err != nil {
			return fmt.Errorf("measure plugin worker: %w", err)
		}
		as = base + p.addressBudget
	}
	c.addressSpace = as
	soft := uint64((p.cpuTime + time.Second - 1) / time.Second)
	if err := setLimits(c.pid, as, soft, soft+uint64(cpuHardMargin/time.Second)); err != nil {
		return fmt.Errorf("limit plugin worker: %w", err)
	}
	return nil
}

// decodeAnswer checks an answer as coming from an untrusted peer: strict
// JSON, a known kind, a decision valid for the offered options.
func (c *proc) decodeAnswer(id uint64, payload []byte) host.Result {
	p := c.p
	a, err := decodeAnswerMsg(payload)
	if err != nil {
		return c.broken(fmt.Errorf("answer: %v", err))
	}
	c.mu.Lock()
	call := c.calls[id]
	c.mu.Unlock()
	if call == nil {
		return host.Result{} // finish drops it
	}
	switch {
	case (a.Decision == nil) == (a.Failure == nil):
		return c.broken(errors.New("answer with both or neither of decision and failure"))
	case a.Failure != nil:
		if !knownKinds[a.Failure.Kind] {
			return c.broken(fmt.Errorf("unknown failure kind %q", a.Failure.Kind))
		}
		a.Failure.Message = strings.ToValidUTF8(a.Failure.Message, "\uFFFD")
		if a.Failure.Kind == host.KindCancelled {
			// The parent had not cancelled it (a cancelled call is no longer
			// pending): the child gave up on its own.
			return c.broken(fmt.Errorf("the worker cancelled a call unasked: %s", a.Failure.Message))
		}
		return host.Result{Err: p.fail(a.Failure.Kind, &remoteError{a.Failure.Message})}
	}
	if err := a.Decision.Validate(call.options); err != nil {
		return c.broken(fmt.Errorf("decision the host would not have passed: %v", err))
	}
	return host.Result{Decision: *a.Decision}
}

// waiting reports whether call id waits for its answer: pending, and its
// caller not gone at the deadline.
func (c *proc) waiting(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	call := c.calls[id]
	return call != nil && call.overdue == nil
}

// broken kills a child that sent a malformed answer and fails the call.
func (c *proc) broken(err error) host.Result {
	err = fmt.Errorf("%w: %v", ErrProtocol, err)
	c.kill(err)
	return host.Result{Err: c.p.fail(host.KindTrap, err)}
}

// finish hands call id its result; a call no longer pending (cancelled) or
// overdue (its caller gave up at the deadline) drops it: an overdue call
// answered in the grace shows the child is not stuck.
func (c *proc) finish(id uint64, r host.Result) {
	c.mu.Lock()
	call := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if call == nil {
		return
	}
	if call.overdue != nil {
		call.overdue.Stop()
		return
	}
	call.ch <- r
}

// lockWrite makes the caller the one writer until unlock, waiting for
// that until deadline at most.
func (c *proc) lockWrite(deadline time.Time) (unlock func(), err error) {
	select {
	case c.wlock <- struct{}{}: // free, as it nearly always is: no timer
		return c.unlockWrite, nil
	default:
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case c.wlock <- struct{}{}:
		return c.unlockWrite, nil
	case <-timer.C:
		return nil, os.ErrDeadlineExceeded
	case <-c.dead:
		return nil, ErrCrashed
	}
}

func (c *proc) unlockWrite() { <-c.wlock }

// writeLocked sends one frame, giving up at deadline. A frame cut short
// breaks the stream: the child is killed then.
func (c *proc) writeLocked(typ byte, id uint64, payload []byte, deadline time.Time) error {
	c.frame = appendFrame(c.frame[:0], typ, id, payload)
	if cap(c.frame) > 1<<20 {
		defer func() { c.frame = nil }()
	}
	_ = c.stdin.SetWriteDeadline(deadline)
	n, err := c.stdin.Write(c.frame)
	if err != nil && n > 0 {
		c.kill(fmt.Errorf("%w: a frame was cut short: %v", ErrStuck, err))
	}
	return err
}

// write sends one frame under the writer's lock.
func (c *proc) write(typ byte, id uint64, payload []byte, deadline time.Time) error {
	unlock, err := c.lockWrite(deadline)
	if err != nil {
		return err
	}
	defer unlock()
	return c.writeLocked(typ, id, payload, deadline)
}

// sendRequest sends req as call id: its options and its JSON as the host
// would give it to the plugin (appendDecide), which the child's host hands
// to the plugin as they are. A request that cannot be encoded is an
// *encodeError, and nothing is sent; whatever else fails leaves the
// stream unknown to the child: it is killed.
func (c *proc) sendRequest(id uint64, req *abi.Request, deadline time.Time) error {
	unlock, err := c.lockWrite(deadline)
	if err != nil {
		return err
	}
	defer unlock()
	// The frame is built in place: the header, then the payload, whose
	// length is known once it is encoded.
	frame := appendFrame(c.frame[:0], frameDecide, id, nil)
	frame, err = appendDecide(frame, req)
	if cap(frame) <= 1<<20 {
		c.frame = frame
	}
	if err != nil {
		return &encodeError{err}
	}
	binary.BigEndian.PutUint32(frame[0:4], uint32(len(frame)-headerSize))
	_ = c.stdin.SetWriteDeadline(deadline)
	if n, err := c.stdin.Write(frame); err != nil {
		cause := fmt.Errorf("%w: writing a request: %v", ErrStuck, err)
		if n > 0 {
			cause = fmt.Errorf("%w: a frame was cut short: %v", ErrStuck, err)
		}
		c.kill(cause)
		return err
	}
	return nil
}

// encodeError is a request that could not be encoded (an invalid raw
// JSON member): the host fails such a request before calling the plugin.
type encodeError struct{ err error }

func (e *encodeError) Error() string { return e.err.Error() }
func (e *encodeError) Unwrap() error { return e.err }

// decide sends a request and waits for its answer until deadline.
func (c *proc) decide(ctx context.Context, req *abi.Request, deadline time.Time) host.Result {
	p := c.p
	call := &pending{options: req.Options, ch: make(chan host.Result, 1)}
	c.mu.Lock()
	if c.death != nil {
		c.mu.Unlock()
		return host.Result{Err: c.death}
	}
	c.nextID++
	id := c.nextID
	c.calls[id] = call
	c.mu.Unlock()

	timeout := func() host.Result {
		return host.Result{Err: p.fail(host.KindTimeout, fmt.Errorf("no answer from the plugin worker within the %v deadline", p.limits.Timeout))}
	}
	if err := c.sendRequest(id, req, deadline); err != nil {
		c.mu.Lock()
		delete(c.calls, id)
		death := c.death
		c.mu.Unlock()
		var ee *encodeError
		switch {
		case errors.As(err, &ee):
			// As the host in process says it.
			return host.Result{Err: p.fail(host.KindInputTooLarge, fmt.Errorf("encode request: %w", ee.err))}
		case death != nil:
			return host.Result{Err: death}
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Not even reading its stdin: stuck (and killed).
			return timeout()
		}
		// Its pipe broke: it is dying (sendRequest made sure). Its death
		// says why better than the pipe, if it comes by the deadline.
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-c.dead:
			return host.Result{Err: c.death}
		case <-t.C:
			return timeout()
		}
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case r := <-call.ch:
		return r
	case <-ctx.Done():
		c.mu.Lock()
		_, still := c.calls[id]
		delete(c.calls, id)
		c.mu.Unlock()
		if !still { // answered or failed just now
			return <-call.ch
		}
		c.cancel(id)
		return host.Result{Err: p.fail(host.KindCancelled, ctx.Err())}
	case <-timer.C:
		c.mu.Lock()
		if _, still := c.calls[id]; !still {
			c.mu.Unlock()
			return <-call.ch
		}
		// The answer is the fallback's now; the child gets a grace to
		// answer all the same (its own deadline stops the guest), after
		// which it is taken for stuck and killed.
		call.overdue = time.AfterFunc(stuckGrace, func() {
			c.mu.Lock()
			_, still := c.calls[id]
			c.mu.Unlock()
			if still {
				c.kill(fmt.Errorf("%w: no answer %v after the %v deadline", ErrStuck, stuckGrace, p.limits.Timeout))
			}
		})
		c.mu.Unlock()
		return timeout()
	}
}

// cancel tells the child to stop call id, in the background: the caller
// does not wait for the write.
func (c *proc) cancel(id uint64) {
	c.p.goBG(func() { _ = c.write(frameCancel, id, nil, time.Now().Add(stuckGrace)) })
}

// kill ends the child (its process group) unless it has exited already;
// cause, when not nil, is why, for the death message.
func (c *proc) kill(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause == nil && cause != nil {
		c.cause = cause
	}
	if !c.exited {
		killGroup(c.pid)
	}
}

// drain waits, at most max, until the child has no call in flight: one
// being replaced finishes what it was given.
func (c *proc) drain(max time.Duration) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	end := time.After(max)
	for {
		c.mu.Lock()
		n := len(c.calls)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-t.C:
		case <-end:
			return
		case <-c.dead:
			return
		}
	}
}

// shutdown asks the child to end (EOF on its stdin) and kills it after
// grace; calls still in flight fail at once with kind cancelled.
func (c *proc) shutdown(grace time.Duration) {
	c.mu.Lock()
	c.closing = true
	calls := c.calls
	c.calls = map[uint64]*pending{}
	c.mu.Unlock()
	for _, call := range calls {
		if call.overdue != nil {
			call.overdue.Stop()
			continue
		}
		call.ch <- host.Result{Err: c.p.fail(host.KindCancelled, host.ErrClosed)}
	}
	c.wlock <- struct{}{} // no frame is cut by the close
	c.stdin.Close()
	<-c.wlock
	select {
	case <-c.dead:
	case <-time.After(grace):
		c.kill(nil)
	}
}

// wait waits for the child's exit, fails its calls, reaps it, and tells
// the plugin.
func (c *proc) wait(readers *sync.WaitGroup) {
	waitExited(c.pid)
	c.mu.Lock()
	c.exited = true
	killGroup(c.pid) // anything it started goes with it (the group lives while the zombie does)
	c.mu.Unlock()
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()
	select {
	case <-readersDone: // its last words are read
	case <-time.After(time.Second):
		// Something else holds its pipes (a grandchild that left the
		// group); do not wait for it.
		c.stdin.Close()
	}
	err := c.cmd.Wait()
	released()

	c.mu.Lock()
	closing := c.closing
	var e *host.Error
	switch {
	case closing:
		e = c.p.fail(host.KindCancelled, host.ErrClosed)
	default:
		e = c.deathError(err)
	}
	c.death = e
	calls := c.calls
	c.calls = map[uint64]*pending{}
	c.mu.Unlock()
	// The plugin stops sending it calls before its callers hear of its
	// death: the next call fails fast (restarting), not with this death.
	c.p.lost(c)
	close(c.dead)
	for _, call := range calls {
		if call.overdue != nil {
			call.overdue.Stop()
			continue
		}
		call.ch <- host.Result{Err: e}
	}
	<-readersDone
	c.stdin.Close()
	close(c.done)
	c.p.bg.Done() // counted in by track
}

// deathError describes how the child ended; c.mu is held. It wraps
// ErrCrashed and, when the parent killed it, why (ErrStuck, ErrProtocol).
func (c *proc) deathError(waitErr error) *host.Error {
	how := "exited"
	if waitErr != nil {
		how = waitErr.Error() // "signal: killed", "exit status 2"
	}
	var err error
	if c.cause != nil {
		err = fmt.Errorf("%w: %s (pid %d): %w", ErrCrashed, how, c.pid, c.cause)
	} else {
		err = fmt.Errorf("%w: %s (pid %d)", ErrCrashed, how, c.pid)
	}
	if last := c.stderr.last(); last != "" {
		err = fmt.Errorf("%w: %s", err, last)
	}
	kind := host.KindTrap
	if c.stderr.outOfMemory() {
		kind = host.KindMemory
	}
	return c.p.fail(kind, err)
}

func (c *proc) String() string { return "plugin worker " + strconv.Itoa(c.pid) }
