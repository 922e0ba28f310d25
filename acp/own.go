package acp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/permhost/permhost/internal/jsontext"
)

// This file is the requests permhost sends on its own (a Governor's
// Caller): their ids, which no peer request may share, and their pending
// tables, one per direction, whose answers never reach the other peer.

// ownCall is one request of permhost's own awaiting its answer.
type ownCall struct {
	method  string
	params  []byte // kept for the state a successful answer teaches
	answers chan Answer
}

// nextOwnIDLocked returns a new id of permhost's own: "permhost-" and 128
// bits from crypto/rand, drawn afresh for each id, so that no id a peer
// sees tells it another (with a tag and a counter, the agent that saw the
// ids of permhost's mode switches could name the pending prompt the editor
// was shown). The prefix only names the id's origin in logs: what is
// permhost's is what its tables hold, and inUse (whatever either peer
// has outstanding under that id) is never chosen; p.mu is held.
func (p *Proxy) nextOwnIDLocked(inUse func(key string) bool) []byte {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		id := jsontext.Quote("permhost-" + hex.EncodeToString(b[:]))
		if !inUse(idKey(id)) {
			return id
		}
	}
}

// caller is the Caller the proxy hands its Governor.
type caller struct{ p *Proxy }

func (c caller) Agent(ctx context.Context, method string, params json.RawMessage) (Answer, error) {
	p := c.p
	b, err := ownParams(params)
	if err != nil {
		return Answer{}, err
	}
	oc := &ownCall{method: method, params: b, answers: make(chan Answer, 1)}
	p.mu.Lock()
	if p.agentGone {
		p.mu.Unlock()
		return Answer{}, ErrClosed
	}
	id := p.nextOwnIDLocked(p.agentIDInUseLocked)
	key := idKey(id)
	p.ownAgent[key] = oc
	p.mu.Unlock()
	if err := p.toAgent.message(requestLine(id, method, b)); err != nil {
		p.dropOwn(p.ownAgent, key, nil)
		return Answer{}, err
	}
	select {
	case a := <-oc.answers:
		return a, nil
	case <-p.agentDone:
		p.dropOwn(p.ownAgent, key, nil)
		return Answer{}, ErrClosed
	case <-ctx.Done():
		p.dropOwn(p.ownAgent, key, &p.ownLateAgent)
		return Answer{}, ctx.Err()
	}
}

func (c caller) Client(ctx context.Context, method string, params json.RawMessage) (Answer, error) {
	p := c.p
	b, err := ownParams(params)
	if err != nil {
		return Answer{}, err
	}
	oc := &ownCall{method: method, answers: make(chan Answer, 1)}
	p.mu.Lock()
	id := p.nextOwnIDLocked(p.clientIDInUseLocked)
	key := idKey(id)
	p.ownClient[key] = oc
	p.mu.Unlock()
	// Permhost's own prompt takes the priority lane: ahead of the agent's
	// lines held behind a slot (a session's start the Governor holds),
	// which it does not depend on.
	if err := p.toClient.message(requestLine(id, method, b)); err != nil {
		p.dropOwn(p.ownClient, key, nil)
		return Answer{}, err
	}
	select {
	case a := <-oc.answers:
		return a, nil
	case <-p.clientGone:
		p.dropOwn(p.ownClient, key, nil)
		return Answer{}, ErrClosed
	case <-ctx.Done():
	}
	if !p.dropOwn(p.ownClient, key, &p.ownLateClient) {
		// The client's answer was read before ctx was done: it is on its
		// way to oc.answers (see permClient.Ask).
		return <-oc.answers, nil
	}
	_ = p.toClient.message(notificationLine(MethodCancelRequest, cancelParams(id)))
	return Answer{}, ctx.Err()
}

func (c caller) Notify(method string, params json.RawMessage) error {
	b, err := ownParams(params)
	if err != nil {
		return err
	}
	return c.p.toClient.messageInOrder(notificationLine(method, b))
}

func (c caller) CancelSession(sessionID string) error {
	params, err := marshalNoEscape(map[string]string{"sessionId": sessionID})
	if err != nil {
		return err
	}
	if err := c.p.toAgent.message(notificationLine(MethodSessionCancel, params)); err != nil {
		return err
	}
	c.p.cancelSession(params)
	return nil
}

// ownParams checks and compacts the params of a message of permhost's own.
func ownParams(params json.RawMessage) ([]byte, error) {
	if params == nil {
		return nil, nil
	}
	b, err := compactJSON(params)
	if err != nil {
		return nil, fmt.Errorf("acp: params of permhost's own message: %w", err)
	}
	return b, nil
}

// dropOwn forgets a pending call of permhost's own; with late set, a later
// answer to it is dropped quietly. It reports whether the call was still
// pending.
func (p *Proxy) dropOwn(table map[string]*ownCall, key string, late *idSet) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := table[key]
	delete(table, key)
	if ok && late != nil {
		late.add(key)
	}
	return ok
}

// ownAnswer takes a response to one of permhost's own requests out of
// table; it reports whether the response was one (the caller then drops
// it). oc is nil for a late answer to a request given up.
func (p *Proxy) ownAnswer(table map[string]*ownCall, late *idSet, d decoded, body []byte) (oc *ownCall, ours bool) {
	key := idKey(d.id)
	p.mu.Lock()
	defer p.mu.Unlock()
	if oc = table[key]; oc != nil {
		delete(table, key)
		return oc, true
	}
	if late.has(key) {
		late.remove(key)
		return nil, true
	}
	return nil, false
}

// deliver hands a response to the caller waiting for it.
func (oc *ownCall) deliver(d decoded, body []byte) {
	a := Answer{Line: bytes.Clone(body)}
	if d.result != nil && !jsontext.IsNull(d.result) {
		a.Result = bytes.Clone(d.result)
	}
	if d.error != nil {
		a.Error = decodeRPCError(d.error)
	}
	oc.answers <- a
}

// ownIDInUse reports whether key is one of permhost's ids towards the
// agent (pending or given up); p.mu is held.
func (p *Proxy) ownIDInUseLocked(key string) bool {
	_, ok := p.ownAgent[key]
	return ok || p.ownLateAgent.has(key)
}

// ownClientIDLocked reports whether key is one of permhost's ids towards
// the client (pending or given up, its answer possibly still coming);
// p.mu is held.
func (p *Proxy) ownClientIDLocked(key string) bool {
	_, ok := p.ownClient[key]
	return ok || p.ownLateClient.has(key)
}

// agentIDInUseLocked reports whether the agent may take key for a request
// of permhost's own: no client request awaits the agent under it; p.mu is
// held.
func (p *Proxy) agentIDInUseLocked(key string) bool {
	_, ok := p.pending[key]
	return ok || p.ownIDInUseLocked(key)
}

// clientIDInUseLocked reports whether the client has a request outstanding
// under key, or may still answer one: permhost's own, the agent's
// intercepted ones (pending, or withdrawn with their answer still to
// come) and those forwarded as they are; p.mu is held.
func (p *Proxy) clientIDInUseLocked(key string) bool {
	return p.ownClientIDLocked(key) || p.perms[key] != nil || p.withdrawn.has(key) || p.agentOut.has(key)
}
