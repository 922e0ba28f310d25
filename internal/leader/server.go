package leader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
)

// writeTimeout bounds one write to a peer, so that a worker that stops
// reading cannot hold up the leader.
const writeTimeout = 5 * time.Second

// Prompt is one request put to the person.
type Prompt struct {
	// Seq numbers requests in arrival order, from 1.
	Seq     uint64
	Worker  Worker
	Request abi.Request
	// Options are the options the person may choose, in the agent's order.
	Options []abi.Option
	// Explanations are the worker's plugins' and then the leader's.
	Explanations []Explanation
	// Reason is why the worker's plugins could not decide.
	Reason string
	// Deadline is when the worker stops waiting; zero when it did not say.
	Deadline time.Time
	// Waiting counts the other requests queued behind this one when it was
	// shown; WaitingNow counts them now (more may arrive while it is up).
	Waiting    int
	WaitingNow func() int
	// Ready is false while the leader's plugins still decide: only a
	// ready request may be answered. Arrived is when it was queued.
	Ready   bool
	Arrived time.Time
}

// Prompter puts a request to the person.
type Prompter interface {
	// Ask shows p and returns the id of the option the person chose, or ""
	// when the person declined to choose (the worker is answered
	// cancelled). ctx is cancelled when the worker withdraws the request or
	// the leader closes: Ask must then retract the prompt and return.
	Ask(ctx context.Context, p Prompt) (optionID string, err error)
}

// PrompterFunc adapts a function to Prompter.
type PrompterFunc func(ctx context.Context, p Prompt) (string, error)

// Ask calls f.
func (f PrompterFunc) Ask(ctx context.Context, p Prompt) (string, error) { return f(ctx, p) }

// Verdict is what the leader's own plugins made of a question.
type Verdict struct {
	// Decided answers the worker without a person: OptionID, or cancelled
	// when OptionID is "". An OptionID the person could not have chosen is
	// not an answer: the question then goes to the person.
	Decided   bool
	OptionID  string
	DecidedBy string
	Reason    string
	// Explanations are shown with the question.
	Explanations []Explanation
	// Shown, when not nil, narrows the options the person may choose to
	// these ids (the leader's fallback removing durable options).
	Shown []string
	// Detail is handed back in the Record, for the decision log.
	Detail any
}

// Decider runs the leader's own plugins on a question.
type Decider func(ctx context.Context, q Question) Verdict

// Outcomes of a Record besides OutcomeSelected and OutcomeCancelled.
const (
	// OutcomeWithdrawn: the worker withdrew the request or went away.
	OutcomeWithdrawn = "withdrawn"
	// OutcomeUndecided: nobody could answer; the worker was told to fall
	// back (CodeUndecided), or the leader closed first.
	OutcomeUndecided = "undecided"
)

// Record says how one request ended, for the leader's decision log.
type Record struct {
	Seq      uint64
	Question Question
	// Shown are the options the person could choose.
	Shown []abi.Option
	// Outcome is selected, cancelled, withdrawn or undecided.
	Outcome  string
	OptionID string
	// DecidedBy is "person", the leader's plugin that decided, or "" when
	// nobody did.
	DecidedBy string
	Reason    string
	// Prompted is true when the request was shown to the person.
	Prompted bool
	// Answer is what the person answered: an option id, "cancelled",
	// "withdrawn", or "" when not prompted. Refused marks an answer that
	// named an option not shown: it was not sent.
	Answer  string
	Refused bool
	// By names where the person answered ("terminal", "web:…"); Said is
	// what the person typed with the answer.
	By      string
	Said    string
	Arrived time.Time
	Ended   time.Time
	Detail  any
}

// Options configure a Server.
type Options struct {
	// Socket is the path of the Unix socket; its directory must be private
	// to the user (it is created 0700 when missing).
	Socket string
	// Prompter asks the person; required.
	Prompter Prompter
	// Decide runs the leader's plugins first; nil sends every question to
	// the person.
	Decide Decider
	// OnDecision, when set, is called once for every request that ended,
	// one call at a time.
	OnDecision func(Record)
	// Logger receives diagnostics (refused connections, withdrawals);
	// nil discards them.
	Logger *slog.Logger
}

