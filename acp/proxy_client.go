package acp

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/jsontext"
)

// This file is the client→agent direction: every client line, and every
// element of a client batch, goes through clientMessage.

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
		p.fromClient(r, line)
	}
}

// clientAction is what becomes of one client message.
type clientAction struct {
	drop       bool        // not forwarded
	replace    []byte      // forwarded as these bytes instead (no terminator)
	slot       *answerSlot // the agent's answer takes the message's place
	answer     *permission // gets the client's answer once the slot is placed
	ans        Answer      // that answer
	cancel     []byte      // session/cancel params: act once the message is queued
	cancelCall []byte      // tool_call/cancel params: the same (toolcall_cancel.go)
	reply      []byte      // a message of permhost's own for the client
	// neither is a request whose client answer could be another's: it is
	// answered cancelled, and its handler told so.
	neither *permission
}

// fromClient handles one client line (terminator included).
func (p *Proxy) fromClient(r *lineReader, line []byte) {
	if r.fast.plain(line) {
		_ = r.forwardTo(p.toAgent)
		return
	}
	r.flush(false) // what was forwarded so far goes first
	body := trimEOL(line)
	d := decode(body)
	if d.kind == kindBatch {
		p.clientBatch(r, line, body, d)
		return
	}
	a := p.clientMessage(body, d)
	switch {
	case a.drop:
	case a.slot != nil:
		p.toAgent.place(a.slot, p.slowHandler)
	case a.replace != nil:
		_ = p.toAgent.forward(append(a.replace, line[len(body):]...), nil)
	default:
		_ = r.forwardNow(p.toAgent)
	}
	p.afterClient(a)
}

// afterClient does what a client message causes once it is queued for the
// agent, so that what it causes follows it.
func (p *Proxy) afterClient(a clientAction) {
	if a.answer != nil {
		a.answer.answers <- a.ans
	}
	if pp := a.neither; pp != nil {
		p.finishWith(pp, pp.cancelled(), true, nil, nil)
		pp.answers <- Answer{Error: &RPCError{Code: CodeRequestCancelled, Message: "permhost: the answer could be another request's"}}
	}
	if a.reply != nil {
		_ = p.toClient.messageInOrder(a.reply)
	}
	if a.cancel != nil {
		p.cancelSession(a.cancel)
	}
	if a.cancelCall != nil {
		p.cancelToolCall(a.cancelCall)
	}
}

func (p *Proxy) slowHandler() {
	p.log.Warn("the permission handler is slow to relay the client's answer; forwarding the client's later messages meanwhile")
}

// clientBatch takes a batch element by element through clientMessage and
// forwards what is left as a batch, in order: answers to permission
// requests take their places as slots, dropped answers leave theirs.
func (p *Proxy) clientBatch(r *lineReader, line, body []byte, d decoded) {
	var (
		parts   []batchPart
		actions []clientAction
		changed bool
	)
	for _, e := range d.elems {
		a := p.clientMessage(e, decode(e))
		actions = append(actions, a)
		switch {
		case a.drop:
			changed = true
		case a.slot != nil:
			parts, changed = append(parts, batchPart{slot: a.slot}), true
		case a.replace != nil:
			parts, changed = append(parts, batchPart{raw: a.replace}), true
		default:
			parts = append(parts, batchPart{raw: bytes.Clone(e)})
		}
	}
	switch {
	case !changed:
		_ = r.forwardNow(p.toAgent)
	case len(parts) > 0:
		_ = p.toAgent.placeBatch(&batchOut{parts: parts, term: bytes.Clone(line[len(body):])}, p.slowHandler)
	}
	for _, a := range actions {
		p.afterClient(a)
	}
}

// clientMessage handles one client message (a line or a batch element):
// what names a held or refused session waits or is refused (gate.go),
// requests become pending (the version gate, session state), answers to
// permission requests go to their handlers, session/cancel cancels.
func (p *Proxy) clientMessage(body []byte, d decoded) clientAction {
	if a, took := p.gateClient(body, d); took {
		return a
	}
	return p.clientMessageUngated(body, d)
}

