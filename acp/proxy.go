package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Options configure a Proxy. The zero value is valid.
type Options struct {
	// Handler decides permission requests; nil means Forward.
	Handler Handler
	// Logger receives diagnostics; nil discards them. It must not write to
	// the client's output.
	Logger *slog.Logger
	// MaxLineBytes caps one line from either side, terminator included; 0
	// means DefaultMaxLineBytes. A longer line stops the proxy with a
	// *LineTooLongError.
	MaxLineBytes int
	// MaxSessions and MaxToolCallsPerSession bound the session state; 0
	// means DefaultMaxSessions and DefaultMaxToolCallsPerSessn.
	MaxSessions            int
	MaxToolCallsPerSession int
	// AgentExit, when set, is called once the agent's output has ended. It
	// returns how the agent ended (for example "the agent exited with status
	// 3"); the errors sent for the client's unanswered requests name it.
	AgentExit func(ctx context.Context) string
	// ClientDone, when set, is called once when the client can no longer be
	// talked to: its input ended or writing to it failed. The agent's input
	// has been closed by then; the caller should stop the agent after a
	// grace period, which makes the agent's output end and Run return.
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
	toClient *outWriter
	toAgent  *outWriter
	wg       sync.WaitGroup // permission handlers
	doneOnce sync.Once

	mu        sync.Mutex
	running   bool
	seq       uint64
	pending   map[string]clientRequest // client→agent requests awaiting the agent
	perms     map[string]*permission   // agent permission requests not yet answered
	swallow   map[string]bool          // agent ids whose late client answer is dropped
	agentGone bool
	exitDesc  string
}

// clientRequest is a client→agent request awaiting its response.
type clientRequest struct {
	seq    uint64
	id     json.RawMessage
	method string
	params json.RawMessage // kept only for methods whose result updates state
}

type permState int

const (
	stateHeld  permState = iota // with the handler
	stateAsked                  // forwarded to the client, awaiting its answer
)

// permission is one intercepted request until the agent has its answer.
type permission struct {
	req    *PermissionRequest
	key    string
	ctx    context.Context
	cancel context.CancelFunc

	// Guarded by Proxy.mu.
	state            permState
	asked            bool
	done             bool
	sessionCancelled bool
	answers          chan Answer // buffered 1
	// slot is the answer's place among the client's lines to the agent,
	// reserved when the client answered.
	slot *answerSlot
}

// answerOrderWait bounds how long the client's later lines are held behind
// its answer to a permission request while the handler turns that answer
// into the agent's response, so that the agent sees them in the client's
// order. Reading from the client goes on meanwhile.
const answerOrderWait = 2 * time.Second

// NewProxy validates opts and returns a Proxy.
func NewProxy(opts Options) (*Proxy, error) {
	if opts.MaxLineBytes < 0 || opts.MaxSessions < 0 || opts.MaxToolCallsPerSession < 0 {
		return nil, errors.New("acp: negative limit in Options")
	}
	if opts.MaxLineBytes == 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxToolCallsPerSession == 0 {
		opts.MaxToolCallsPerSession = DefaultMaxToolCallsPerSessn
	}
	p := &Proxy{
		opts:    opts,
		log:     opts.Logger,
		handler: opts.Handler,
		state:   newState(opts.MaxSessions, opts.MaxToolCallsPerSession),
		pending: map[string]clientRequest{},
		perms:   map[string]*permission{},
		swallow: map[string]bool{},
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.handler == nil {
		p.handler = Forward
	}
	return p, nil
}

// Run relays between the client (clientIn, clientOut) and the agent
// (agentIn, agentOut) until the agent's output ends, then answers every
// client request the agent left unanswered with a JSON-RPC error and returns.
// It returns nil when the agent's output ended normally, ErrProtocolVersion
// when it failed closed on initialize, or a read error.
//
// When clientIn ends, Run closes agentIn (if it is an io.Closer) and calls
// Options.ClientDone; it keeps relaying the agent's output. Cancelling ctx
// cancels the permission handlers (their requests are answered cancelled);
// stopping the agent is the caller's job. Run waits for its handlers but not
// for the goroutine reading clientIn, which ends when clientIn does.
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
	p.toClient = newOutWriter(clientOut, func(err error) {
		p.log.Warn("writing to the client failed; shutting down", "err", err)
		p.clientDone()
	})
	p.toAgent = newOutWriter(agentIn, func(err error) {
		if !errors.Is(err, ErrClosed) {
			p.log.Warn("writing to the agent failed", "err", err)
		}
	})
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
	_ = p.toClient.flush()
	_ = p.toAgent.close()
	return err
}