// Server is a listening leader. Create it with Listen; the creator calls
// Close.
type Server struct {
	opts   Options
	log    *slog.Logger
	path   string
	uid    int
	leader Leader
	l      *net.UnixListener
	lock   *os.File
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	recMu  sync.Mutex

	mu      sync.Mutex
	queue   []*item // arrival order
	conns   map[*peer]struct{}
	seq     uint64
	changed chan struct{} // closed and replaced on every change of queue
	closed  bool

	closeOnce sync.Once
	closeErr  error
}

// peer is one worker connection.
type peer struct {
	c       *net.UnixConn
	pid     int
	wmu     sync.Mutex
	pending map[string]*item // guarded by Server.mu
}

// item is one request from its arrival to its end.
type item struct {
	seq     uint64
	peer    *peer
	id      string
	q       Question
	shown   []abi.Option
	expl    []Explanation
	arrived time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	detail  any
	// guarded by Server.mu
	ready   bool // the leader's plugins left it to the person
	showing bool
	done    bool
}

// Listen validates opts, creates the socket and starts serving.
func Listen(ctx context.Context, opts Options) (*Server, error) {
	if opts.Prompter == nil {
		return nil, errors.New("leader: Options.Prompter is required")
	}
	if err := checkSocketPath(opts.Socket); err != nil {
		return nil, err
	}
	path, err := filepath.Abs(opts.Socket)
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	l, lock, err := listen(ctx, path)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, path: path, uid: os.Getuid(),
		leader: Leader{PID: os.Getpid(), Socket: path}, l: l, lock: lock,
		conns: map[*peer]struct{}{}, changed: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.wg.Add(2)
	go s.acceptLoop()
	go s.promptLoop()
	return s, nil
}

// Socket is the absolute path the server listens on.
func (s *Server) Socket() string { return s.path }

// Queued reports the requests waiting, in arrival order: the one being
// shown first. It is meant for status displays and tests.
func (s *Server) Queued() []Prompt {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Prompt, 0, len(s.queue))
	for i, it := range s.queue {
		out = append(out, it.prompt(len(s.queue)-1-i))
	}
	return out
}

// waitingBehind counts the requests queued behind the one shown.
func (s *Server) waitingBehind() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(len(s.queue)-1, 0)
}

func (it *item) prompt(waiting int) Prompt {
	return Prompt{Seq: it.seq, Worker: it.q.Worker, Request: it.q.Request, Options: it.shown,
		Explanations: it.expl, Reason: it.q.Reason, Deadline: it.q.Deadline, Waiting: waiting,
		Ready: it.ready, Arrived: it.arrived}
}

// Close stops listening, removes the socket, and closes every connection
// without answering: workers fall back to their own policy. A prompt being
// shown is retracted. Close is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.broadcastLocked()
		left := append([]*item(nil), s.queue...)
		wasShown := map[*item]bool{}
		for _, it := range left {
			wasShown[it] = it.showing
			s.removeLocked(it)
		}
		conns := make([]*peer, 0, len(s.conns))
		for p := range s.conns {
			conns = append(conns, p)
		}
		s.mu.Unlock()
		s.cancel()
		errs := []error{s.l.Close()} // unlinks the socket
		for _, p := range conns {
			p.c.Close()
		}
		s.wg.Wait()
		now := time.Now()
		for _, it := range left {
			s.record(Record{Seq: it.seq, Question: it.q, Shown: it.shown, Outcome: OutcomeUndecided,
				Reason: "the leader closed before an answer", Prompted: wasShown[it],
				Arrived: it.arrived, Ended: now, Detail: it.detail})
		}
		os.Remove(s.path + ".lock")
		errs = append(errs, s.lock.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.l.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.log.Error("leader: accept", "err", err)
			select { // do not spin on a persistent error (EMFILE)
			case <-time.After(50 * time.Millisecond):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
		}()
	}
}