// clientMessageUngated is clientMessage past the gate: a released
// session's messages come here in order.
func (p *Proxy) clientMessageUngated(body []byte, d decoded) clientAction {
	switch d.kind {
	case kindBlank:
	case kindBatch:
		p.log.Warn("the client sent a nested batch; forwarding it as it is")
	case kindInvalid:
		if p.mayBeAnswer(body) {
			p.log.Warn("dropped a client line that may answer a permission request but cannot be read one way only", "err", d.err, "bytes", len(body))
			return clientAction{drop: true}
		}
		p.logInvalid("client", body, d.err)
	case kindRequest:
		return p.clientRequest(d, body)
	case kindNotification:
		if d.method == MethodSessionCancel {
			return clientAction{cancel: bytes.Clone(d.params)}
		}
	case kindResponse:
		return p.clientResponse(d, body)
	}
	return clientAction{}
}

// clientRequest records a client request as pending; initialize may be
// rewritten, and a request the agent can no longer answer is answered here.
func (p *Proxy) clientRequest(d decoded, body []byte) clientAction {
	r := clientRequest{id: bytes.Clone(d.id), method: d.method}
	var a clientAction
	switch d.method {
	case MethodInitialize:
		a.replace = p.clientInitialize(d, body)
	case MethodSessionNew, MethodSessionLoad, MethodSessionResume, MethodSessionFork, MethodSessionSetMode, MethodSessionSetConfigOption:
		if d.strict == nil {
			r.params = bytes.Clone(d.params)
		}
	}
	if refuse := p.governClientRequest(d); refuse != nil {
		return clientAction{drop: true, reply: errorLine(r.id, refuse.Code, refuse.Message)}
	}
	p.mu.Lock()
	if p.agentGone {
		desc := p.exitDesc
		p.mu.Unlock()
		return clientAction{drop: true, reply: errorLine(r.id, CodeInternalError, "permhost: "+desc)}
	}
	if p.ownIDInUseLocked(idKey(r.id)) {
		p.mu.Unlock()
		p.log.Warn("refused a client request whose id is one of permhost's own", "id", idKey(r.id))
		return clientAction{drop: true, reply: errorLine(r.id, CodeInvalidRequest, "permhost: this request id is in use by permhost; use another")}
	}
	if refuse := p.admitStartLocked(r.method, r.params); refuse != nil {
		p.mu.Unlock()
		p.log.Error("refused a new session: the connection has started as many as permhost governs", "method", r.method)
		return clientAction{drop: true, reply: errorLine(r.id, refuse.Code, refuse.Message)}
	}
	if p.gov != nil && (r.method == MethodSessionLoad || r.method == MethodSessionResume) {
		// The client knows the id already: what it sends for the session
		// waits until the Governor has seen the agent's result.
		if f, ok := fields(r.params, "sessionId"); ok {
			r.gated = p.holdStart(stringOf(f["sessionId"]))
		}
	}
	p.seq++
	r.seq = p.seq
	p.pending[idKey(r.id)] = r
	p.mu.Unlock()
	if d.method == MethodToolCallCancel {
		a.cancelCall = bytes.Clone(d.params)
	}
	return a
}

// governClientRequest shows the Governor the client's mode switches; a
// refusal answers the client instead of forwarding.
func (p *Proxy) governClientRequest(d decoded) (refuse *RPCError) {
	if p.gov == nil || (d.method != MethodSessionSetMode && d.method != MethodSessionSetConfigOption) {
		return nil
	}
	cr := &ClientRequest{Method: d.method}
	if d.strict != nil {
		cr.Suspicious = suspicion(d.strict)
	} else {
		cr.Params = bytes.Clone(d.params)
		if f, ok := fields(d.params, "sessionId"); ok {
			cr.Session = p.state.info(stringOf(f["sessionId"]))
		} else {
			cr.Suspicious = "params do not decode"
		}
	}
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("the governor panicked on the client's "+d.method+"; refusing it", "panic", fmt.Sprint(v))
			refuse = &RPCError{Code: CodeInternalError, Message: "permhost: internal error governing " + d.method}
		}
	}()
	return p.gov.ClientRequest(cr)
}

