package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/permhost/permhost/internal/jsontext"
)

// This file is the requests the proxy intercepts: how they are taken
// (register: an id the agent reuses), their handlers, and the Client a
// handler talks to the editor through. Their states, and the one place an
// answer for the agent is checked and encoded, are mediation.go's.

// permission is one intercepted request until the agent has its answer: a
// permission request, or (areq set) another request a Governor took over.
type permission struct {
	req    *PermissionRequest
	areq   *AgentRequest
	key    string
	ctx    context.Context
	cancel context.CancelFunc

	// Guarded by Proxy.mu.
	state permState // mediation.go: moved by moveLocked only
	// asked: Ask was called (it may be called once); read: the client's
	// answer was read (the request reached stateAnswered).
	asked, read      bool
	sessionCancelled bool
	// ambiguous: the agent reused the id of a request the client was shown
	// and may still answer; any client answer under the id could be that
	// one's, so it applies to neither.
	ambiguous bool
	// prev is the slot of the answer to an earlier request under the id,
	// which this one's answer must not overtake (the agent tells answers
	// under one id apart only by their order); nil if none.
	prev *answerSlot
	// superseded: a later request under the id took this one's place;
	// its answer is not the one a still later request follows.
	superseded bool
	answers    chan Answer // buffered 1
	// slot is the answer's place among the client's lines to the agent,
	// reserved when the client answered.
	slot *answerSlot
	// sent is the answer queued for the agent once done: what Deliver
	// returns; nil when none was (the agent went away).
	sent []byte
}

// maxAnsweredIDs bounds the record of answered permission requests whose
// late client answers are dropped: the oldest are forgotten first.
const maxAnsweredIDs = 4096

// idSet is a set of id keys bounded to its newest max entries. A counting
// one (newIDCounter) holds a key until it is removed as many times as it
// was added.
type idSet struct {
	max    int
	seq    uint64
	keys   map[string]uint64 // key -> when it was added
	order  []idEntry         // oldest first; may hold removed or re-added keys
	counts map[string]int    // a counting set's adds not removed yet, by key
}

type idEntry struct {
	key string
	seq uint64
}

func newIDSet(max int) idSet { return idSet{max: max, keys: map[string]uint64{}} }

// newIDCounter returns a counting idSet.
func newIDCounter(max int) idSet {
	s := newIDSet(max)
	s.counts = map[string]int{}
	return s
}

func (s *idSet) has(k string) bool { _, ok := s.keys[k]; return ok }

func (s *idSet) add(k string) {
	if s.has(k) {
		if s.counts != nil {
			s.counts[k]++
		}
		return
	}
	if s.counts != nil {
		s.counts[k] = 1
	}
	s.seq++
	s.keys[k] = s.seq
	s.order = append(s.order, idEntry{k, s.seq})
	for len(s.keys) > s.max && len(s.order) > 0 {
		if e := s.order[0]; s.keys[e.key] == e.seq {
			delete(s.keys, e.key)
			delete(s.counts, e.key)
		}
		s.order = s.order[1:]
	}
	if len(s.order) > 2*s.max {
		live := s.order[:0]
		for _, e := range s.order {
			if s.keys[e.key] == e.seq {
				live = append(live, e)
			}
		}
		s.order = live
	}
}

func (s *idSet) remove(k string) {
	if s.counts[k] > 1 {
		s.counts[k]--
		return
	}
	delete(s.counts, k)
	delete(s.keys, k)
}