// serveConn checks the peer's user and reads its messages until it hangs
// up; its pending requests are then withdrawn.
func (s *Server) serveConn(c *net.UnixConn) {
	defer c.Close()
	p := &peer{c: c, pending: map[string]*item{}}
	cred, err := peerCred(c)
	if err != nil {
		s.log.Warn("leader: refused a connection whose credentials cannot be read", "err", err)
		p.send(&message{Type: TypeError, Code: CodeForbidden, Message: "leader: cannot read the peer's credentials: " + err.Error()})
		return
	}
	if int(cred.Uid) != s.uid {
		msg := fmt.Sprintf("leader: refused a connection from uid %d (pid %d): this leader answers only uid %d", cred.Uid, cred.Pid, s.uid)
		s.log.Warn(msg)
		p.send(&message{Type: TypeError, Code: CodeForbidden, Message: msg})
		return
	}
	p.pid = int(cred.Pid)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.conns[p] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, p)
		var gone []*item
		for _, it := range p.pending {
			gone = append(gone, it)
		}
		s.mu.Unlock()
		for _, it := range gone {
			s.withdraw(it, "the worker disconnected")
		}
	}()
	lr := newLineReader(c, MaxMessageBytes)
	for {
		line, err := lr.next()
		if errors.Is(err, ErrTooLarge) {
			s.log.Warn("leader: message over the size bound; connection closed", "pid", p.pid, "limit", MaxMessageBytes)
			p.send(&message{Type: TypeError, Code: CodeTooLarge,
				Message: fmt.Sprintf("leader: message exceeds %d bytes; connection closed", MaxMessageBytes)})
			return
		}
		if err != nil {
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, code, err := decode(line)
		if err != nil {
			s.log.Warn("leader: refused a message", "pid", p.pid, "code", code, "err", err)
			reply := &message{Type: TypeError, Code: code, Message: err.Error()}
			if m != nil {
				reply.ID = m.ID
			}
			p.send(reply)
			continue
		}
		switch m.Type {
		case TypeAsk:
			s.ask(p, m)
		case TypeWithdraw:
			s.mu.Lock()
			it := p.pending[m.ID]
			s.mu.Unlock()
			if it == nil { // answered already: the replies crossed
				break
			}
			if m.AnsweredBy == ByEditor {
				s.answeredElsewhere(it, m.AnsweredAt)
			} else {
				s.withdraw(it, "withdrawn by the worker")
			}
		default:
			p.send(&message{Type: TypeError, ID: m.ID, Code: CodeInvalid,
				Message: fmt.Sprintf("leader: unknown message type %q", m.Type)})
		}
	}
}

// ask queues a question and starts the leader's plugins on it.
func (s *Server) ask(p *peer, m *message) {
	refuse := func(code, format string, args ...any) {
		s.log.Warn("leader: refused a request", "pid", p.pid, "id", m.ID, "code", code, "err", fmt.Sprintf(format, args...))
		p.send(&message{Type: TypeError, ID: m.ID, Code: code, Message: "leader: " + fmt.Sprintf(format, args...)})
	}
	switch {
	case m.ID == "":
		refuse(CodeInvalid, "ask without an id")
		return
	case len(m.ID) > maxIDBytes:
		refuse(CodeInvalid, "id longer than %d bytes", maxIDBytes)
		return
	case m.Request == nil:
		refuse(CodeInvalid, "ask without a request")
		return
	}
	q := Question{Request: *m.Request, Shown: m.Shown, Explanations: m.Explanations, Reason: m.Reason, Deadline: m.Deadline}
	if m.Worker != nil {
		q.Worker = *m.Worker
	}
	q.Worker.PID = p.pid
	shown, err := q.shownOptions()
	if err != nil {
		refuse(CodeInvalid, "%v", err)
		return
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		refuse(CodeClosing, "the leader is shutting down")
		return
	case p.pending[m.ID] != nil:
		s.mu.Unlock()
		refuse(CodeInvalid, "id %q is already pending on this connection", m.ID)
		return
	case len(p.pending) >= maxPendingConn || len(s.queue) >= maxPendingTotal:
		s.mu.Unlock()
		refuse(CodeBusy, "too many requests pending (%d on this connection, %d in all)", len(p.pending), len(s.queue))
		return
	}
	s.seq++
	it := &item{seq: s.seq, peer: p, id: m.ID, q: q, shown: shown, expl: q.Explanations, arrived: time.Now()}
	it.ctx, it.cancel = context.WithCancel(s.ctx)
	s.queue = append(s.queue, it)
	p.pending[m.ID] = it
	ahead := len(s.queue) - 1
	s.broadcastLocked()
	s.mu.Unlock()
	s.log.Info("leader: request queued", "seq", it.seq, "worker", q.Worker.String(), "title", q.Request.ToolCall.Title, "ahead", ahead)
	p.send(&message{Type: TypeQueued, ID: m.ID, Ahead: &ahead})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.decide(it)
	}()
}

