package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/jsontext"
)

// Methods the headless client sends or serves, besides those in permission.go.
const (
	MethodSessionPrompt = "session/prompt"
	MethodReadTextFile  = "fs/read_text_file"
	MethodWriteTextFile = "fs/write_text_file"
)

// Stop reasons of session/prompt.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// Errors of the headless client.
var (
	// ErrAgentClosed means the agent's output ended (it exited or closed
	// stdout) before answering.
	ErrAgentClosed = errors.New("acp: the agent closed its output")
	// ErrUnknownSession means a session id the client did not create.
	ErrUnknownSession = errors.New("acp: unknown session")
	// ErrBusy means a prompt is already running in the session.
	ErrBusy = errors.New("acp: a prompt is already running in this session")
	// ErrConnClosed means ClientConn.Close was called.
	ErrConnClosed = errors.New("acp: client connection closed")
)

// PermissionDecision is a PermissionHandler's answer to one request.
type PermissionDecision struct {
	// OptionID is the option to select; "" answers cancelled. An id that
	// was not offered in the request is never sent: the agent gets
	// cancelled instead.
	OptionID string
	// DecidedBy, Reason and DecisionID are reported in the Event stream;
	// the agent sees none of them.
	DecidedBy  string
	Reason     string
	DecisionID string
	// FollowUp, when set, is sent the agent right after an answer that
	// selects OptionID, as a request of the client's own whose response
	// is only logged: for example the _session/steering that tells the
	// model why its call was refused. Not sent when the answer becomes
	// cancelled or the turn is being cancelled.
	FollowUp *OwnRequest
}

// PermissionHandler decides the agent's permission requests for a
// ClientConn. DecidePermission runs in its own goroutine per request; ctx
// is cancelled when the request no longer needs an answer (the turn was
// cancelled, the agent sent $/cancel_request or went away), and the handler
// should then return promptly. An error, a panic or an option that was not
// offered answers cancelled.
type PermissionHandler interface {
	DecidePermission(ctx context.Context, req *PermissionRequest) (PermissionDecision, error)
}

// PermissionHandlerFunc adapts a function to PermissionHandler.
type PermissionHandlerFunc func(ctx context.Context, req *PermissionRequest) (PermissionDecision, error)

// DecidePermission calls f.
func (f PermissionHandlerFunc) DecidePermission(ctx context.Context, req *PermissionRequest) (PermissionDecision, error) {
	return f(ctx, req)
}

// FSAccess says which of ACP's client file-system methods the client serves.
// Both are confined to the session's working directory.
type FSAccess struct {
	Read  bool
	Write bool
	// Resolved says a governor in front (policy's [session] fs = "govern")
	// decided each path and forwards the file it decided on, resolved: a
	// path that resolves anywhere else now is refused, so that a symlink
	// swapped in after the decision is never followed.
	Resolved bool
}