// intercept takes an agent permission request (the message's bytes, which
// the request keeps a copy of) and returns its permission, to be started
// once the message's place is settled; nil when it was answered at once.
func (p *Proxy) intercept(body []byte) *permission {
	own := bytes.Clone(body)
	d := decode(own)
	if d.params != nil && !json.Valid(d.params) {
		// Nesting beyond encoding/json's limit: the request is well formed,
		// but what the decision pipeline reads it with cannot read it.
		p.log.Warn("failing closed: a permission request too deeply nested to decide; answering cancelled", "id", idKey(d.id), "bytes", len(body))
		_ = p.toAgent.message(cancelledOutcome().encode(d.id))
		return nil
	}
	req := p.state.permissionRequest(d, own)
	pp := p.register(req, nil, "permission request")
	p.state.markAsked(req.SessionID, req.ToolCallID)
	p.log.Debug("permission request intercepted", "id", pp.key, "session", req.SessionID, "toolCall", req.ToolCallID, "suspicious", req.Suspicious)
	return pp
}

// interceptGoverned hands the agent's request to the Governor when it
// takes it; nil leaves it to be forwarded.
func (p *Proxy) interceptGoverned(body []byte, d decoded) *permission {
	areq := p.state.agentRequest(d, body)
	if !p.callIntercepts(areq) {
		return nil
	}
	own := bytes.Clone(body)
	areq = p.state.agentRequest(decode(own), own)
	req := &PermissionRequest{ID: areq.ID, Line: own, Params: areq.Params, SessionID: areq.SessionID,
		ToolCallID: areq.ToolCallID, Session: areq.Session, Suspicious: areq.Suspicious}
	pp := p.register(req, areq, "request")
	if areq.ToolCallID != "" {
		p.state.markAsked(areq.SessionID, areq.ToolCallID)
	}
	p.log.Debug("agent request taken over", "id", pp.key, "method", areq.Method, "session", areq.SessionID)
	return pp
}

// register records the permission of an intercepted request (areq set for
// one a Governor took over) under its id. An unanswered one the agent sent
// under the same id (what names its kind) is cancelled: its handler's
// context ends, and its answer, whatever the handler gives, has a place
// reserved ahead of the new one's. If the client was shown it, it is
// withdrawn now, before the new one can be shown (its handler has not
// started), and the new one is ambiguous: a client answer under the id
// could be the old one's.
func (p *Proxy) register(req *PermissionRequest, areq *AgentRequest, what string) *permission {
	ctx, cancel := context.WithCancel(p.ctx)
	pp := &permission{req: req, areq: areq, key: idKey(req.ID), ctx: ctx, cancel: cancel, answers: make(chan Answer, 1)}
	p.mu.Lock()
	old := p.perms[pp.key]
	withdraw := old != nil && old.state == stateAsked && old.moveLocked(stateWithdrawn)
	if withdraw {
		// Its late answer is the ambiguous one.
		p.withdrawn.add(pp.key)
		_ = p.toClient.messageInOrder(notificationLine(MethodCancelRequest, cancelParams(req.ID)))
	}
	pp.ambiguous = p.withdrawn.has(pp.key) || p.confused.has(pp.key)
	pp.prev = p.answerSlots[pp.key]
	delete(p.answerSlots, pp.key)
	var reserved *answerSlot
	if old != nil {
		old.superseded = true
		// The older one's handler, cancelled, gives its answer (so that
		// what it logs is what the agent gets), in a place reserved now:
		// the newer one's answer never overtakes it.
		if old.slot == nil {
			old.slot = p.toAgent.newSlot()
			reserved = old.slot
		}
		pp.prev = old.slot
	}
	p.perms[pp.key] = pp
	p.answered.remove(pp.key)
	p.mu.Unlock()
	if old != nil {
		p.log.Warn("the agent reused the id of an unanswered "+what+"; cancelling the older one", "id", pp.key, "withdrawn", withdraw)
		if reserved != nil {
			p.toAgent.place(reserved, p.slowHandler)
		}
		old.cancel()
	}
	if pp.ambiguous {
		p.log.Warn("the agent reused the id of a request the client was shown and may still answer; a client answer under it will apply to neither", "id", pp.key)
	}
	return pp
}