// agentEnded answers the client's unanswered requests and abandons the
// permission requests of an agent that is gone.
func (p *Proxy) agentEnded(desc string) {
	p.mu.Lock()
	p.agentGone, p.exitDesc = true, desc
	pending := make([]clientRequest, 0, len(p.pending))
	for _, r := range p.pending {
		pending = append(pending, r)
	}
	p.pending = map[string]clientRequest{}
	var perms []*permission
	for _, pp := range p.perms {
		pp.done = true
		perms = append(perms, pp)
	}
	p.mu.Unlock()
	sort.Slice(pending, func(i, j int) bool { return pending[i].seq < pending[j].seq })
	for _, r := range pending {
		_ = p.toClient.message(errorLine(r.id, CodeInternalError, "permhost: "+desc+" before answering "+r.method))
	}
	for _, pp := range perms {
		pp.cancel()
	}
}

func (p *Proxy) clientDone() {
	p.doneOnce.Do(func() {
		p.toAgent.awaitHeld() // the client's last lines may wait behind an answer
		_ = p.toAgent.close()
		if p.opts.ClientDone != nil {
			p.opts.ClientDone()
		}
	})
}

func (p *Proxy) clientLoop(in io.Reader) {
	r := newLineReader(in, p.opts.MaxLineBytes, "client")
	for {
		line, err := r.next()
		if err != nil {
			if err != io.EOF {
				p.log.Error("reading from the client failed", "err", err)
			} else {
				p.log.Debug("the client closed its output")
			}
			p.clientDone()
			return
		}
		p.fromClient(line, !r.moreBuffered())
	}
}

func (p *Proxy) agentLoop(out io.Reader) error {
	r := newLineReader(out, p.opts.MaxLineBytes, "agent")
	for {
		line, err := r.next()
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		flush := !r.moreBuffered()
		if isPlainUpdate(line) {
			_ = p.toClient.forward(line, flush)
			continue
		}
		if err := p.fromAgent(line, flush); err != nil {
			return err
		}
	}
}

// fromClient handles one client line (terminator included).
func (p *Proxy) fromClient(line []byte, flush bool) {
	if isPlainUpdate(line) {
		_ = p.toAgent.forward(line, flush)
		return
	}
	body := trimEOL(line)
	d := decode(body)
	switch d.kind {
	case kindInvalid:
		p.logInvalid("client", body, d.err)
	case kindBatch:
		handled, cancels := p.clientBatch(body)
		if !handled {
			_ = p.toAgent.forward(line, flush || len(cancels) > 0)
		} else {
			p.flushAgent(flush)
		}
		for _, c := range cancels {
			p.cancelSession(c)
		}
		return
	case kindRequest:
		var ok bool
		if line, ok = p.clientRequest(d, line, body); !ok {
			return
		}
	case kindNotification:
		if d.method == MethodSessionCancel {
			_ = p.toAgent.forward(line, true)
			p.cancelSession(d.msg.Params)
			return
		}
	case kindResponse:
		if p.routeAnswer(d, body) {
			p.flushAgent(flush)
			return
		}
	}
	_ = p.toAgent.forward(line, flush)
}

func (p *Proxy) flushAgent(flush bool) {
	if flush {
		_ = p.toAgent.flush()
	}
}

// clientRequest records a client request as pending and returns the line to
// forward (initialize may be rewritten); ok is false when the request was
// answered here because the agent is gone.
func (p *Proxy) clientRequest(d decoded, line, body []byte) (_ []byte, ok bool) {
	r := clientRequest{id: d.msg.ID, method: d.method}
	switch d.method {
	case MethodInitialize:
		line = p.clientInitialize(d, line, body)
	case MethodSessionNew, MethodSessionLoad, MethodSessionResume, MethodSessionSetMode, MethodSessionSetConfigOption:
		r.params = d.msg.Params
	}
	p.mu.Lock()
	if p.agentGone {
		desc := p.exitDesc
		p.mu.Unlock()
		_ = p.toClient.message(errorLine(r.id, CodeInternalError, "permhost: "+desc))
		return nil, false
	}
	p.seq++
	r.seq = p.seq
	p.pending[idKey(r.id)] = r
	p.mu.Unlock()
	return line, true
}