// ClientOptions configure a ClientConn. The zero value is valid: it serves
// no files and answers every permission request cancelled.
type ClientOptions struct {
	// Info is the clientInfo sent in initialize; an empty Name means
	// "permhost", an empty Version "unknown".
	Info Peer
	// Permissions decides permission requests; nil answers each cancelled.
	Permissions PermissionHandler
	// Events, when set, receives the session's events in order, from a
	// goroutine of its own: a slow Events never holds up the connection.
	// Events queued before a prompt's response are delivered before
	// Prompt returns.
	Events func(Event)
	// FS enables fs/read_text_file and fs/write_text_file, confined to the
	// session's cwd (symlinks resolved; anything outside is refused).
	FS FSAccess
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// MaxLineBytes caps one line from the agent; 0 means
	// DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxReadBytes caps a file served by fs/read_text_file; 0 means
	// DefaultMaxReadBytes.
	MaxReadBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultMaxReadBytes is the default cap on a file served to the agent.
const DefaultMaxReadBytes = 64 << 20

// InitializeResult is the agent's answer to initialize.
type InitializeResult struct {
	ProtocolVersion int
	Agent           Peer
	// AgentCapabilities and AuthMethods are verbatim; nil when absent.
	AgentCapabilities json.RawMessage
	AuthMethods       json.RawMessage
	// Steering is true when the agent advertised _session/steering
	// (_meta.steering.supported).
	Steering bool
}

// ClientConn is the client end of one ACP connection: permhost as the
// editor. Create it with NewClientConn; the creator calls Close.
//
// The client numbers its own requests 1, 2, 3... and never reuses an id;
// the agent's ids live in their own space. It answers every agent request:
// permission requests through the PermissionHandler, file requests when
// enabled, anything else -32601. Malformed input gets -32700 (id null) or
// -32600 (with the id when readable); a batch is answered element by
// element, as single lines, since ACP v1 has no batches.
//
// Permission requests are decided whether or not a prompt is in flight:
// agents keep working after a turn ends (claude-agent-acp asks after its
// prompt returned), and a decision by policy stays a decision by policy.
// Between session/cancel and the cancelled turn's stop reason, the
// session's requests are answered cancelled at once.
type ClientConn struct {
	opts   ClientOptions
	log    *slog.Logger
	now    func() time.Time
	state  *state
	out    *writer
	in     io.Reader
	events *eventQueue

	ctx    context.Context // cancelled by Close; parent of handler contexts
	cancel context.CancelFunc
	wg     sync.WaitGroup // handlers and file requests
	nextID atomic.Int64
	done   chan struct{} // closed when the read loop ends
	once   sync.Once

	mu       sync.Mutex
	calls    map[int64]chan callResult
	perms    map[string]*clientPerm
	sessions map[string]*clientSession
	err      error // why the connection ended; set before done closes
}

type callResult struct {
	result json.RawMessage
	err    error
}

// clientSession is a session the client created.
type clientSession struct {
	id, cwd  string
	resolved string   // cwd with symlinks resolved
	root     *os.Root // nil unless file access is enabled
	// prompting is true while a session/prompt is in flight; cancelling
	// from session/cancel until that prompt's response.
	prompting, cancelling bool
}

// clientPerm is one agent permission request until it is answered.
type clientPerm struct {
	req    *PermissionRequest
	key    string
	start  time.Time
	inTurn bool
	ctx    context.Context
	cancel context.CancelFunc
	done   bool // guarded by ClientConn.mu
}

// NewClientConn starts a client on the agent's input (w, usually the
// agent's stdin) and output (r). It reads r until it ends or Close is
// called; Close closes w, and r when it is an io.Closer.
func NewClientConn(w io.Writer, r io.Reader, opts ClientOptions) (*ClientConn, error) {
	if opts.MaxLineBytes < 0 || opts.MaxReadBytes < 0 {
		return nil, errors.New("acp: negative limit in ClientOptions")
	}
	if opts.MaxLineBytes == 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxReadBytes == 0 {
		opts.MaxReadBytes = DefaultMaxReadBytes
	}
	if opts.Info.Name == "" {
		opts.Info.Name = "permhost"
	}
	if opts.Info.Version == "" {
		opts.Info.Version = "unknown" // required by the schema's Implementation
	}
	c := &ClientConn{
		opts:     opts,
		log:      opts.Logger,
		now:      opts.Now,
		state:    newState(0, 0, 0),
		in:       r,
		done:     make(chan struct{}),
		calls:    map[int64]chan callResult{},
		perms:    map[string]*clientPerm{},
		sessions: map[string]*clientSession{},
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.out = newWriter(w, func(err error) {
		c.log.Warn("writing to the agent failed", "err", err)
	})
	c.events = newEventQueue(opts.Events, c.log)
	c.state.setClient(c.opts.Info)
	go c.readLoop()
	return c, nil
}

// Done is closed once the agent's output has ended or Close was called.
func (c *ClientConn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended: ErrAgentClosed, ErrConnClosed, a
// read error or a *LineTooLongError; nil while it runs.
func (c *ClientConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the agent's input and output, answers nothing more, waits
// for the permission handlers and delivers the queued events. It is
// idempotent.
func (c *ClientConn) Close() error {
	c.once.Do(func() {
		c.setErr(ErrConnClosed)
		c.out.closeNow()
		closer, ok := c.in.(io.Closer)
		if ok {
			_ = closer.Close()
		}
		c.cancel()
		if ok {
			<-c.done
		}
		c.wg.Wait()
		c.events.close()
		c.mu.Lock()
		for _, s := range c.sessions {
			if s.root != nil {
				s.root.Close()
			}
		}
		c.mu.Unlock()
	})
	return nil
}

func (c *ClientConn) setErr(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
}

// call sends a request and returns its channel; the id is new.
func (c *ClientConn) startCall(method string, params any) (int64, chan callResult, error) {
	body, err := marshalNoEscape(params)
	if err != nil {
		return 0, nil, fmt.Errorf("acp: %s params: %w", method, err)
	}
	id := c.nextID.Add(1)
	ch := make(chan callResult, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return 0, nil, err
	}
	c.calls[id] = ch
	c.mu.Unlock()
	if err := c.out.messageInOrder(requestLine(strconv.AppendInt(nil, id, 10), method, body)); err != nil {
		c.forget(id)
		return 0, nil, fmt.Errorf("acp: sending %s: %w", method, err)
	}
	return id, ch, nil
}

func (c *ClientConn) forget(id int64) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

// call sends a request and waits for its result. When ctx ends first the
// agent is sent $/cancel_request and ctx.Err() returned.
func (c *ClientConn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id, ch, err := c.startCall(method, params)
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		c.forget(id)
		p, _ := json.Marshal(map[string]int64{"requestId": id})
		_ = c.out.messageInOrder(notificationLine(MethodCancelRequest, p))
		return nil, ctx.Err()
	}
}

// Initialize sends initialize (protocol version 1, the capabilities the
// client really serves) and checks the agent's version: any other than
// ProtocolVersion is an error wrapping ErrProtocolVersion, and the caller
// should close the connection.
func (c *ClientConn) Initialize(ctx context.Context) (InitializeResult, error) {
	info := map[string]string{"name": c.opts.Info.Name}
	if c.opts.Info.Title != "" {
		info["title"] = c.opts.Info.Title
	}
	info["version"] = c.opts.Info.Version
	params := map[string]any{
		"protocolVersion": ProtocolVersion,
		"clientCapabilities": map[string]any{
			"fs":       map[string]bool{"readTextFile": c.opts.FS.Read, "writeTextFile": c.opts.FS.Write},
			"terminal": false,
		},
		"clientInfo": info,
	}
	raw, err := c.call(ctx, MethodInitialize, params)
	if err != nil {
		return InitializeResult{}, err
	}
	res, err := jsontext.Lookup(raw, "protocolVersion", "agentCapabilities", "agentInfo", "authMethods")
	if err != nil {
		return InitializeResult{}, fmt.Errorf("%w: the initialize result does not read one way only: %w", ErrProtocolVersion, err)
	}
	v, ok := intValue(res["protocolVersion"])
	if !ok || v != ProtocolVersion {
		return InitializeResult{}, fmt.Errorf("%w: %s (permhost speaks ACP version %d)", ErrProtocolVersion, bytes.TrimSpace(res["protocolVersion"]), ProtocolVersion)
	}
	out := InitializeResult{ProtocolVersion: ProtocolVersion, Agent: peerOf(res["agentInfo"]),
		AgentCapabilities: rawOrNil(res["agentCapabilities"]), AuthMethods: rawOrNil(res["authMethods"])}
	c.state.setAgent(out.Agent, ProtocolVersion)
	out.Steering = AdvertisesSteering(raw)
	c.state.setSteering(out.Steering)
	return out, nil
}

// NewSession creates a session in cwd, an absolute directory, with no MCP
// servers, and returns its id.
func (c *ClientConn) NewSession(ctx context.Context, cwd string) (string, error) {
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("acp: session cwd %q is not absolute", cwd)
	}
	cwd = filepath.Clean(cwd)
	resolved, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return "", fmt.Errorf("acp: session cwd: %w", err)
	}
	var root *os.Root
	if c.opts.FS.Read || c.opts.FS.Write {
		if root, err = os.OpenRoot(resolved); err != nil {
			return "", fmt.Errorf("acp: session cwd: %w", err)
		}
	}
	raw, err := c.call(ctx, MethodSessionNew, map[string]any{"cwd": cwd, "mcpServers": []any{}})
	if err != nil {
		if root != nil {
			root.Close()
		}
		return "", err
	}
	res, _ := fields(raw, "sessionId", "modes", "configOptions")
	modes, _ := fields(res["modes"], "currentModeId")
	sessionID := stringOf(res["sessionId"])
	if sessionID == "" {
		if root != nil {
			root.Close()
		}
		return "", fmt.Errorf("acp: session/new result has no sessionId (read strictly): %s", truncate(raw, 200))
	}
	c.mu.Lock()
	if old := c.sessions[sessionID]; old != nil && old.root != nil {
		old.root.Close()
	}
	c.sessions[sessionID] = &clientSession{id: sessionID, cwd: cwd, resolved: resolved, root: root}
	c.mu.Unlock()
	c.state.setSession(sessionID, cwd, stringOf(modes["currentModeId"]))
	c.state.setConfigOptions(sessionID, res["configOptions"])
	return sessionID, nil
}

// Prompt sends text as one session/prompt and waits for the turn to end,
// returning the stop reason. Cancelling ctx cancels the turn: the agent is
// sent session/cancel, the session's pending permission requests are
// answered cancelled, and Prompt keeps waiting for the agent's stop reason
// (usually "cancelled"; an agent may report another). To give up on an agent
// that never answers, stop the agent or Close the connection.
func (c *ClientConn) Prompt(ctx context.Context, sessionID, text string) (string, error) {
	c.mu.Lock()
	s := c.sessions[sessionID]
	switch {
	case s == nil:
		c.mu.Unlock()
		return "", fmt.Errorf("%w %q", ErrUnknownSession, sessionID)
	case s.prompting:
		c.mu.Unlock()
		return "", ErrBusy
	}
	s.prompting = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		s.prompting, s.cancelling = false, false
		c.mu.Unlock()
	}()

	params := map[string]any{
		"sessionId": sessionID,
		"prompt":    []any{map[string]string{"type": "text", "text": text}},
	}
	_, ch, err := c.startCall(MethodSessionPrompt, params)
	if err != nil {
		return "", err
	}
	var r callResult
	select {
	case r = <-ch:
	case <-ctx.Done():
		c.cancelTurn(s)
		r = <-ch
	}
	if r.err != nil {
		c.events.barrier()
		return "", r.err
	}
	res, _ := fields(r.result, "stopReason")
	stopReason := stringOf(res["stopReason"])
	if stopReason == "" {
		c.events.barrier()
		return "", fmt.Errorf("acp: session/prompt result has no stopReason (read strictly): %s", truncate(r.result, 200))
	}
	c.events.push(Event{Kind: EventStop, Time: c.now(), SessionID: sessionID, StopReason: stopReason})
	c.events.barrier()
	return stopReason, nil
}