// cancelParams are the params of $/cancel_request for id.
func cancelParams(id []byte) []byte {
	return append(append([]byte(`{"requestId":`), bytes.TrimSpace(id)...), '}')
}

// callIntercepts asks the Governor; a panic leaves the request to the
// client, as without a governor.
func (p *Proxy) callIntercepts(r *AgentRequest) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("the governor panicked deciding whether to take a request; forwarding it", "method", r.Method, "panic", fmt.Sprint(v))
			ok = false
		}
	}()
	return p.gov.Intercepts(r)
}

// method is the method of the intercepted request.
func (pp *permission) method() string {
	if pp.areq != nil {
		return pp.areq.Method
	}
	return MethodRequestPermission
}

// cancelled is the agent's answer to the request when it no longer needs
// one: the cancelled outcome, or for another method CodeRequestCancelled.
func (pp *permission) cancelled() outcome {
	if pp.areq != nil {
		return outcome{raw: errorLine(pp.req.ID, CodeRequestCancelled, "permhost: request cancelled")}
	}
	return cancelledOutcome()
}

func (p *Proxy) startHandler(pp *permission) {
	if pp == nil {
		return
	}
	p.wg.Add(1)
	go p.handle(pp)
}

func (p *Proxy) handle(pp *permission) {
	defer p.wg.Done()
	if pp.areq != nil {
		r, err := p.callGovernor(pp)
		p.finish(pp, p.checkedReply(pp, r, err))
		return
	}
	resp, err := p.callHandler(pp)
	o := p.checkedResponse(pp, resp, err)
	var then *OwnRequest
	if err == nil && o.raw == nil && o.err == nil && o.reply.Selects() {
		then = resp.FollowUp
	}
	p.finishWith(pp, o, false, then, nil)
}

func (p *Proxy) callGovernor(pp *permission) (r Reply, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("acp: governor panicked: %v", v)
		}
	}()
	return p.gov.AgentRequest(pp.ctx, pp.areq, &permClient{p: p, pp: pp}, caller{p})
}

func (p *Proxy) callHandler(pp *permission) (resp Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("acp: permission handler panicked: %v", r)
		}
	}()
	return p.handler.RequestPermission(pp.ctx, pp.req, &permClient{p: p, pp: pp})
}

// followUpLocked returns the line of a follow-up request of permhost's own
// (nil for none), under an id of permhost's whose answer is dropped
// quietly, as a given-up request's is: nothing waits for it; p.mu is held.
func (p *Proxy) followUpLocked(r *OwnRequest) []byte {
	if r == nil || p.agentGone {
		return nil
	}
	b, err := ownParams(r.Params)
	if err != nil {
		p.log.Warn("a follow-up of permhost's own is not sent", "method", r.Method, "err", err)
		return nil
	}
	id := p.nextOwnIDLocked(p.agentIDInUseLocked)
	p.ownLateAgent.add(idKey(id))
	p.log.Debug("sending the agent a follow-up of permhost's own", "method", r.Method, "id", string(id))
	return requestLine(id, r.Method, b)
}

// errDeliverGoverned: Deliver is for permission requests; a Governor's
// reply to a request it took over is its AgentRequest's return value.
var errDeliverGoverned = errors.New("acp: Deliver on a request a Governor took over")

// permClient is the Client of one permission request.
type permClient struct {
	p  *Proxy
	pp *permission
}

