package acp

import (
	"bytes"
	"fmt"
	"io"

	"github.com/permhost/permhost/internal/jsontext"
)

// This file is the agent→client direction: every agent line, and every
// element of an agent batch, goes through agentMessage.

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
		if r.fast.plain(line) {
			_ = r.forwardTo(p.toClient)
			continue
		}
		r.flush(false) // what was forwarded so far goes first
		if err := p.fromAgent(r, line); err != nil {
			return err
		}
	}
}

// agentAction is what becomes of one agent message.
type agentAction struct {
	drop    bool        // not forwarded: intercepted, or failed closed
	replace []byte      // forwarded as this message of permhost's own instead
	start   *permission // its handler starts once the message is queued
	hold    *heldStart  // a session's start: the Governor's answer takes its place
	stop    error       // the proxy stops once the message is queued
}

// fromAgent handles one agent line that is not a plain session/update.
func (p *Proxy) fromAgent(r *lineReader, line []byte) error {
	body := trimEOL(line)
	d := decode(body)
	if d.kind == kindBatch {
		return p.agentBatch(r, line, body, d)
	}
	a := p.agentMessage(body, d)
	switch {
	case a.drop:
	case a.hold != nil:
		p.toClient.place(a.hold.slot, nil)
	case a.replace != nil:
		_ = p.toClient.messageInOrder(a.replace)
	default:
		_ = r.forwardNow(p.toClient)
	}
	p.startHandler(a.start)
	p.startHold(a.hold)
	return a.stop
}

// agentBatch takes a batch element by element through agentMessage and
// forwards what is left as a batch, in order (permission requests leave
// it, to be forwarded on their own lines if a handler asks the client). The
// handlers start once the batch is queued, so a request never overtakes an
// element before it.
func (p *Proxy) agentBatch(r *lineReader, line, body []byte, d decoded) error {
	var (
		parts   []batchPart
		actions []agentAction
		changed bool
		stop    error
	)
	for _, e := range d.elems {
		a := p.agentMessage(e, decode(e))
		actions = append(actions, a)
		switch {
		case a.drop:
			changed = true
		case a.hold != nil:
			parts, changed = append(parts, batchPart{slot: a.hold.slot}), true
		case a.replace != nil:
			parts, changed = append(parts, batchPart{raw: a.replace}), true
		default:
			parts = append(parts, batchPart{raw: bytes.Clone(e)})
		}
		if a.stop != nil && stop == nil {
			stop = a.stop
		}
	}
	switch {
	case !changed:
		_ = r.forwardNow(p.toClient)
	case len(parts) > 0:
		p.log.Info("forwarding an agent batch without the elements permhost answered", "elements", len(d.elems), "forwarded", len(parts))
		_ = p.toClient.placeBatch(&batchOut{parts: parts, term: bytes.Clone(line[len(body):])}, nil)
	}
	for _, a := range actions {
		p.startHandler(a.start)
		p.startHold(a.hold)
	}
	return stop
}

// agentMessage handles one agent message: permission requests are
// intercepted, session state is learned, responses clear the client's
// pending requests (initialize through the version gate), and anything that
// may be a permission request but cannot be read one way only fails closed.
func (p *Proxy) agentMessage(body []byte, d decoded) agentAction {
	switch d.kind {
	case kindBlank:
	case kindBatch:
		if jsontext.Mentions(body, permissionWord) {
			p.log.Warn("dropped a nested batch from the agent that names a permission request", "bytes", len(body))
			return agentAction{drop: true}
		}
	case kindInvalid:
		if mayBePermission(body, d) {
			p.failClosed(body, d.err)
			return agentAction{drop: true}
		}
		p.logInvalid("agent", body, d.err)
	case kindRequest:
		if !p.agentIDFree(d, false) {
			return agentAction{drop: true}
		}
		if d.method == MethodRequestPermission {
			return agentAction{drop: true, start: p.intercept(body)}
		}
		if p.gov != nil {
			if pp := p.interceptGoverned(body, d); pp != nil {
				return agentAction{drop: true, start: pp}
			}
		}
		if !p.agentIDFree(d, true) {
			return agentAction{drop: true}
		}
	case kindNotification:
		switch d.method {
		case MethodRequestPermission:
			p.log.Warn("dropped a session/request_permission without an id: it cannot be answered", "bytes", len(body))
			return agentAction{drop: true}
		case MethodSessionUpdate:
			if d.strict == nil {
				if u := p.trackUpdate(d.params); u != nil && p.gov != nil {
					u.Session = p.state.info(u.SessionID)
					u.Loading = p.loading(u.SessionID)
					p.callUpdate(u)
				}
			}
		case MethodCancelRequest:
			return agentAction{drop: p.agentCancelRequest(d.params)}
		}
	case kindResponse:
		return p.agentResponse(body, d)
	}
	return agentAction{}
}