// cancelTurn sends session/cancel and answers the session's pending
// permission requests cancelled.
func (c *ClientConn) cancelTurn(s *clientSession) {
	c.mu.Lock()
	s.cancelling = true
	var pending []*clientPerm
	for _, p := range c.perms {
		if p.req.SessionID == s.id && !p.done {
			pending = append(pending, p)
		}
	}
	c.mu.Unlock()
	p, _ := marshalNoEscape(map[string]string{"sessionId": s.id})
	if err := c.out.messageInOrder(notificationLine(MethodSessionCancel, p)); err != nil {
		c.log.Warn("sending session/cancel failed", "err", err)
	}
	for _, p := range pending {
		c.finishPerm(p, PermissionDecision{DecidedBy: "cancel", Reason: "the turn was cancelled"}, nil)
	}
}

func (c *ClientConn) readLoop() {
	r := newLineReader(c.in, c.opts.MaxLineBytes, "agent")
	var err error
	for {
		var line []byte
		line, err = r.next()
		if err != nil {
			break
		}
		c.handle(trimEOL(line), false)
	}
	switch {
	case err == io.EOF:
		err = ErrAgentClosed
	case errors.Is(c.Err(), ErrConnClosed):
		// Close closed the agent's output under this read: the end that was
		// asked for, not a failure (c.err stays ErrConnClosed).
	default:
		c.log.Error("reading from the agent failed", "err", err)
	}
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	err = c.err
	calls := c.calls
	c.calls = map[int64]chan callResult{}
	var perms []*clientPerm
	for _, p := range c.perms {
		p.done = true
		perms = append(perms, p)
	}
	c.perms = map[string]*clientPerm{}
	c.mu.Unlock()
	for _, ch := range calls {
		ch <- callResult{err: err}
	}
	for _, p := range perms {
		p.cancel()
	}
	close(c.done)
}