// decide runs the leader's plugins on it; what they cannot decide waits
// for the person.
func (s *Server) decide(it *item) {
	var v Verdict
	if s.opts.Decide != nil {
		v = s.safeDecide(it)
	}
	s.mu.Lock()
	if it.done {
		s.mu.Unlock()
		return
	}
	it.detail = v.Detail
	if v.Decided && (v.OptionID == "" || offered(it.shown, v.OptionID)) {
		s.removeLocked(it)
		s.mu.Unlock()
		outcome := OutcomeSelected
		if v.OptionID == "" {
			outcome = OutcomeCancelled
		}
		s.answer(it, Record{Outcome: outcome, OptionID: v.OptionID, DecidedBy: v.DecidedBy, Reason: v.Reason})
		return
	}
	if v.Decided {
		s.log.Warn("leader: a plugin chose an option the person could not; asking the person", "plugin", v.DecidedBy, "optionId", v.OptionID)
	}
	if v.Shown != nil {
		it.shown = narrow(it.shown, v.Shown)
	}
	if len(it.shown) == 0 {
		s.removeLocked(it)
		s.mu.Unlock()
		s.fail(it, Record{Reason: "no option is left that a person may choose"})
		return
	}
	it.expl = append(append([]Explanation(nil), it.q.Explanations...), v.Explanations...)
	it.ready = true
	s.broadcastLocked()
	s.mu.Unlock()
}

// safeDecide calls the Decider; a panic leaves the question to the person.
func (s *Server) safeDecide(it *item) (v Verdict) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("leader: plugins panicked; asking the person", "panic", r)
			v = Verdict{}
		}
	}()
	return s.opts.Decide(it.ctx, it.q)
}

// promptLoop shows the ready request that arrived first, one at a time.
func (s *Server) promptLoop() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		for !s.closed && (len(s.queue) == 0 || !s.queue[0].ready) {
			ch := s.changed
			s.mu.Unlock()
			<-ch
			s.mu.Lock()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		it := s.queue[0]
		it.showing = true
		p := it.prompt(len(s.queue) - 1)
		p.WaitingNow = s.waitingBehind
		s.mu.Unlock()

		choice, err := s.safeAsk(it.ctx, p)

		s.mu.Lock()
		if it.done { // withdrawn or closed while shown; already recorded
			s.mu.Unlock()
			continue
		}
		s.removeLocked(it)
		s.mu.Unlock()
		rec := Record{Prompted: true, Answer: choice, By: ByTerminal}
		switch {
		case err != nil:
			rec.Reason = "the prompt failed: " + err.Error()
			s.fail(it, rec)
		case choice == "":
			rec.Outcome, rec.DecidedBy, rec.Answer = OutcomeCancelled, "person", "cancelled"
			s.answer(it, rec)
		case !offered(it.shown, choice):
			rec.Refused = true
			rec.Reason = fmt.Sprintf("the answer %q names an option that was not shown", choice)
			s.fail(it, rec)
		default:
			rec.Outcome, rec.OptionID, rec.DecidedBy = OutcomeSelected, choice, "person"
			s.answer(it, rec)
		}
	}
}

