package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/permhost/permhost/internal/jsontext"
)

// This file is the session gate: with a Governor, a session is promptable
// only while governed. From the client's session/load or session/resume
// (whose id the client knows before the agent answers), or the agent's
// result of session/new or session/fork, until the Governor has returned
// from SessionStart, and while the Governor holds the session (a switch
// back under way), every client request and notification naming the
// session waits, in order; once released they are forwarded in that order.
// A session the Governor refused keeps its refusal: every later request
// naming it is answered with it and nothing for it reaches the agent but
// the client's session/cancel, which only stops work (the agent may be
// running in a mode that decides by itself).
//
// Sessions started on the connection are remembered, never forgotten:
// past Options.MaxGovernedSessions a new session is refused before it
// reaches the agent.

// DefaultMaxGovernedSessions is the number of sessions a proxy with a
// Governor lets a connection start.
const DefaultMaxGovernedSessions = 4096

// MethodSessionFork starts a session from another: its result is a session
// start as session/new's is.
const MethodSessionFork = "session/fork"

// gate is one switching or refused session (mediation.go's
// sessionState); a started session with none is governed, a session never
// started is new.
type gate struct {
	state    sessionState // sessionSwitching or sessionRefused
	holds    int          // a start awaiting the Governor, the Governor's Holds
	queue    [][]byte     // the client's messages naming the session, in order
	draining bool         // a goroutine is forwarding queue
	refuse   *RPCError    // the refusal, once refused
}

// gates is the proxy's record of the sessions a Governor steers.
type gates struct {
	mu      sync.Mutex
	held    map[string]*gate    // switching or refused sessions
	started map[string]struct{} // every session started on the connection
	max     int
}

// stateLocked returns session id's state; g.mu is held.
func (g *gates) stateLocked(id string) sessionState {
	if s := g.held[id]; s != nil {
		return s.state
	}
	if _, ok := g.started[id]; ok {
		return sessionGoverned
	}
	return sessionNew
}

// moveLocked moves session id to state to if mediation.go's table allows
// it, and returns its gate (nil once governed) and whether it moved;
// g.mu is held. Governed, its gate goes: what the client sends passes.
func (g *gates) moveLocked(id string, to sessionState) (*gate, bool) {
	from := g.stateLocked(id)
	s := g.held[id]
	if !from.canMove(to) {
		return s, false
	}
	switch {
	case to == sessionGoverned:
		delete(g.held, id)
		return nil, true
	case s == nil:
		s = &gate{}
		g.held[id] = s
	}
	s.state = to
	return s, true
}

func newGates(max int) *gates {
	if max == 0 {
		max = DefaultMaxGovernedSessions
	}
	return &gates{held: map[string]*gate{}, started: map[string]struct{}{}, max: max}
}

// namedSession returns the session a client message names: params.sessionId
// read strictly; for a message that is not strict JSON, any held or
// refused session whose id it mentions, escapes decoded (it may read as
// that session in the agent's parser).
func (p *Proxy) namedSession(body []byte, d decoded) (string, bool) {
	if d.strict == nil {
		f, ok := fields(d.params, "sessionId")
		if !ok || f["sessionId"] == nil {
			return "", false
		}
		id := stringOf(f["sessionId"])
		return id, id != ""
	}
	var lenient struct {
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &lenient)
	g := p.gates
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.held[lenient.Params.SessionID]; ok {
		return lenient.Params.SessionID, true
	}
	for id := range g.held {
		if id != "" && mentionsID(body, id) {
			return id, true
		}
	}
	return "", false
}

// mentionsID reports whether body mentions id, escapes decoded.
func mentionsID(body []byte, id string) bool {
	for i := 0; i < len(id); i++ {
		if id[i] >= 0x80 {
			return bytes.Contains(body, []byte(id))
		}
	}
	return jsontext.Mentions(body, id)
}

// gateClient holds or refuses a client request or notification naming a
// held or refused session; it reports whether it took the message.
func (p *Proxy) gateClient(body []byte, d decoded) (clientAction, bool) {
	if p.gov == nil || (d.kind != kindRequest && d.kind != kindNotification) {
		return clientAction{}, false
	}
	id, ok := p.namedSession(body, d)
	if !ok {
		return clientAction{}, false
	}
	g := p.gates
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.held[id]
	switch {
	case s == nil:
		return clientAction{}, false
	case s.state == sessionRefused:
		if passesRefusal(d) {
			return clientAction{}, false
		}
		if d.kind == kindNotification {
			p.log.Warn("dropped the client's notification for a session permhost refused", "method", d.method, "session", id)
			return clientAction{drop: true}, true
		}
		p.log.Warn("refused the client's request for a session permhost refused", "method", d.method, "session", id)
		return clientAction{drop: true, reply: errorLine(bytes.Clone(d.id), s.refuse.Code, s.refuse.Message)}, true
	}
	if passesRefusal(d) && !queuedPrompt(s.queue) {
		// The stop button is not held behind permhost's own switch: the
		// agent may be running a turn in the deciding mode it moved to.
		// Behind a held prompt it waits, so as to stop that prompt too.
		p.log.Debug("session/cancel passes a session being switched", "session", id)
		return clientAction{}, false
	}
	s.queue = append(s.queue, bytes.Clone(body))
	p.log.Debug("holding the client's message until the session is governed", "method", d.method, "session", id)
	return clientAction{drop: true}, true
}

