package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/hostlink"
)

// Command is the hidden permhost subcommand that runs [Serve]: a child is
// started as `permhost plugin-worker`.
const Command = "plugin-worker"

var enabled atomic.Bool

// Enable declares that this program's binary runs [Serve] when started
// with the argument [Command]: permhost's main calls it, and a test binary
// that loads process-isolated plugins calls it in TestMain beside that
// dispatch. [Load] without an explicit Executable refuses to start a child
// otherwise: re-executing a binary that does not serve the protocol (the
// test binary of another package) would run something else entirely.
func Enable() { enabled.Store(true) }

// childCloseGrace bounds the child's own closing of its plugin once the
// parent has closed its stdin; the parent kills it a little later anyway.
const childCloseGrace = 200 * time.Millisecond

// Serve is the child's side: it loads the plugin the parent sends and
// answers its decisions until in ends, then closes the plugin and returns
// the exit status. in and out carry frames; errOut gets the child's
// diagnostics as slog JSON lines.
func Serve(ctx context.Context, in io.Reader, out io.Writer, errOut io.Writer) int {
	closeInherited()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(errOut, "permhost plugin-worker: "+format+"\n", args...)
		return 2
	}
	if !supported {
		return fail("%v", ErrUnsupported)
	}
	s := &server{out: out, calls: map[uint64]context.CancelFunc{}, hooks: hooksEnabled()}
	hello, _ := marshal(helloMsg{Protocol: protocolVersion})
	if err := s.send(frameHello, 0, hello); err != nil {
		return fail("hello: %v", err)
	}
	src := pollable(in)
	r := bufio.NewReaderSize(src, 64<<10)
	typ, _, payload, err := readFrame(r, func(byte) int { return maxLoadBytes })
	if err != nil || typ != frameLoad {
		return fail("want a load frame, got %q: %v", typ, err)
	}
	var lm loadMsg
	if err := json.Unmarshal(payload, &lm); err != nil {
		return fail("load frame: %v", err)
	}
	if lm.Protocol != protocolVersion {
		return fail("parent speaks protocol %d, this worker %d", lm.Protocol, protocolVersion)
	}
	if pr, ok := src.(*pollReader); ok && lm.PollFor > 0 {
		pr.pollFor = lm.PollFor // from now on: requests
	}
	// The host's notes (cache repairs, instances not made) go to stderr,
	// for the parent's log; the plugin's own logs travel in each answer,
	// so the host is not asked for them at debug level.
	opts := lm.options()
	opts.Logger = slog.New(slog.NewJSONHandler(errOut, &slog.HandlerOptions{Level: max(lm.LogLevel, slog.LevelInfo)}))
	// The guest runs on the goroutine that read its request, not handed to
	// the instance's own goroutine and back (two goroutine wake-ups per
	// call): the hard deadline that hand-off gives a caller in process is
	// the parent's here, which answers at the deadline and kills a child
	// still silent after its grace. The guest's own deadline checks
	// (sandbox.Watch) are unchanged. Set before Load, whose warm-up calls
	// run at once.
	opts.Trusted = true
	p, err := host.Load(ctx, opts)
	if err != nil {
		f := failureMsg{Kind: host.KindOf(err), Message: err.Error()}
		var he *host.Error
		if errors.As(err, &he) {
			f.Message = he.Err.Error()
		}
		b, _ := marshal(f)
		_ = s.send(frameFailed, 0, b)
		return 0
	}
	s.plugin = p
	ready, err := marshal(readyMsg{Name: p.Name(), SHA256: p.SHA256(), ABI: p.ABI(), Info: p.Info(), Limits: p.Limits(), ConfigProblems: p.ConfigProblems()})
	if err == nil {
		err = s.send(frameReady, 0, ready)
	}
	if err != nil {
		p.Close(ctx)
		return fail("ready: %v", err)
	}
	stopRetire := s.retireOnCPULimit()
	defer stopRetire()
	s.loop(ctx, r)
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), childCloseGrace)
	defer cancel()
	_ = p.Close(closeCtx)
	return 0
}

// pollable returns in as a file read through Go's poller when it is a
// pipe given as a blocking descriptor (as exec gives stdin): a read that
// blocks in the kernel keeps its thread's P, so the goroutine just started
// for a request would wait for the scheduler's monitor to take the P back
// (tens of microseconds to milliseconds); a read through the poller parks
// instead, and the call runs at once. The file is a [pollReader] that does
// not poll until the load frame says so.
func pollable(in io.Reader) io.Reader {
	f, ok := in.(*os.File)
	if !ok {
		return in
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return in
	}
	var fd uintptr
	var serr error
	if err := sc.Control(func(d uintptr) { fd, serr = d, syscall.SetNonblock(int(d), true) }); err != nil || serr != nil {
		return in
	}
	return newPollReader(os.NewFile(fd, f.Name()), 0)
}

type server struct {
	plugin *host.Plugin
	hooks  bool

	wmu sync.Mutex
	out io.Writer

	mu    sync.Mutex
	calls map[uint64]context.CancelFunc
	wg    sync.WaitGroup
}

func (s *server) send(typ byte, id uint64, payload []byte) error {
	b := appendFrame(make([]byte, 0, headerSize+len(payload)), typ, id, payload)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.out.Write(b)
	return err
}

