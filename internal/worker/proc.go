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
	// rfile is the parent's end of stdout, under stdout; nonblocking, so
	// reads take deadlines.
	rfile  *os.File
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

	// The child's stdout is read by one goroutine at a time, the reader
	// (c.mu): while one call is in flight, its caller reads its own answer
	// (a goroutine wake-up less than a reader handing it over); with more,
	// or once the reading caller has gone, the background reader reads
	// until no call is left; with none, nobody reads (frames wait in the
	// pipe), until the child exits, when the background reader reads its
	// last words to the end.
	reader    readerRole
	frames    frameReader
	rstate    readState
	bgTurn    chan struct{} // hands the reading to the background reader
	gone      chan struct{} // closed once the child has exited
	draining  bool          // exited: the background reader reads to the end
	readEnded bool          // a read failed: the stream is unusable

	dead     chan struct{} // closed once it has exited and its calls have failed
	done     chan struct{} // closed once it is reaped and every goroutine of it ended
	answered atomic.Bool   // it answered a call: a restart after it is not a crash loop
	retired  sync.Once
}

// readerRole is who reads the child's stdout.
type readerRole int

const (
	readerNone readerRole = iota
	readerCaller
	readerBackground
)

// readState is what the reader carries from one frame to the next: the
// logs frame that comes just before its call's answer.
type readState struct {
	logsOf uint64 // the call the logs below are for
	logs   []host.Log
	big    *tooLargeError // the logs frame was over the bound
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
	c := &proc{p: p, cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: bufio.NewReaderSize(newPollReader(outR, p.pollFor), 64<<10), rfile: outR,
		wlock: make(chan struct{}, 1), calls: map[uint64]*pending{},
		reader: readerBackground, bgTurn: make(chan struct{}, 1), gone: make(chan struct{}),
		dead: make(chan struct{}), done: make(chan struct{})}
	c.frames = frameReader{r: c.stdout, maxFor: c.frameLimit}
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

// frameLimit is the bound on a frame of type typ from the child.
func (c *proc) frameLimit(typ byte) int {
	switch typ {
	case frameHello:
		return maxHelloBytes
	case frameReady, frameFailed, frameRetire:
		return maxReadyBytes
	case frameAnswer, frameLogs:
		return maxAnswerBytes(c.p.limits)
	}
	return 0
}

// readLoop reads the child's frames: the handshake, then, as the
// background reader, answers when it has the reading (see proc.reader).
func (c *proc) readLoop(ready chan<- *readyMsg, failed chan<- *host.Error) {
	p := c.p
	limit := c.frameLimit
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
	c.mu.Lock()
	c.reader = readerNone // no call yet: the first reads its own answer
	c.mu.Unlock()
	ready <- &r
	c.readInBackground()
}

// readInBackground is the background reader: it reads when handed the
// reading, until no call is left, and once the child has exited reads
// what it said to the end.
func (c *proc) readInBackground() {
	for {
		select {
		case <-c.bgTurn:
		case <-c.gone:
			c.mu.Lock()
			c.draining = true
			mine := c.reader == readerNone
			if mine {
				c.reader = readerBackground
			}
			c.mu.Unlock()
			if !mine {
				<-c.bgTurn // from the caller reading, once it stops
			}
		}
		c.mu.Lock()
		ended := c.readEnded
		if ended && !c.draining {
			c.reader = readerNone // killed: wait for the exit
		}
		draining := c.draining
		c.mu.Unlock()
		if ended {
			if draining {
				return
			}
			continue
		}
		_ = c.rfile.SetReadDeadline(time.Time{})
		for {
			more, cut := c.readOne()
			if !more {
				return
			}
			if cut { // woken for a reading caller that had just gone
				_ = c.rfile.SetReadDeadline(time.Time{})
			}
			c.mu.Lock()
			idle := len(c.calls) == 0 && !c.draining
			if idle {
				c.reader = readerNone
			}
			c.mu.Unlock()
			if idle {
				break
			}
		}
	}
}

// readOne reads one frame and acts on it; more is false when the stream
// ended or broke (the child is killed then). A read cut by the read
// deadline (cut) reads nothing: the frame goes on at the next call.
func (c *proc) readOne() (more, cut bool) {
	p := c.p
	st := &c.rstate
	typ, id, payload, err := c.frames.next()
	var tl *tooLargeError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return true, true
	case errors.As(err, &tl) && typ == frameLogs:
		st.big, st.logsOf, st.logs = tl, id, nil
		return true, false
	case errors.As(err, &tl) && typ == frameAnswer:
		c.finish(id, host.Result{Err: p.fail(host.KindOutputTooLarge,
			fmt.Errorf("answer of %d bytes exceeds the worker's bound of %d", tl.size, tl.max))})
		return true, false
	case err != nil:
		if !errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %v", ErrProtocol, err)
		} else {
			err = nil
		}
		return c.endReading(err), false
	}
	switch typ {
	case frameLogs:
		st.big, st.logsOf, st.logs = nil, id, nil
		if c.waiting(id) { // nobody reads the logs of a call given up on
			if st.logs, err = parseLogs(payload); err != nil {
				return c.endReading(err), false
			}
		}
	case frameAnswer:
		c.answered.Store(true) // alive and speaking: not a crash loop
		if !c.waiting(id) {
			c.finish(id, host.Result{}) // late: stops the stuck timer, nothing to decode
			return true, false
		}
		r := c.decodeAnswer(id, payload)
		if st.logsOf == id {
			r.Logs = st.logs
			if st.big != nil && r.Err == nil {
				r = host.Result{Err: p.fail(host.KindOutputTooLarge,
					fmt.Errorf("logs of %d bytes exceed the worker's bound of %d", st.big.size, st.big.max))}
			}
		}
		st.logsOf, st.logs, st.big = 0, nil, nil
		c.finish(id, r)
	case frameRetire:
		var m retireMsg
		if decodeStrict(payload, &m, "reason") != nil {
			return c.endReading(fmt.Errorf("%w: retire frame %.200q", ErrProtocol, payload)), false
		}
		c.retired.Do(func() { p.retire(c) })
	default:
		return c.endReading(fmt.Errorf("%w: unexpected frame %q", ErrProtocol, typ)), false
	}
	return true, false
}