func (c *permClient) Ask(ctx context.Context, params json.RawMessage) (Answer, error) {
	p, pp := c.p, c.pp
	body := pp.req.Line
	if params != nil {
		b, err := compactJSON(params)
		if err != nil {
			return Answer{}, fmt.Errorf("acp: Ask params: %w", err)
		}
		body = requestLine(pp.req.ID, pp.method(), b)
	}
	p.mu.Lock()
	switch {
	case pp.asked:
		p.mu.Unlock()
		return Answer{}, ErrAlreadyAsked
	case pp.state == stateDone:
		p.mu.Unlock()
		return Answer{}, ErrAnswered
	case pp.superseded:
		// A later request under the id took its place (its ctx is being
		// cancelled): the client is never shown both.
		p.mu.Unlock()
		return Answer{}, context.Canceled
	case ctx.Err() != nil:
		p.mu.Unlock()
		return Answer{}, ctx.Err()
	}
	pp.asked = true
	if !pp.moveLocked(stateAsked) {
		p.mu.Unlock()
		return Answer{}, ErrAnswered
	}
	// Queued under p.mu, as register's and the withdrawal's
	// $/cancel_request are: the client never gets the request after its
	// withdrawal.
	if err := p.toClient.messageInOrder(body); err != nil {
		pp.moveLocked(stateWithdrawn) // never shown: nothing to withdraw
		p.mu.Unlock()
		return Answer{}, err
	}
	p.mu.Unlock()
	select {
	case a := <-pp.answers:
		return a, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	if pp.state == stateAsked && pp.moveLocked(stateWithdrawn) {
		// Its late answer is dropped.
		p.withdrawn.add(pp.key)
		_ = p.toClient.messageInOrder(notificationLine(MethodCancelRequest, cancelParams(pp.req.ID)))
	}
	received := pp.read
	p.mu.Unlock()
	if received {
		// The client's answer was read before the withdrawal could take:
		// it is the answer (it reaches pp.answers once its place among
		// the client's lines is settled), whichever of the two select saw.
		return <-pp.answers, nil
	}
	p.mu.Lock()
	sessionCancelled := pp.sessionCancelled && pp.areq == nil
	p.mu.Unlock()
	if sessionCancelled {
		// The session was cancelled while the client was asked: the agent
		// gets cancelled whatever the handler decides now (finishWith),
		// so it is answered now and the handler's context says so.
		p.finish(pp, pp.cancelled())
	}
	return Answer{}, ctx.Err()
}

func (c *permClient) Deliver(r Response, record func(sent []byte)) error {
	p, pp := c.p, c.pp
	if pp.areq != nil {
		return errDeliverGoverned
	}
	o := p.checkedResponse(pp, r, nil)
	var then *OwnRequest
	if o.raw == nil && o.err == nil && o.reply.Selects() {
		then = r.FollowUp
	}
	var sent []byte
	p.finishWith(pp, o, false, then, func(line []byte) {
		sent = line
		if record != nil {
			record(bytes.Clone(line))
		}
	})
	if sent == nil {
		return ErrAnswered
	}
	return nil
}

func (c *permClient) Notify(method string, params json.RawMessage) error {
	var b []byte
	if params != nil {
		var err error
		if b, err = compactJSON(params); err != nil {
			return fmt.Errorf("acp: Notify params: %w", err)
		}
	}
	return c.p.toClient.messageInOrder(notificationLine(method, b))
}

// peerOf reads an agentInfo or clientInfo object strictly.
func peerOf(raw []byte) Peer {
	var pr Peer
	f, ok := fields(raw, "name", "title", "version")
	if !ok {
		return pr
	}
	pr.Name, pr.Title, pr.Version = stringOf(f["name"]), stringOf(f["title"]), stringOf(f["version"])
	pr.Info = json.RawMessage(bytes.Clone(raw))
	return pr
}

// suspicion says why a jsontext error makes a message suspicious.
func suspicion(err error) string {
	var e *jsontext.Error
	switch {
	case errors.As(err, &e) && errors.Is(err, jsontext.ErrDuplicateKey):
		return fmt.Sprintf("duplicate key %q", e.Key)
	case errors.As(err, &e) && errors.Is(err, jsontext.ErrUnknownKey):
		return fmt.Sprintf("key %q differs from a known key only in case", e.Key)
	case errors.Is(err, jsontext.ErrInvalidUTF8):
		return "invalid UTF-8"
	}
	return "params do not decode: " + err.Error()
}