// handle acts on one line (or batch element) from the agent.
func (c *ClientConn) handle(body []byte, inBatch bool) {
	d := decode(body)
	switch d.kind {
	case kindBlank:
		if inBatch {
			c.reply(errorLine(nullID, CodeInvalidRequest, "permhost: empty batch element"))
		}
		return
	case kindBatch:
		if inBatch {
			c.reply(errorLine(nullID, CodeInvalidRequest, "permhost: nested batch"))
			return
		}
		c.batch(d.elems)
		return
	case kindInvalid:
		c.invalid(body, d)
		return
	}
	// Responses are taken without "jsonrpc": refusing one would leave a
	// call waiting forever, and nothing is answered to a response anyway.
	if (d.kind != kindResponse && stringOf(d.jsonrpc) != "2.0") || !validID(d.id) {
		c.invalid(body, decoded{kind: kindInvalid, id: d.id, err: errNotJSONRPC})
		return
	}
	switch d.kind {
	case kindRequest:
		c.request(d, body)
	case kindNotification:
		c.notification(d)
	case kindResponse:
		c.response(d)
	}
}

var nullID = json.RawMessage("null")

// invalid answers input that is not a JSON-RPC message.
func (c *ClientConn) invalid(body []byte, d decoded) {
	c.log.Warn("the agent sent a line that is not a JSON-RPC message", "bytes", len(body), "start", string(truncate(body, 80)), "err", d.err)
	if jsontext.Syntax(body) != nil {
		c.reply(errorLine(nullID, CodeParseError, "permhost: parse error: the line is not JSON"))
		return
	}
	id := nullID
	if len(d.id) > 0 && validID(d.id) {
		id = d.id
	} else if ids := recoverIDs(body); len(ids) == 1 {
		// decode stops at the first mistake; the id may still be readable.
		id = ids[0]
	}
	c.reply(errorLine(id, CodeInvalidRequest, "permhost: invalid request: not a JSON-RPC 2.0 request, notification or response"))
}