// clientInitialize records clientInfo and rewrites a protocolVersion above
// ProtocolVersion to ProtocolVersion: the one client→agent rewrite.
func (p *Proxy) clientInitialize(d decoded, line, body []byte) []byte {
	var params struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	_ = json.Unmarshal(d.msg.Params, &params)
	p.state.setClient(peerOf(params.ClientInfo))
	v, ok := intValue(params.ProtocolVersion)
	if !ok || v <= ProtocolVersion {
		return line
	}
	ps, pe, ok1 := findMember(body, "params")
	vs, ve, ok2 := findMember(body[ps:pe], "protocolVersion")
	if !ok1 || !ok2 {
		p.log.Warn("cannot rewrite the client's protocolVersion; the agent's answer decides", "protocolVersion", v)
		return line
	}
	out := make([]byte, 0, len(line))
	out = append(out, body[:ps+vs]...)
	out = strconv.AppendInt(out, ProtocolVersion, 10)
	out = append(out, body[ps+ve:]...)
	out = append(out, line[len(body):]...)
	p.log.Info("client asked for a newer ACP protocol version; asking the agent for version 1", "requested", v)
	return out
}

func peerOf(raw json.RawMessage) Peer {
	var pr Peer
	if len(raw) == 0 || string(raw) == "null" {
		return pr
	}
	_ = json.Unmarshal(raw, &pr)
	pr.Info = raw
	return pr
}

// clientBatch handles a batch from the client. It reports whether it
// forwarded the batch itself (split into lines because an element answers a
// permission request the proxy holds); otherwise the caller forwards it
// unchanged. cancels are the params of the session/cancel notifications in
// the batch, to act on once the batch is forwarded.
func (p *Proxy) clientBatch(body []byte) (handled bool, cancels []json.RawMessage) {
	var elems []json.RawMessage
	if json.Unmarshal(body, &elems) != nil {
		p.logInvalid("client", body, errors.New("malformed batch"))
		return false, nil
	}
	ds := make([]decoded, len(elems))
	for i, e := range elems {
		ds[i] = decode(e)
		if ds[i].kind == kindResponse && p.isAwaited(ds[i]) {
			handled = true
		}
		if ds[i].kind == kindNotification && ds[i].method == MethodSessionCancel {
			cancels = append(cancels, ds[i].msg.Params)
		}
	}
	if !handled {
		return false, cancels
	}
	p.log.Warn("batch from the client answers a held permission request; forwarding its other elements as single lines")
	for i, d := range ds {
		if d.kind == kindResponse && p.routeAnswer(d, elems[i]) {
			continue
		}
		_ = p.toAgent.forward(append(elems[i], '\n'), false)
	}
	return true, cancels
}

func (p *Proxy) isAwaited(d decoded) bool {
	key := idKey(d.msg.ID)
	p.mu.Lock()
	defer p.mu.Unlock()
	pp := p.perms[key]
	return (pp != nil && pp.state == stateAsked) || p.swallow[key]
}

// routeAnswer delivers a client response to the permission request awaiting
// it, reserving the place of the agent's response among the client's lines,
// or drops a late answer to a withdrawn one. It reports whether the response
// was consumed.
func (p *Proxy) routeAnswer(d decoded, body []byte) bool {
	key := idKey(d.msg.ID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if pp := p.perms[key]; pp != nil && pp.state == stateAsked {
		pp.state = stateHeld
		a := Answer{Line: bytes.Clone(body)}
		if len(d.msg.Result) > 0 && string(d.msg.Result) != "null" {
			a.Result = d.msg.Result
		}
		if len(d.msg.Error) > 0 {
			a.Error = decodeRPCError(d.msg.Error)
		}
		pp.slot = p.toAgent.reserve(answerOrderWait, func() {
			p.log.Warn("the permission handler is slow to relay the client's answer; forwarding the client's later messages meanwhile", "id", key)
		})
		pp.answers <- a
		return true
	}
	if p.swallow[key] {
		delete(p.swallow, key)
		p.log.Debug("dropped the client's late answer to a withdrawn permission request", "id", key)
		return true
	}
	return false
}

func decodeRPCError(raw json.RawMessage) *RPCError {
	var e struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return &RPCError{Code: CodeInternalError, Message: "malformed error object", Data: raw}
	}
	return &RPCError{Code: e.Code, Message: e.Message, Data: e.Data}
}