// clientInitialize records clientInfo (v2: info) and, for a protocolVersion
// above ProtocolVersion in a v1-shaped body, returns the message with
// ProtocolVersion instead: the one client→agent rewrite. A v2-shaped body
// goes as it is, and the version it asks for (up to MaxProtocolVersion)
// is what the agent's answer may be. nil leaves the message as it is.
func (p *Proxy) clientInitialize(d decoded, body []byte) []byte {
	if d.strict != nil {
		p.log.Warn("the client's initialize is not strict JSON; forwarding it as it is", "err", d.strict)
		return nil
	}
	f, ok := fields(d.params, "protocolVersion", "clientInfo", "info")
	if !ok {
		return nil
	}
	p.state.setClient(peerOf(f["clientInfo"]))
	v, ok := intValue(f["protocolVersion"])
	if ok && v2Initialize(d.params, v) {
		// A v2 initialize goes as it is (acp/v2.go).
		p.state.setClient(peerOf(f["info"]))
		p.state.setRequested(int(min(v, MaxProtocolVersion)))
		return nil
	}
	if !ok || v <= ProtocolVersion {
		return nil
	}
	ms, _ := jsontext.Object(d.params)
	var vs, ve int
	for _, m := range ms {
		if m.Key == "protocolVersion" {
			vs, ve = m.Offset, m.Offset+len(m.Value)
		}
	}
	ps := d.paramsAt
	out := make([]byte, 0, len(body))
	out = append(out, body[:ps+vs]...)
	out = strconv.AppendInt(out, ProtocolVersion, 10)
	out = append(out, body[ps+ve:]...)
	p.log.Info("client asked for a newer ACP protocol version; asking the agent for version 1", "requested", v)
	return out
}

// clientResponse routes a client response: an answer to a permission
// request permhost forwarded and awaits goes to its handler, and the
// agent's answer gets its place; any other answer to a permission request
// (a second one, one to a request not forwarded yet, one to a request
// already answered, or to an id permhost never forwarded that reads as a
// permission answer) is dropped and logged. Other responses pass.
func (p *Proxy) clientResponse(d decoded, body []byte) clientAction {
	if oc, ours := p.ownAnswer(p.ownClient, &p.ownLateClient, d, body); ours {
		if oc != nil {
			oc.deliver(d, body)
		}
		return clientAction{drop: true}
	}
	key := idKey(d.id)
	p.mu.Lock()
	defer p.mu.Unlock()
	pp := p.perms[key]
	if pp == nil && p.agentOut.has(key) {
		// The answer to a request forwarded as it is, even under the id
		// of a permission request answered before: it passes.
		p.agentOut.remove(key)
		return clientAction{}
	}
	if pp == nil || pp.state != stateAsked {
		p.withdrawn.remove(key) // the late answer came
	}
	switch {
	case pp != nil && pp.state == stateAsked && pp.ambiguous:
		// The agent reused the id while the client could still answer the
		// older request: this answer could be either's (the older one was
		// answered cancelled when the id was reused). The client may still
		// answer the other one, this one if the answer was the older's:
		// this one is withdrawn too (queued under p.mu, as every request
		// and withdrawal of an intercepted one is), and the id stays in
		// use until that answer comes, so that the client is never shown
		// another request under it meanwhile. The withdrawn count keeps
		// it: it counted the older one, and one of the two is answered.
		// A client that answers one of them twice would make that count
		// lie, so the id stays confused: a later request under it is
		// ambiguous too.
		pp.moveLocked(stateAnswered)
		pp.read = true
		p.confused.add(key)
		_ = p.toClient.messageInOrder(notificationLine(MethodCancelRequest, cancelParams(pp.req.ID)))
		p.log.Warn("the client's answer under a reused id could belong to either request; the agent gets cancelled for both", "id", key, "method", pp.method())
		return clientAction{drop: true, neither: pp}
	case pp != nil && pp.state == stateAsked:
		pp.moveLocked(stateAnswered)
		pp.read = true
		a := Answer{Line: bytes.Clone(body)}
		if d.result != nil && !jsontext.IsNull(d.result) {
			a.Result = bytes.Clone(d.result)
		}
		if d.error != nil {
			a.Error = decodeRPCError(d.error)
		}
		if pp.sessionCancelled && pp.areq == nil {
			a = afterSessionCancel(d.id, a)
		}
		pp.slot = p.toAgent.newSlot()
		return clientAction{slot: pp.slot, answer: pp, ans: a}
	case pp != nil && !pp.asked:
		p.log.Warn("dropped the client's answer to a permission request permhost has not forwarded", "id", key)
	case pp != nil:
		p.log.Warn("dropped a second answer, or a late one, to a permission request", "id", key)
	case p.answered.has(key):
		p.log.Warn("dropped the client's answer to a permission request already answered", "id", key)
	case looksLikePermissionResult(d.result):
		p.log.Warn("dropped a permission answer to an id permhost did not forward", "id", key)
	default:
		return clientAction{}
	}
	return clientAction{drop: true}
}