func (c *ClientConn) batch(elems [][]byte) {
	if len(elems) == 0 {
		c.reply(errorLine(nullID, CodeInvalidRequest, "permhost: empty batch"))
		return
	}
	c.log.Warn("the agent sent a batch (ACP v1 has none); handling its elements one by one", "elements", len(elems))
	for _, e := range elems {
		c.handle(bytes.TrimSpace(e), true)
	}
}

// validID reports whether id is absent, null, a string or a number.
func validID(id []byte) bool {
	if len(bytes.TrimSpace(id)) == 0 {
		return true
	}
	_, err := jsontext.CanonicalID(id)
	return err == nil
}

func (c *ClientConn) reply(line []byte) {
	if err := c.out.messageInOrder(line); err != nil && !errors.Is(err, ErrClosed) {
		c.log.Warn("answering the agent failed", "err", err)
	}
}

func (c *ClientConn) request(d decoded, body []byte) {
	switch d.method {
	case MethodRequestPermission:
		c.permission(body)
	case MethodReadTextFile, MethodWriteTextFile:
		if (d.method == MethodReadTextFile && !c.opts.FS.Read) || (d.method == MethodWriteTextFile && !c.opts.FS.Write) {
			c.reply(errorLine(d.id, CodeMethodNotFound, "permhost: "+d.method+" is not enabled (it was not advertised in initialize)"))
			return
		}
		// The file is served in a goroutine of its own: it keeps a copy.
		d = decode(bytes.Clone(body))
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.serveFile(d)
		}()
	default:
		c.reply(errorLine(d.id, CodeMethodNotFound, "permhost: method not found: "+d.method))
	}
}