// cancelSession answers cancelled to every permission request of the
// session held by a handler; those forwarded to the client are left for the
// client to answer, and a selected answer is relayed as cancelled.
func (p *Proxy) cancelSession(params json.RawMessage) {
	var c struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(params, &c) != nil {
		return
	}
	var now []*permission
	p.mu.Lock()
	for _, pp := range p.perms {
		// A request the client answered before cancelling keeps that
		// answer: its slot, ahead of the cancel, is the handler's to fill.
		if pp.req.SessionID != c.SessionID || pp.done || pp.slot != nil {
			continue
		}
		if pp.state == stateAsked {
			pp.sessionCancelled = true
		} else {
			now = append(now, pp)
		}
	}
	p.mu.Unlock()
	for _, pp := range now {
		p.log.Debug("session/cancel: answering a held permission request cancelled", "id", pp.key)
		p.finishAfterClient(pp, cancelledLine(pp.req.ID))
	}
}

// fromAgent handles one agent line that is not a plain session/update.
func (p *Proxy) fromAgent(line []byte, flush bool) error {
	body := trimEOL(line)
	d := decode(body)
	switch d.kind {
	case kindInvalid:
		p.logInvalid("agent", body, d.err)
	case kindBatch:
		if p.agentBatch(body) {
			p.flushClient(flush)
			return nil
		}
	default:
		fwd, err := p.agentMessage(d, body)
		if err != nil || !fwd {
			p.flushClient(flush)
			return err
		}
	}
	_ = p.toClient.forward(line, flush)
	return nil
}

func (p *Proxy) flushClient(flush bool) {
	if flush {
		_ = p.toClient.flush()
	}
}

// agentMessage tracks state for one decoded agent message and intercepts
// permission requests. It reports whether the message is to be forwarded.
func (p *Proxy) agentMessage(d decoded, body []byte) (forward bool, err error) {
	switch d.kind {
	case kindRequest:
		if d.method == MethodRequestPermission {
			p.intercept(d, body)
			return false, nil
		}
	case kindNotification:
		switch d.method {
		case MethodSessionUpdate:
			p.trackUpdate(d.msg.Params)
		case MethodCancelRequest:
			return !p.agentCancelRequest(d.msg.Params), nil
		}
	case kindResponse:
		return p.agentResponse(d)
	}
	return true, nil
}

// agentBatch splits a batch holding a permission request into single lines
// and intercepts the request. It reports whether it handled the batch;
// otherwise the caller forwards it unchanged.
func (p *Proxy) agentBatch(body []byte) bool {
	if !bytes.Contains(body, permissionMark) {
		return false
	}
	var elems []json.RawMessage
	if json.Unmarshal(body, &elems) != nil {
		p.logInvalid("agent", body, errors.New("malformed batch"))
		return false
	}
	ds := make([]decoded, len(elems))
	found := false
	for i, e := range elems {
		ds[i] = decode(e)
		if ds[i].kind == kindRequest && ds[i].method == MethodRequestPermission {
			found = true
		}
	}
	if !found {
		return false
	}
	p.log.Warn("batch from the agent holds a permission request; forwarding its other elements as single lines", "elements", len(elems))
	for i, d := range ds {
		if d.kind == kindInvalid {
			_ = p.toClient.message(elems[i])
			continue
		}
		if fwd, _ := p.agentMessage(d, elems[i]); fwd {
			_ = p.toClient.message(elems[i])
		}
	}
	return true
}

// trackUpdate merges tool calls and records mode changes of a session/update.
func (p *Proxy) trackUpdate(params json.RawMessage) {
	var u struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if json.Unmarshal(params, &u) != nil || u.SessionID == "" {
		return
	}
	var k struct {
		SessionUpdate string          `json:"sessionUpdate"`
		CurrentModeID string          `json:"currentModeId"`
		ConfigOptions json.RawMessage `json:"configOptions"`
	}
	if json.Unmarshal(u.Update, &k) != nil {
		return
	}
	switch k.SessionUpdate {
	case "tool_call", "tool_call_update":
		p.state.updateToolCall(u.SessionID, u.Update)
	case "current_mode_update":
		p.state.setMode(u.SessionID, k.CurrentModeID)
	case "config_option_update":
		p.state.setConfigOptions(u.SessionID, k.ConfigOptions)
	}
}

