package acp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
)

// Options configure a Proxy. The zero value is valid.
type Options struct {
	// Handler decides permission requests; nil forwards each request to the
	// client unchanged and relays the client's checked answer (permhost
	// without a policy).
	Handler Handler
	// Governor, when set, steers the session beyond permission requests
	// (modes, the agent's other requests of the client, tool calls the
	// agent runs unasked); see Governor.
	Governor Governor
	// Logger receives diagnostics; nil discards them. It must not write to
	// the client's output.
	Logger *slog.Logger
	// MaxLineBytes caps one line from either side, terminator included; 0
	// means DefaultMaxLineBytes. A longer line stops the proxy with a
	// *LineTooLongError.
	MaxLineBytes int
	// MaxSessions, MaxToolCallsPerSession and MaxToolCallBytesPerSession
	// bound the session state; 0 means DefaultMaxSessions,
	// DefaultMaxToolCallsPerSessn and DefaultMaxToolCallBytesPerSession.
	MaxSessions                int
	MaxToolCallsPerSession     int
	MaxToolCallBytesPerSession int
	// MaxGovernedSessions bounds, with a Governor, the sessions the
	// connection may start (0 means DefaultMaxGovernedSessions): past it
	// a new session is refused, since a governed session is never
	// forgotten.
	MaxGovernedSessions int
	// AgentExit, when set, is called once the agent's output has ended. It
	// returns how the agent ended (for example "the agent exited with status
	// 3"); the errors sent for the client's unanswered requests name it.
	AgentExit func(ctx context.Context) string
	// ClientDone, when set, is called once when the client can no longer be
	// talked to: its input ended or writing to it failed. The proxy then
	// closes the agent's input as soon as the client's last lines are
	// written to it (AgentInputClosed); the caller should stop the agent
	// after a grace period whatever its input holds, which makes the
	// agent's output end and Run return.
	ClientDone func()
}

// Proxy is a byte-transparent ACP proxy for one connection. Create it with
// NewProxy and call Run once.
type Proxy struct {
	opts    Options
	log     *slog.Logger
	handler Handler
	state   *state

	ctx      context.Context
	toClient *writer
	toAgent  *writer
	wg       sync.WaitGroup // permission handlers
	doneOnce sync.Once
	started  chan struct{} // closed by Run once the writers exist

	// mediator is the connection's mediation state (mediation.go): its
	// ids, pending requests and sessions, under p.mu.
	mediator

	gov        Governor
	agentDone  chan struct{} // closed once the agent's output ended
	clientGone chan struct{} // closed once the client can no longer be talked to
}

// clientRequest is a client→agent request awaiting its response.
type clientRequest struct {
	seq    uint64
	id     []byte
	method string
	params []byte // kept only for methods whose result updates state
	gated  string // the session a session/load or resume holds (gate.go)
}