// safeAsk calls the Prompter; a panic is a failed prompt.
func (s *Server) safeAsk(ctx context.Context, p Prompt) (id string, err error) {
	defer func() {
		if r := recover(); r != nil {
			id, err = "", fmt.Errorf("leader: prompt panicked: %v", r)
		}
	}()
	return s.opts.Prompter.Ask(ctx, p)
}

// answer sends the decision to the worker and records it.
func (s *Server) answer(it *item, rec Record) {
	it.peer.send(&message{Type: TypeAnswer, ID: it.id, Outcome: rec.Outcome, OptionID: rec.OptionID,
		DecidedBy: rec.DecidedBy, Reason: rec.Reason, Leader: &s.leader, AnsweredBy: rec.By, Said: rec.Said})
	s.finish(it, rec)
}

// fail tells the worker to fall back and records why.
func (s *Server) fail(it *item, rec Record) {
	rec.Outcome = OutcomeUndecided
	it.peer.send(&message{Type: TypeError, ID: it.id, Code: CodeUndecided, Message: "leader: " + rec.Reason})
	s.finish(it, rec)
}

// withdraw removes it, retracting its prompt if shown.
func (s *Server) withdraw(it *item, why string) { s.withdrawBy(it, why, "", time.Time{}) }

// answeredElsewhere withdraws it because the editor's person answered at
// at (the worker's clock, held between the request's arrival and now).
func (s *Server) answeredElsewhere(it *item, at time.Time) {
	s.withdrawBy(it, "answered in the editor", ByEditor, at)
}

func (s *Server) withdrawBy(it *item, why, by string, at time.Time) {
	s.mu.Lock()
	if it.done {
		s.mu.Unlock()
		return
	}
	shown := it.showing
	s.removeLocked(it)
	s.mu.Unlock()
	s.log.Info("leader: request withdrawn", "seq", it.seq, "worker", it.q.Worker.String(), "why", why, "wasShown", shown)
	rec := Record{Outcome: OutcomeWithdrawn, Reason: why, Prompted: shown, By: by, Ended: at}
	if shown {
		rec.Answer = OutcomeWithdrawn
	}
	s.finish(it, rec)
}

// finish records how it ended. rec.Ended, when set (the time a worker
// says the editor answered), is kept only between its arrival and now.
func (s *Server) finish(it *item, rec Record) {
	now := time.Now()
	if rec.Ended.IsZero() || rec.Ended.After(now) || rec.Ended.Before(it.arrived) {
		rec.Ended = now
	}
	rec.Seq, rec.Question, rec.Shown, rec.Arrived, rec.Detail = it.seq, it.q, it.shown, it.arrived, it.detail
	s.record(rec)
}

func (s *Server) record(rec Record) {
	if s.opts.OnDecision == nil {
		return
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.opts.OnDecision(rec)
}

// removeLocked takes it out of the queue and its connection, and cancels
// its context (retracting a prompt). s.mu must be held.
func (s *Server) removeLocked(it *item) {
	if it.done {
		return
	}
	it.done = true
	it.cancel()
	for i, q := range s.queue {
		if q == it {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	delete(it.peer.pending, it.id)
	s.broadcastLocked()
}

func (s *Server) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// send writes one message; a worker that does not read within
// writeTimeout loses its connection.
func (p *peer) send(m *message) {
	line, err := encode(m)
	if err != nil {
		return // only our own messages are encoded; none approaches the bound
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := p.c.Write(line); err != nil {
		p.c.Close()
	}
}

func offered(options []abi.Option, id string) bool {
	for _, o := range options {
		if o.OptionID == id {
			return true
		}
	}
	return false
}

// narrow keeps the options whose ids are in keep, in order.
func narrow(options []abi.Option, keep []string) []abi.Option {
	var out []abi.Option
	for _, o := range options {
		for _, k := range keep {
			if o.OptionID == k {
				out = append(out, o)
				break
			}
		}
	}
	return out
}