// agentCancelRequest handles the agent's $/cancel_request. It reports
// whether it consumed the notification: a request still with its handler is
// answered cancelled here; one forwarded to the client (or unknown) is the
// client's to cancel.
func (p *Proxy) agentCancelRequest(params json.RawMessage) bool {
	var c struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &c) != nil || len(c.RequestID) == 0 {
		return false
	}
	p.mu.Lock()
	pp := p.perms[idKey(c.RequestID)]
	held := pp != nil && !pp.done && pp.state == stateHeld
	p.mu.Unlock()
	if !held {
		return false
	}
	p.log.Debug("$/cancel_request: answering a held permission request cancelled", "id", pp.key)
	p.finish(pp, cancelledLine(pp.req.ID))
	return true
}

// agentResponse matches a response with the client request it answers and
// learns from it. A protocol version other than ProtocolVersion fails
// closed: the client gets an error instead of the result.
func (p *Proxy) agentResponse(d decoded) (forward bool, err error) {
	key := idKey(d.msg.ID)
	p.mu.Lock()
	r, ok := p.pending[key]
	delete(p.pending, key)
	p.mu.Unlock()
	if !ok || len(d.msg.Result) == 0 || string(d.msg.Result) == "null" {
		return true, nil
	}
	switch r.method {
	case MethodInitialize:
		var res struct {
			ProtocolVersion json.RawMessage `json:"protocolVersion"`
			AgentInfo       json.RawMessage `json:"agentInfo"`
		}
		_ = json.Unmarshal(d.msg.Result, &res)
		if v, ok := intValue(res.ProtocolVersion); !ok || v != ProtocolVersion {
			msg := fmt.Sprintf("permhost: the agent answered protocolVersion %s; permhost supports only ACP version %d", bytes.TrimSpace(res.ProtocolVersion), ProtocolVersion)
			_ = p.toClient.message(errorLine(r.id, CodeInternalError, msg))
			p.log.Error("failing closed: unsupported protocol version", "agentVersion", string(res.ProtocolVersion))
			return false, fmt.Errorf("%w: %s", ErrProtocolVersion, bytes.TrimSpace(res.ProtocolVersion))
		}
		p.state.setAgent(peerOf(res.AgentInfo), ProtocolVersion)
	case MethodSessionNew, MethodSessionLoad, MethodSessionResume:
		var params struct {
			SessionID string `json:"sessionId"`
			Cwd       string `json:"cwd"`
		}
		var res struct {
			SessionID string `json:"sessionId"`
			Modes     struct {
				CurrentModeID string `json:"currentModeId"`
			} `json:"modes"`
			ConfigOptions json.RawMessage `json:"configOptions"`
		}
		_ = json.Unmarshal(r.params, &params)
		_ = json.Unmarshal(d.msg.Result, &res)
		id := params.SessionID
		if r.method == MethodSessionNew || id == "" {
			id = res.SessionID
		}
		p.state.setSession(id, params.Cwd, res.Modes.CurrentModeID)
		p.state.setConfigOptions(id, res.ConfigOptions)
	case MethodSessionSetMode:
		var params struct {
			SessionID string `json:"sessionId"`
			ModeID    string `json:"modeId"`
		}
		if json.Unmarshal(r.params, &params) == nil {
			p.state.setMode(params.SessionID, params.ModeID)
		}
	case MethodSessionSetConfigOption:
		var params struct {
			SessionID string          `json:"sessionId"`
			ConfigID  string          `json:"configId"`
			Value     json.RawMessage `json:"value"`
		}
		var res struct {
			ConfigOptions json.RawMessage `json:"configOptions"`
		}
		if json.Unmarshal(r.params, &params) != nil {
			break
		}
		if json.Unmarshal(d.msg.Result, &res) == nil && len(res.ConfigOptions) > 0 {
			p.state.setConfigOptions(params.SessionID, res.ConfigOptions)
		} else {
			p.state.setConfigOption(params.SessionID, params.ConfigID, params.Value)
		}
	}
	return true, nil
}