// mayBeAnswer reports whether a client line that cannot be read one way
// only may answer a permission request: an id it may carry is one of the
// agent's permission requests, or it names an outcome.
func (p *Proxy) mayBeAnswer(body []byte) bool {
	ids := recoverIDs(body)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		k := idKey(id)
		if p.perms[k] != nil || p.answered.has(k) {
			return true
		}
	}
	return jsontext.MentionsFold(body, "outcome")
}

// looksLikePermissionResult reports whether a result has an outcome member
// in any spelling.
func looksLikePermissionResult(result []byte) bool {
	ms, err := jsontext.Members(result)
	if err != nil {
		return false
	}
	for _, m := range ms {
		if len(m.Key) < 32 && jsontext.FoldEqual(m.Key, "outcome") {
			return true
		}
	}
	return false
}

func decodeRPCError(raw []byte) *RPCError {
	f, ok := fields(raw, "code", "message", "data")
	code, okCode := intValue(f["code"])
	if !ok || !okCode {
		return &RPCError{Code: CodeInternalError, Message: "malformed error object", Data: bytes.Clone(raw)}
	}
	return &RPCError{Code: int(code), Message: stringOf(f["message"]), Data: bytes.Clone(f["data"])}
}

// cancelSession answers cancelled to every permission request of the
// session held by a handler; those forwarded to the client are left for the
// client to answer, and a selected answer is relayed as cancelled.
func (p *Proxy) cancelSession(params []byte) {
	f, ok := fields(params, "sessionId")
	if !ok {
		return
	}
	sessionID := stringOf(f["sessionId"])
	p.cancelHeld("session/cancel", func(pp *permission) bool { return pp.req.SessionID == sessionID })
}

// cancelHeld answers cancelled each pending request that match selects and
// that is with its handler; one the client is being asked is marked, so
// that the client's answer reaches the agent as cancelled. A request the
// client answered before the cancel keeps that answer: its slot, ahead of
// the cancel, is the handler's to fill.
func (p *Proxy) cancelHeld(why string, match func(*permission) bool) {
	var now []*permission
	p.mu.Lock()
	for _, pp := range p.perms {
		if pp.req == nil || pp.state == stateDone || pp.slot != nil || !match(pp) {
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
		p.log.Debug(why+": answering a held request cancelled", "id", pp.key, "method", pp.method())
		p.finishWith(pp, pp.cancelled(), true, nil, nil)
	}
}

// afterSessionCancel is the answer a handler sees for a permission request
// the client answered after cancelling its session: the agent gets
// cancelled whatever the client chose (finishWith), so anything but a
// cancelled answer or an error, as answer.DecodeResponse reads it, is
// handed over as cancelled (keeping the client's result _meta), and what
// the handler logs is what the agent gets.
func afterSessionCancel(id []byte, a Answer) Answer {
	r, err := answer.DecodeResponse(a.Line)
	if err == nil && (r.Error != nil || !r.Reply.Selects()) {
		return a
	}
	c := answer.Cancelled()
	if err == nil {
		c.Meta = r.Reply.Meta
	}
	return Answer{Line: answer.Encode(id, c), Result: c.Result()}
}