// endReading marks the stream unusable and kills the child (cause, when
// not nil, says why); false, for readOne.
func (c *proc) endReading(cause error) bool {
	c.mu.Lock()
	c.readEnded = true
	c.mu.Unlock()
	c.kill(cause)
	return false
}

// releaseReading gives up the reading a caller had: to the background
// reader while calls are left (or the child's last words), else to the
// next caller.
func (c *proc) releaseReading() {
	c.mu.Lock()
	handOff := c.draining || (!c.readEnded && len(c.calls) > 0)
	if handOff {
		c.reader = readerBackground
	} else {
		c.reader = readerNone
	}
	c.mu.Unlock()
	if handOff {
		c.bgTurn <- struct{}{}
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
	reads := c.reader == readerNone && !c.draining && !c.readEnded
	if reads {
		c.reader = readerCaller
	}
	c.mu.Unlock()

	if err := c.sendRequest(id, req, deadline); err != nil {
		c.mu.Lock()
		delete(c.calls, id)
		death := c.death
		c.mu.Unlock()
		if reads {
			c.releaseReading()
		}
		var ee *encodeError
		switch {
		case errors.As(err, &ee):
			// As the host in process says it.
			return host.Result{Err: p.fail(host.KindInputTooLarge, fmt.Errorf("encode request: %w", ee.err))}
		case death != nil:
			return host.Result{Err: death}
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Not even reading its stdin: stuck (and killed).
			return c.timeout()
		}
		// Its pipe broke: it is dying (sendRequest made sure). Its death
		// says why better than the pipe, if it comes by the deadline.
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-c.dead:
			return host.Result{Err: c.death}
		case <-t.C:
			return c.timeout()
		}
	}
	if reads {
		if r, ok := c.readOwn(ctx, call, deadline); ok {
			return r
		}
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case r := <-call.ch:
		return r
	case <-ctx.Done():
		return c.cancelCall(ctx, id, call)
	case <-timer.C:
		return c.timeOut(id, call)
	}
}