// intercept hands an agent permission request to the handler.
func (p *Proxy) intercept(d decoded, body []byte) {
	req := p.state.permissionRequest(d, body)

	ctx, cancel := context.WithCancel(p.ctx)
	pp := &permission{req: req, key: idKey(req.ID), ctx: ctx, cancel: cancel, answers: make(chan Answer, 1)}
	p.mu.Lock()
	old := p.perms[pp.key]
	p.perms[pp.key] = pp
	delete(p.swallow, pp.key)
	p.mu.Unlock()
	if old != nil {
		p.log.Warn("the agent reused the id of an unanswered permission request; cancelling the older one", "id", pp.key)
		p.finish(old, cancelledLine(old.req.ID))
	}
	p.log.Debug("permission request intercepted", "id", pp.key, "session", req.SessionID, "toolCall", req.ToolCallID, "suspicious", req.Suspicious)
	p.wg.Add(1)
	go p.handle(pp)
}

func (p *Proxy) handle(pp *permission) {
	defer p.wg.Done()
	resp, err := p.callHandler(pp)
	p.finish(pp, p.checkedResponse(pp, resp, err))
}

func (p *Proxy) callHandler(pp *permission) (resp Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("acp: permission handler panicked: %v", r)
		}
	}()
	return p.handler.RequestPermission(pp.ctx, pp.req, &permClient{p: p, pp: pp})
}

// checkedResponse returns the line to send the agent for a handler's
// result: the handler's own answer if it is a valid answer to this request,
// else the cancelled outcome.
func (p *Proxy) checkedResponse(pp *permission, resp Response, herr error) []byte {
	fail := func(why string, args ...any) []byte {
		p.log.Warn("permission request answered cancelled: "+why, append([]any{"id", pp.key}, args...)...)
		return cancelledLine(pp.req.ID)
	}
	switch {
	case herr != nil:
		if pp.ctx.Err() != nil {
			return cancelledLine(pp.req.ID)
		}
		return fail("the handler failed", "err", herr)
	case resp.Line != nil:
		body := bytes.TrimSpace(resp.Line)
		d := decode(body)
		if d.kind != kindResponse || idKey(d.msg.ID) != pp.key {
			return fail("the handler's answer is not a response to this request")
		}
		if len(d.msg.Result) == 0 || string(d.msg.Result) == "null" {
			return body // an error response refuses
		}
		if why := checkResult(pp.req, d.msg.Result, body); why != "" {
			return fail(why)
		}
		if bytes.IndexByte(body, '\n') >= 0 {
			var b bytes.Buffer
			_ = json.Compact(&b, body) // decoded above, so valid
			body = b.Bytes()
		}
		return body
	case resp.Result != nil:
		var b bytes.Buffer
		if err := json.Compact(&b, resp.Result); err != nil {
			return fail("the handler's result is not JSON", "err", err)
		}
		if why := checkResult(pp.req, b.Bytes(), b.Bytes()); why != "" {
			return fail(why)
		}
		return responseLine(pp.req.ID, b.Bytes())
	default:
		return fail("the handler returned no answer")
	}
}