// NewProxy validates opts and returns a Proxy.
func NewProxy(opts Options) (*Proxy, error) {
	if opts.MaxLineBytes < 0 || opts.MaxSessions < 0 || opts.MaxGovernedSessions < 0 || opts.MaxToolCallsPerSession < 0 || opts.MaxToolCallBytesPerSession < 0 {
		return nil, errors.New("acp: negative limit in Options")
	}
	if opts.MaxLineBytes == 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	p := &Proxy{
		opts:     opts,
		log:      opts.Logger,
		handler:  opts.Handler,
		state:    newState(opts.MaxSessions, opts.MaxToolCallsPerSession, opts.MaxToolCallBytesPerSession),
		started:  make(chan struct{}),
		mediator: newMediator(opts.MaxGovernedSessions),

		gov:        opts.Governor,
		agentDone:  make(chan struct{}),
		clientGone: make(chan struct{}),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.handler == nil {
		p.handler = forward
	}
	return p, nil
}

// Run relays between the client (clientIn, clientOut) and the agent
// (agentIn, agentOut) until the agent's output ends, then answers every
// client request the agent left unanswered with a JSON-RPC error and returns
// once everything for the client is written. It returns nil when the
// agent's output ended normally, ErrProtocolVersion when it failed closed on
// initialize, or a read error.
//
// Each direction has a writer goroutine of its own, so a peer that stops
// reading holds up only what goes to it. When clientIn ends, Run closes
// agentIn (if it is an io.Closer) once the client's lines are written to it
// and calls Options.ClientDone; it keeps relaying the agent's output.
// Cancelling ctx cancels the permission handlers (their requests are
// answered cancelled); stopping the agent is the caller's job. Run waits
// for its handlers but not for the goroutine reading clientIn, which ends
// when clientIn does.
func (p *Proxy) Run(ctx context.Context, clientIn io.Reader, clientOut io.Writer, agentIn io.Writer, agentOut io.Reader) error {
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return errors.New("acp: Proxy.Run called twice")
	}
	p.running = true
	p.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.ctx = ctx
	p.toClient = newWriter(clientOut, func(err error) {
		p.log.Warn("writing to the client failed; shutting down", "err", err)
		p.clientDone()
	})
	p.toAgent = newWriter(agentIn, func(err error) {
		p.log.Warn("writing to the agent failed", "err", err)
	})
	close(p.started)
	go p.clientLoop(clientIn)

	err := p.agentLoop(agentOut)

	desc := "the agent closed its output"
	switch {
	case errors.Is(err, ErrProtocolVersion):
		desc = "permhost stopped the agent: it answered an unsupported protocol version"
	case err != nil:
		desc = "reading from the agent failed: " + err.Error()
		p.log.Error("reading from the agent failed", "err", err)
	case p.opts.AgentExit != nil:
		desc = p.opts.AgentExit(ctx)
	}
	p.agentEnded(desc)
	cancel()
	p.wg.Wait()
	p.toAgent.closeNow()
	p.toClient.closeAfter(false)
	<-p.toClient.done
	return err
}

// AgentInputClosed is closed once the proxy has closed the agent's input:
// after the client went away and its last lines were written to the agent,
// or when writing to the agent failed, or when Run ended.
func (p *Proxy) AgentInputClosed() <-chan struct{} {
	<-p.started
	return p.toAgent.closed
}

// agentEnded answers the client's unanswered requests and abandons the
// permission requests of an agent that is gone.
func (p *Proxy) agentEnded(desc string) {
	p.mu.Lock()
	if !p.agentGone {
		close(p.agentDone)
	}
	p.agentGone, p.exitDesc = true, desc
	pending := make([]clientRequest, 0, len(p.pending))
	for _, r := range p.pending {
		pending = append(pending, r)
	}
	p.pending = map[string]clientRequest{}
	var perms []*permission
	for _, pp := range p.perms {
		perms = append(perms, pp)
	}
	for _, pp := range perms {
		p.doneLocked(pp) // the agent gets no answer: pp.sent stays nil
	}
	p.mu.Unlock()
	sort.Slice(pending, func(i, j int) bool { return pending[i].seq < pending[j].seq })
	for _, r := range pending {
		_ = p.toClient.messageInOrder(errorLine(r.id, CodeInternalError, "permhost: "+desc+" before answering "+r.method))
	}
	for _, pp := range perms {
		pp.cancel()
	}
	p.gatesAgentGone(desc)
}

// clientDone is the client's end: the agent's input is closed once what is
// queued for it is written (lines held behind a slot wait for it, at most
// answerOrderWait), and the caller is told to stop the agent.
func (p *Proxy) clientDone() {
	p.doneOnce.Do(func() {
		close(p.clientGone)
		p.toAgent.closeAfter(true)
		if p.opts.ClientDone != nil {
			p.opts.ClientDone()
		}
	})
}

func (p *Proxy) logInvalid(from string, body []byte, err error) {
	start := body
	if len(start) > 80 {
		start = start[:80]
	}
	p.log.Warn("forwarding a line that is not a JSON-RPC message", "from", from, "bytes", len(body), "err", err, "start", string(start))
}