func (c *ClientConn) notification(d decoded) {
	switch d.method {
	case MethodSessionUpdate:
		c.update(d.params, d.strict == nil)
	case MethodCancelRequest:
		f, ok := fields(d.params, "requestId")
		if !ok || f["requestId"] == nil {
			return
		}
		c.mu.Lock()
		pp := c.perms[idKey(f["requestId"])]
		c.mu.Unlock()
		if pp != nil {
			c.finishPerm(pp, PermissionDecision{DecidedBy: "cancel", Reason: "the agent withdrew the request ($/cancel_request)"}, nil)
		}
	default:
		c.log.Debug("ignoring a notification from the agent", "method", d.method)
	}
}

func (c *ClientConn) response(d decoded) {
	// The client's ids are integers; 1.0 or 1e0 answers 1 too.
	key := idKey(d.id)
	id, err := strconv.ParseInt(strings.TrimPrefix(key, "n"), 10, 64)
	ok := err == nil && strings.HasPrefix(key, "n")
	c.mu.Lock()
	ch := c.calls[id]
	if ok {
		delete(c.calls, id)
	}
	c.mu.Unlock()
	if !ok || ch == nil {
		c.log.Warn("the agent answered a request the client did not send or no longer awaits", "id", string(d.id))
		return
	}
	if d.error != nil && !jsontext.IsNull(d.error) {
		ch <- callResult{err: decodeRPCError(d.error)}
		return
	}
	ch <- callResult{result: bytes.Clone(d.result)}
}

// update records and reports one session/update. Only a strict message
// changes the state (tool calls, mode) decisions are made on; any is
// reported.
func (c *ClientConn) update(params json.RawMessage, strict bool) {
	var u struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if json.Unmarshal(params, &u) != nil || len(u.Update) == 0 {
		c.log.Warn("session/update without an update object")
		return
	}
	var k struct {
		SessionUpdate string          `json:"sessionUpdate"`
		CurrentModeID string          `json:"currentModeId"`
		ConfigOptions json.RawMessage `json:"configOptions"`
		Content       struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(u.Update, &k)
	ev := Event{Time: c.now(), SessionID: u.SessionID}
	switch k.SessionUpdate {
	case "agent_message_chunk", "agent_thought_chunk":
		ev.Kind = EventText
		if k.SessionUpdate == "agent_thought_chunk" {
			ev.Kind = EventThought
		}
		if k.Content.Type == "text" {
			ev.Text = k.Content.Text
		} else {
			ev.Update = u.Update
		}
	case "tool_call", "tool_call_update":
		merged, _, ok := c.state.updateToolCall(u.SessionID, u.Update)
		if !ok || !strict {
			ev.Kind, ev.Update = EventUpdate, u.Update
			break
		}
		ev.Kind = EventToolCall
		if k.SessionUpdate == "tool_call_update" {
			ev.Kind = EventToolCallUpdate
		}
		ev.ToolCall = toolCallEvent(merged)
	case "current_mode_update":
		if strict {
			c.state.setMode(u.SessionID, k.CurrentModeID)
		}
		ev.Kind, ev.Mode = EventMode, k.CurrentModeID
	case "config_option_update":
		if strict {
			c.state.setConfigOptions(u.SessionID, k.ConfigOptions)
		}
		ev.Kind, ev.Update = EventUpdate, u.Update
	default:
		ev.Kind, ev.Update = EventUpdate, u.Update
	}
	c.events.push(ev)
}

// permission starts deciding one agent permission request.
func (c *ClientConn) permission(body []byte) {
	own := bytes.Clone(body)
	d := decode(own)
	req := c.state.permissionRequest(d, own)
	ctx, cancel := context.WithCancel(c.ctx)
	p := &clientPerm{req: req, key: idKey(req.ID), start: c.now(), ctx: ctx, cancel: cancel}
	c.mu.Lock()
	old := c.perms[p.key]
	c.perms[p.key] = p
	s := c.sessions[req.SessionID]
	cancelling := s != nil && s.cancelling
	p.inTurn = s != nil && s.prompting
	c.mu.Unlock()
	if old != nil {
		c.log.Warn("the agent reused the id of an unanswered permission request; cancelling the older one", "id", p.key)
		c.finishPerm(old, PermissionDecision{DecidedBy: "cancel", Reason: "the agent reused its id"}, nil)
	}
	switch {
	case d.params != nil && !json.Valid(d.params):
		// As in the proxy: what decides reads it with encoding/json.
		c.finishPerm(p, PermissionDecision{DecidedBy: "cancel", Reason: "the request is nested too deeply to decide"}, nil)
	case cancelling:
		c.finishPerm(p, PermissionDecision{DecidedBy: "cancel", Reason: "the turn is being cancelled"}, nil)
	case c.opts.Permissions == nil:
		c.finishPerm(p, PermissionDecision{DecidedBy: "cancel", Reason: "no permission handler"}, nil)
	default:
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			dec, err := c.decide(p)
			c.finishPerm(p, dec, err)
		}()
	}
}