// checkResult returns why result is not an acceptable answer to req, or "".
func checkResult(req *PermissionRequest, result json.RawMessage, whole []byte) string {
	if !utf8.Valid(whole) {
		return "the answer is not valid UTF-8"
	}
	if k := duplicateKey(whole); k != "" {
		return "the answer has a duplicate key " + strconv.Quote(k)
	}
	var r struct {
		Outcome struct {
			Outcome  string  `json:"outcome"`
			OptionID *string `json:"optionId"`
		} `json:"outcome"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return "the answer's result does not decode: " + err.Error()
	}
	switch r.Outcome.Outcome {
	case "cancelled":
		return ""
	case "selected":
		if r.Outcome.OptionID == nil || !req.Offered(*r.Outcome.OptionID) {
			return "the answer selects an option that was not offered"
		}
		return ""
	default:
		return "the answer has an unknown outcome " + strconv.Quote(r.Outcome.Outcome)
	}
}

// selects reports whether a checked answer line selects an option.
func selects(body []byte) bool {
	var r struct {
		Result struct {
			Outcome struct {
				Outcome string `json:"outcome"`
			} `json:"outcome"`
		} `json:"result"`
	}
	return json.Unmarshal(body, &r) == nil && r.Result.Outcome.Outcome == "selected"
}

// finish sends the agent its answer, once, and releases the request.
func (p *Proxy) finish(pp *permission, body []byte) { p.finishWith(pp, body, p.toAgent.message) }

// finishAfterClient is finish for an answer the client's latest line
// caused (its session/cancel): it reaches the agent after that line.
func (p *Proxy) finishAfterClient(pp *permission, body []byte) {
	p.finishWith(pp, body, p.toAgent.messageInOrder)
}

func (p *Proxy) finishWith(pp *permission, body []byte, write func([]byte) error) {
	p.mu.Lock()
	if pp.done {
		p.mu.Unlock()
		return
	}
	pp.done = true
	if p.perms[pp.key] == pp {
		delete(p.perms, pp.key)
	}
	if pp.sessionCancelled && selects(body) {
		p.log.Debug("relaying an answer given after session/cancel as cancelled", "id", pp.key)
		body = cancelledLine(pp.req.ID)
	}
	slot := pp.slot
	p.mu.Unlock()
	if slot != nil {
		_ = slot.fill(body)
	} else {
		_ = write(body)
	}
	pp.cancel()
}

func (p *Proxy) logInvalid(from string, body []byte, err error) {
	start := body
	if len(start) > 80 {
		start = start[:80]
	}
	p.log.Warn("forwarding a line that is not a JSON-RPC message", "from", from, "bytes", len(body), "err", err, "start", string(start))
}

// permClient is the Client of one permission request.
type permClient struct {
	p  *Proxy
	pp *permission
}

func (c *permClient) Ask(ctx context.Context, params json.RawMessage) (Answer, error) {
	p, pp := c.p, c.pp
	body := pp.req.Line
	if params != nil {
		var b bytes.Buffer
		if err := json.Compact(&b, params); err != nil {
			return Answer{}, fmt.Errorf("acp: Ask params: %w", err)
		}
		body = requestLine(pp.req.ID, MethodRequestPermission, b.Bytes())
	}
	p.mu.Lock()
	switch {
	case pp.asked:
		p.mu.Unlock()
		return Answer{}, ErrAlreadyAsked
	case pp.done:
		p.mu.Unlock()
		return Answer{}, ErrAnswered
	case ctx.Err() != nil:
		p.mu.Unlock()
		return Answer{}, ctx.Err()
	}
	pp.asked, pp.state = true, stateAsked
	p.mu.Unlock()
	if err := p.toClient.message(body); err != nil {
		p.mu.Lock()
		pp.state = stateHeld
		p.mu.Unlock()
		return Answer{}, err
	}
	select {
	case a := <-pp.answers:
		return a, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	withdraw := pp.state == stateAsked
	if withdraw {
		pp.state = stateHeld
		p.swallow[pp.key] = true
	}
	p.mu.Unlock()
	if withdraw {
		params, _ := json.Marshal(struct {
			RequestID json.RawMessage `json:"requestId"`
		}{pp.req.ID})
		_ = p.toClient.message(notificationLine(MethodCancelRequest, params))
	}
	return Answer{}, ctx.Err()
}

func (c *permClient) Notify(method string, params json.RawMessage) error {
	var b bytes.Buffer
	if params != nil {
		if err := json.Compact(&b, params); err != nil {
			return fmt.Errorf("acp: Notify params: %w", err)
		}
	}
	return c.p.toClient.message(notificationLine(method, b.Bytes()))
}

// Lines permhost writes itself.

func responseLine(id json.RawMessage, result []byte) []byte {
	b := make([]byte, 0, 40+len(id)+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, bytes.TrimSpace(id)...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

func cancelledLine(id json.RawMessage) []byte { return responseLine(id, CancelledResult) }

func errorLine(id json.RawMessage, code int, message string) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, bytes.TrimSpace(id)...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = append(b, quote(message)...)
	return append(b, "}}"...)
}

func requestLine(id json.RawMessage, method string, params []byte) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, bytes.TrimSpace(id)...)
	b = append(b, `,"method":`...)
	b = append(b, quote(method)...)
	b = append(b, `,"params":`...)
	b = append(b, params...)
	return append(b, '}')
}

func notificationLine(method string, params []byte) []byte {
	b := []byte(`{"jsonrpc":"2.0","method":`)
	b = append(b, quote(method)...)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// duplicateKey returns the first key that appears twice in one object of the
// JSON text b, or "".
func duplicateKey(b []byte) string {
	type frame struct {
		obj, wantKey bool
		keys         map[string]bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.obj && top.wantKey {
			k, _ := tok.(string)
			if top.keys[k] {
				return k
			}
			top.keys[k] = true
			top.wantKey = false
			continue
		}
		if top != nil && top.obj {
			top.wantKey = true
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{obj: d == '{', wantKey: d == '{', keys: map[string]bool{}})
		}
	}
}