// loop serves frames until stdin ends (the parent closed it, or died),
// then cancels the calls still running and waits for them.
//
// The goroutines that serve take turns reading: the one that reads a
// request hands the reading to an idle one (or a new one when all are
// busy) and runs the call itself, so that the call starts at once on the
// goroutine that is already running; a goroutine started per call instead
// put a scheduler hand-off, and a fresh stack grown through the host and
// wazero, on every decision's path.
func (s *server) loop(ctx context.Context, r *bufio.Reader) {
	ctx, cancelAll := context.WithCancel(ctx)
	rd := &reader{r: r, ended: make(chan struct{}), turn: make(chan struct{})}
	s.wg.Add(1)
	go s.serve(ctx, rd, true)
	<-rd.ended
	cancelAll()
	s.wg.Wait()
}

// reader is the state of the stdin stream, used by one goroutine at a
// time.
type reader struct {
	r     *bufio.Reader
	turn  chan struct{} // hands the reading to an idle goroutine
	ended chan struct{} // closed by the reader that meets the end
}

// decideMsg is a decide frame read: the options, and the request's JSON
// for the plugin.
type decideMsg struct {
	options []abi.Option
	input   []byte
}

// serve reads when it has the turn (reading says why it ends) and runs the
// calls it reads, until stdin ends.
func (s *server) serve(ctx context.Context, rd *reader, reading bool) {
	defer s.wg.Done()
	for {
		if !reading {
			select {
			case <-rd.turn:
			case <-rd.ended:
				return
			}
		}
		reading = false
		id, req, ok := s.next(rd)
		if !ok {
			close(rd.ended)
			return
		}
		select {
		case rd.turn <- struct{}{}:
		default:
			s.wg.Add(1)
			go s.serve(ctx, rd, true)
		}
		callCtx, cancel := context.WithCancel(ctx)
		s.mu.Lock()
		s.calls[id] = cancel
		s.mu.Unlock()
		if !(s.hooks && runHook(title(req.input))) {
			s.answer(id, hostlink.CallEncoded(callCtx, s.plugin, req.input, req.options).(host.Result))
		}
		s.done(id)
	}
}

// next reads frames until a request, handling cancels; false at the end
// of the stream (or a broken one: the parent sees the exit).
func (s *server) next(rd *reader) (uint64, decideMsg, bool) {
	for {
		typ, id, payload, err := readFrame(rd.r, func(byte) int { return maxParentSent })
		if err != nil {
			return 0, decideMsg{}, false
		}
		switch typ {
		case frameDecide:
			options, input, err := parseDecide(payload)
			if err != nil {
				return 0, decideMsg{}, false
			}
			return id, decideMsg{options: options, input: input}, true
		case frameCancel:
			s.done(id)
		default:
			return 0, decideMsg{}, false // the parent sends nothing else
		}
	}
}

// title is the tool call title of a request's JSON, for the test hooks
// only: nothing else in the child decodes the request.
func title(input []byte) string {
	var r struct {
		ToolCall struct {
			Title string `json:"title"`
		} `json:"toolCall"`
	}
	_ = json.Unmarshal(input, &r)
	return r.ToolCall.Title
}

func (s *server) done(id uint64) {
	s.mu.Lock()
	cancel := s.calls[id]
	delete(s.calls, id)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *server) answer(id uint64, r host.Result) {
	if r.Err == nil {
		if b, ok := appendAnswer(make([]byte, 0, 128), &r.Decision); ok {
			s.sendAnswer(id, r.Logs, b)
			return
		}
	}
	var a answerMsg
	if r.Err != nil {
		f := failureMsg{Kind: host.KindOf(r.Err), Message: r.Err.Error()}
		var he *host.Error
		if errors.As(r.Err, &he) {
			f.Message = he.Err.Error()
		}
		a.Failure = &f
	} else {
		a.Decision = &r.Decision
	}
	b, err := marshal(a)
	if err != nil {
		b, _ = marshal(answerMsg{Failure: &failureMsg{Kind: host.KindBadOutput, Message: "answer not encodable: " + err.Error()}})
	}
	s.sendAnswer(id, r.Logs, b)
}

// sendAnswer sends the logs, then the answer, in one write: adjacent on
// the pipe.
func (s *server) sendAnswer(id uint64, logs []host.Log, answer []byte) {
	var frames []byte
	if len(logs) > 0 {
		l := appendLogs(nil, logs)
		frames = appendFrame(make([]byte, 0, 2*headerSize+len(l)+len(answer)), frameLogs, id, l)
	} else {
		frames = make([]byte, 0, headerSize+len(answer))
	}
	frames = appendFrame(frames, frameAnswer, id, answer)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, _ = s.out.Write(frames)
}

// retireOnCPULimit asks the parent, once, to replace this child when the
// soft CPU limit's SIGXCPU arrives; the kernel kills it at the hard limit.
func (s *server) retireOnCPULimit() (stop func()) {
	if xcpu == nil {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, xcpu)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ch:
			b, _ := marshal(retireMsg{Reason: "CPU time limit reached"})
			_ = s.send(frameRetire, 0, b)
		case <-quit:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(quit)
		wg.Wait()
	}
}