func (c *ClientConn) decide(p *clientPerm) (dec PermissionDecision, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("acp: permission handler panicked: %v", r)
		}
	}()
	return c.opts.Permissions.DecidePermission(p.ctx, p.req)
}

// finishPerm answers the agent once and reports the decision.
func (c *ClientConn) finishPerm(p *clientPerm, dec PermissionDecision, herr error) {
	c.mu.Lock()
	if p.done {
		c.mu.Unlock()
		return
	}
	p.done = true
	if c.perms[p.key] == p {
		delete(c.perms, p.key)
	}
	c.mu.Unlock()
	p.cancel()

	switch {
	case herr != nil:
		c.log.Warn("permission handler failed; answering cancelled", "id", p.key, "err", herr)
		dec = PermissionDecision{DecidedBy: "cancel", Reason: "the permission handler failed: " + herr.Error(), DecisionID: dec.DecisionID}
	case dec.OptionID != "" && !p.req.Offered(dec.OptionID):
		c.log.Warn("permission handler chose an option that was not offered; answering cancelled", "id", p.key, "option", dec.OptionID)
		dec = PermissionDecision{DecidedBy: "cancel", Reason: fmt.Sprintf("the handler chose %q, which was not offered", dec.OptionID), DecisionID: dec.DecisionID}
	}
	reply := answer.Cancelled()
	if dec.OptionID != "" {
		reply = answer.Selected(dec.OptionID)
	}
	line := answer.Encode(p.req.ID, reply)
	// The event goes first so that it precedes whatever the agent does
	// with the answer.
	c.events.push(Event{Kind: EventPermission, Time: c.now(), SessionID: p.req.SessionID,
		Permission: permissionEvent(p, dec, c.now().Sub(p.start))})
	c.reply(line)
	if dec.FollowUp != nil && dec.OptionID != "" && !c.cancelling(p.req.SessionID) {
		c.followUp(*dec.FollowUp)
	}
}

// cancelling reports whether session id's turn is being cancelled.
func (c *ClientConn) cancelling(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	return s != nil && s.cancelling
}

// followUp sends a request of the client's own after an answer; its
// response is only logged.
func (c *ClientConn) followUp(r OwnRequest) {
	_, ch, err := c.startCall(r.Method, r.Params)
	if err != nil {
		c.log.Warn("a follow-up request was not sent", "method", r.Method, "err", err)
		return
	}
	go func() {
		select {
		case res := <-ch:
			c.log.Debug("the agent answered a follow-up request", "method", r.Method, "result", string(res.result), "err", res.err)
		case <-c.done:
		}
	}()
}

// marshalNoEscape encodes v as compact JSON without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// rawOrNil returns a member's bytes as a copy, nil when absent.
func rawOrNil(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(bytes.Clone(b))
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