// agentIDFree checks the id of an agent request against what the client
// has outstanding, so that the client never has two requests under one id
// and never answers one for another: a request under an id of permhost's
// own requests to the client (pending, or given up with its answer still
// to come), or of a request of the agent's forwarded as it is and not yet
// answered, is refused with an error and never forwarded. With forward
// set (a request to be forwarded as it is), the agent's intercepted
// requests count too, and the request is recorded as outstanding. An
// intercepted request reusing the id of an intercepted one is register's.
func (p *Proxy) agentIDFree(d decoded, forward bool) bool {
	key := idKey(d.id)
	p.mu.Lock()
	clash := p.ownClientIDLocked(key) || p.agentOut.has(key) || forward && (p.perms[key] != nil || p.withdrawn.has(key))
	if !clash && forward {
		p.agentOut.add(key)
	}
	p.mu.Unlock()
	if clash {
		p.log.Warn("refused an agent request whose id the client has outstanding already", "id", key, "method", d.method)
		_ = p.toAgent.message(errorLine(d.id, CodeInvalidRequest, "permhost: this request id is in use towards the client; use another"))
	}
	return !clash
}

// failClosed answers cancelled to what may be a permission request permhost
// cannot read one way only (each id it may carry), so that no other parser
// ever sees it as a request nobody checked.
func (p *Proxy) failClosed(body []byte, why error) {
	ids := recoverIDs(body)
	p.log.Warn("failing closed: a line from the agent may be a permission request but cannot be read one way only; answering cancelled, not forwarding it",
		"err", why, "bytes", len(body), "ids", len(ids))
	for _, id := range ids {
		_ = p.toAgent.message(cancelledOutcome().encode(id))
	}
}

// trackUpdate merges tool calls and records mode changes of a session/update,
// and returns what a Governor watches of it (nil for anything else).
func (p *Proxy) trackUpdate(params []byte) *Update {
	u, ok := readUpdate(params)
	if !ok {
		return nil
	}
	switch u.kind {
	case "tool_call", "tool_call_update":
		merged, id, ok := p.state.updateToolCall(u.sessionID, u.update)
		if !ok {
			return nil
		}
		f, _ := fields(merged, "status", "kind")
		asked := p.state.wasAsked(u.sessionID, id)
		if isFinished(f["status"]) {
			// The call is over: an id used again names a new call, which
			// its own request asks about.
			p.state.unmarkAsked(u.sessionID, id)
		}
		return &Update{SessionID: u.sessionID, Kind: u.kind, ToolCallID: id, ToolCall: merged,
			Status: stringOf(f["status"]), ToolKind: stringOf(f["kind"]), Asked: asked}
	case "current_mode_update":
		p.state.setMode(u.sessionID, u.modeID)
		return &Update{SessionID: u.sessionID, Kind: u.kind, ModeID: u.modeID}
	case "config_option_update":
		p.state.setConfigOptions(u.sessionID, u.configOptions)
		_, mode, _ := modeOfConfigOptions(u.configOptions)
		return &Update{SessionID: u.sessionID, Kind: u.kind, ModeID: mode, ConfigOptions: u.configOptions}
	}
	return nil
}

// loading reports whether the client's session/load or session/resume of
// a session awaits the agent's answer: what the agent sends for it then is
// history (ACP v2 has one method for both, session/resume, which replays
// from replayFrom before answering).
func (p *Proxy) loading(sessionID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.pending {
		if r.method == MethodSessionLoad || r.method == MethodSessionResume {
			if f, ok := fields(r.params, "sessionId"); ok && stringOf(f["sessionId"]) == sessionID {
				return true
			}
		}
	}
	return false
}

// callUpdate shows the Governor an update; a panic is logged, never more.
func (p *Proxy) callUpdate(u *Update) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("the governor panicked on a session update", "kind", u.Kind, "panic", fmt.Sprint(v))
		}
	}()
	p.gov.Update(u, caller{p})
}

// update is what permhost reads of a session/update, strictly.
type update struct {
	sessionID, kind, modeID string
	update, configOptions   []byte
}

func readUpdate(params []byte) (update, bool) {
	f, ok := fields(params, "sessionId", "update")
	if !ok || f["update"] == nil {
		return update{}, false
	}
	k, ok := fields(f["update"], "sessionUpdate", "currentModeId", "configOptions")
	if !ok {
		return update{}, false
	}
	return update{sessionID: stringOf(f["sessionId"]), kind: stringOf(k["sessionUpdate"]), modeID: stringOf(k["currentModeId"]),
		update: f["update"], configOptions: k["configOptions"]}, true
}