// readOwn reads the child's frames until call's own answer, giving up at
// deadline or when ctx ends, then hands the reading on; false when the
// stream ended first (the child's death will fail the call).
func (c *proc) readOwn(ctx context.Context, call *pending, deadline time.Time) (host.Result, bool) {
	_ = c.rfile.SetReadDeadline(deadline)
	stop := func() bool { return true }
	var stopped chan struct{}
	if ctx.Done() != nil {
		// A read deadline in the past wakes the read now.
		stopped = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			_ = c.rfile.SetReadDeadline(time.Unix(1, 0))
			close(stopped)
		})
	}
	defer func() {
		if !stop() {
			<-stopped // it set its deadline: before the next reader sets one
		}
		c.releaseReading()
	}()
	for {
		select {
		case r := <-call.ch:
			return r, true
		default:
		}
		more, cut := c.readOne()
		if !more {
			return host.Result{}, false
		}
		if cut {
			select {
			case r := <-call.ch: // failed by the child's death or Close (wakeReader)
				return r, true
			default:
			}
			if ctx.Err() != nil || !time.Now().Before(deadline) {
				return host.Result{}, false
			}
			_ = c.rfile.SetReadDeadline(deadline) // woken for nothing: another caller's wakeReader
		}
	}
}

// wakeReader wakes a caller reading its own answer, whose call was just
// failed by someone else (the child's death, Close): its read ends at once
// and it finds the failure.
func (c *proc) wakeReader() {
	c.mu.Lock()
	reading := c.reader == readerCaller
	c.mu.Unlock()
	if reading {
		_ = c.rfile.SetReadDeadline(time.Unix(1, 0))
	}
}

// cancelCall ends call id, whose ctx ended, with kind cancelled (unless it
// was answered or failed just now) and tells the child.
func (c *proc) cancelCall(ctx context.Context, id uint64, call *pending) host.Result {
	c.mu.Lock()
	_, still := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if !still { // answered or failed just now
		return <-call.ch
	}
	c.cancel(id)
	return host.Result{Err: c.p.fail(host.KindCancelled, ctx.Err())}
}

// timeOut ends call id at its deadline with kind timeout (unless it was
// answered or failed just now).
func (c *proc) timeOut(id uint64, call *pending) host.Result {
	p := c.p
	c.mu.Lock()
	if _, still := c.calls[id]; !still {
		c.mu.Unlock()
		return <-call.ch
	}
	// The answer is the fallback's now; the child gets a grace to answer
	// all the same (its own deadline stops the guest), after which it is
	// taken for stuck and killed.
	call.overdue = time.AfterFunc(stuckGrace, func() {
		c.mu.Lock()
		_, still := c.calls[id]
		c.mu.Unlock()
		if still {
			c.kill(fmt.Errorf("%w: no answer %v after the %v deadline", ErrStuck, stuckGrace, p.limits.Timeout))
		}
	})
	c.mu.Unlock()
	return c.timeout()
}

// timeout is the failure of a call the child did not answer in time.
func (c *proc) timeout() host.Result {
	return host.Result{Err: c.p.fail(host.KindTimeout, fmt.Errorf("no answer from the plugin worker within the %v deadline", c.p.limits.Timeout))}
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
	c.wakeReader()
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
	close(c.gone) // the background reader reads its last words
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
	c.wakeReader()
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