// queuedPrompt reports whether a session/prompt request waits in queue.
func queuedPrompt(queue [][]byte) bool {
	for _, body := range queue {
		if d := decode(body); d.kind == kindRequest && d.method == MethodSessionPrompt {
			return true
		}
	}
	return false
}

// passesRefusal reports whether a client message naming a refused
// session still reaches the agent: only the session/cancel notification.
// Stopping a session permhost could not govern is what a person wants
// most, since the agent may be running in a mode that decides by itself.
func passesRefusal(d decoded) bool {
	return d.kind == kindNotification && d.method == MethodSessionCancel
}

// admitStart refuses a client's session/new, load, resume or fork past
// the bound on sessions; p.mu is held.
func (p *Proxy) admitStartLocked(method string, params []byte) *RPCError {
	if p.gov == nil || !isSessionStart(method) {
		return nil
	}
	g := p.gates
	g.mu.Lock()
	defer g.mu.Unlock()
	if method == MethodSessionLoad || method == MethodSessionResume {
		if f, ok := fields(params, "sessionId"); ok {
			if _, known := g.started[stringOf(f["sessionId"])]; known {
				return nil
			}
		}
	}
	n := len(g.started)
	for _, r := range p.pending {
		if isSessionStart(r.method) {
			n++
		}
	}
	if n < g.max {
		return nil
	}
	return &RPCError{Code: CodePolicyRefused, Message: fmt.Sprintf(
		"permhost: this connection has started %d sessions, as many as permhost governs on one connection: start the agent again for new sessions", g.max)}
}

// holdStart holds session id while its start is governed; it returns id
// for the release.
func (p *Proxy) holdStart(id string) string {
	if p.gov == nil || id == "" {
		return ""
	}
	g := p.gates
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.moveLocked(id, sessionSwitching); ok {
		s.holds++
	}
	g.started[id] = struct{}{}
	return id
}

// release ends one hold of session id: with refuse set the session is
// refused for good and what waits is answered with it; once no hold is
// left, what waits is forwarded in order.
func (p *Proxy) release(id string, refuse *RPCError) {
	if id == "" {
		return
	}
	g := p.gates
	g.mu.Lock()
	s := g.held[id]
	if s == nil || s.state != sessionSwitching || s.holds == 0 {
		g.mu.Unlock()
		return
	}
	s.holds--
	if refuse != nil {
		g.moveLocked(id, sessionRefused)
		s.refuse = refuse
		q := s.queue
		s.queue = nil
		g.mu.Unlock()
		for _, body := range q {
			d := decode(body)
			switch {
			case passesRefusal(d):
				_ = p.toAgent.forward(append(body, '\n'), nil)
			case d.kind == kindRequest:
				_ = p.toClient.messageInOrder(errorLine(d.id, refuse.Code, refuse.Message))
			}
		}
		return
	}
	if s.holds > 0 || s.draining {
		g.mu.Unlock()
		return
	}
	s.draining = true
	g.mu.Unlock()
	p.drain(id, s)
}

// drain forwards a released session's messages in order. The gate stays
// until the last is forwarded, so that the client's later messages queue
// behind them rather than overtake them.
func (p *Proxy) drain(id string, s *gate) {
	g := p.gates
	for {
		g.mu.Lock()
		if s.holds > 0 || s.state != sessionSwitching {
			s.draining = false
			g.mu.Unlock()
			return
		}
		if len(s.queue) == 0 {
			g.moveLocked(id, sessionGoverned)
			g.mu.Unlock()
			return
		}
		body := s.queue[0]
		s.queue = s.queue[1:]
		g.mu.Unlock()
		a := p.clientMessageUngated(body, decode(body))
		switch {
		case a.drop:
		case a.slot != nil:
			p.toAgent.place(a.slot, p.slowHandler)
		case a.replace != nil:
			_ = p.toAgent.forward(append(a.replace, '\n'), nil)
		default:
			_ = p.toAgent.forward(append(body, '\n'), nil)
		}
		p.afterClient(a)
	}
}

// gatesAgentGone answers the requests still held: the agent is gone.
func (p *Proxy) gatesAgentGone(desc string) {
	g := p.gates
	g.mu.Lock()
	var q [][]byte
	for id, s := range g.held {
		if s.state != sessionRefused {
			q = append(q, s.queue...)
			delete(g.held, id) // later requests meet the agent's end
		}
	}
	g.mu.Unlock()
	for _, body := range q {
		if d := decode(body); d.kind == kindRequest {
			_ = p.toClient.messageInOrder(errorLine(d.id, CodeInternalError, "permhost: "+desc+" before answering "+d.method))
		}
	}
}

// Hold holds the client's messages naming a session until release: see
// Caller.
func (c caller) Hold(sessionID string) func(refuse *RPCError) {
	id := c.p.holdStart(sessionID)
	var once sync.Once
	return func(refuse *RPCError) { once.Do(func() { c.p.release(id, refuse) }) }
}