// agentCancelRequest handles the agent's $/cancel_request. It reports
// whether it consumed the notification: a request still with its handler is
// answered cancelled here; one forwarded to the client (or unknown) is the
// client's to cancel.
func (p *Proxy) agentCancelRequest(params []byte) bool {
	f, ok := fields(params, "requestId")
	if !ok || f["requestId"] == nil {
		return false
	}
	key := idKey(f["requestId"])
	p.mu.Lock()
	pp := p.perms[key]
	held := pp != nil && pp.idle()
	// Answered already, and no later request under the id: the client
	// has nothing open to withdraw (it may never have seen the id, which
	// in v2 also names requests of its own).
	gone := pp == nil && p.answered.has(key)
	p.mu.Unlock()
	if gone {
		p.log.Debug("$/cancel_request: the request was answered already; not forwarded", "id", key)
		return true
	}
	if !held {
		return false
	}
	p.log.Debug("$/cancel_request: answering a held request cancelled", "id", pp.key, "method", pp.method())
	p.finish(pp, pp.cancelled())
	return true
}

// agentResponse matches a response with the client request it answers and
// learns from it. A protocol version the proxy does not speak, or newer
// than the client asked for, fails closed: the client gets an error
// instead of the result (agentInitialize).
func (p *Proxy) agentResponse(body []byte, d decoded) agentAction {
	if oc, ours := p.ownAnswer(p.ownAgent, &p.ownLateAgent, d, body); ours {
		if oc != nil {
			if d.strict == nil && d.result != nil && !jsontext.IsNull(d.result) {
				p.learn(clientRequest{method: oc.method, params: oc.params}, d)
			}
			oc.deliver(d, body)
		}
		return agentAction{drop: true}
	}
	key := idKey(d.id)
	p.mu.Lock()
	r, ok := p.pending[key]
	delete(p.pending, key)
	p.mu.Unlock()
	if !ok || d.result == nil || jsontext.IsNull(d.result) {
		if ok {
			// No session started: what waited for it goes on.
			p.release(r.gated, nil)
		}
		return agentAction{}
	}
	if r.method == MethodInitialize {
		return p.agentInitialize(r, d) // acp/v2.go
	}
	if d.strict != nil {
		if p.gov != nil && isSessionStart(r.method) {
			h := p.newHold(r, body, d, SessionInfo{})
			h.gated = r.gated
			return agentAction{hold: h}
		}
		return agentAction{}
	}
	id := p.learn(r, d)
	if p.gov != nil && isSessionStart(r.method) {
		h := p.newHold(r, body, d, p.state.info(id))
		if h.gated = r.gated; h.gated == "" {
			h.gated = p.holdStart(id)
		}
		return agentAction{hold: h}
	}
	return agentAction{}
}

func isSessionStart(method string) bool {
	return method == MethodSessionNew || method == MethodSessionLoad || method == MethodSessionResume || method == MethodSessionFork
}

// learn updates the session state from a strict successful response to
// the client's request r (or permhost's own of the same method), and
// returns the session it concerns.
func (p *Proxy) learn(r clientRequest, d decoded) (id string) {
	switch r.method {
	case MethodSessionNew, MethodSessionLoad, MethodSessionResume, MethodSessionFork:
		params, _ := fields(r.params, "sessionId", "cwd")
		res, _ := fields(d.result, "sessionId", "modes", "configOptions")
		modes, _ := fields(res["modes"], "currentModeId")
		id = stringOf(params["sessionId"])
		if r.method == MethodSessionNew || r.method == MethodSessionFork || id == "" {
			id = stringOf(res["sessionId"])
		}
		p.state.setSession(id, stringOf(params["cwd"]), stringOf(modes["currentModeId"]))
		p.state.setConfigOptions(id, res["configOptions"])
	case MethodSessionSetMode:
		if params, ok := fields(r.params, "sessionId", "modeId"); ok {
			id = stringOf(params["sessionId"])
			p.state.setMode(id, stringOf(params["modeId"]))
		}
	case MethodSessionSetConfigOption:
		params, ok := fields(r.params, "sessionId", "configId", "value")
		if !ok {
			break
		}
		id = stringOf(params["sessionId"])
		if res, ok := fields(d.result, "configOptions"); ok && res["configOptions"] != nil {
			p.state.setConfigOptions(id, res["configOptions"])
		} else {
			p.state.setConfigOption(id, stringOf(params["configId"]), params["value"])
		}
	}
	return id
}
