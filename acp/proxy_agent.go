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
	case a.replace != nil:
		_ = p.toClient.messageInOrder(a.replace)
	default:
		_ = r.forwardNow(p.toClient)
	}
	p.startHandler(a.start)
	return a.stop
}

// agentBatch takes a batch element by element through agentMessage and
// forwards what is left as a batch, in order (permission requests leave
// it, to be forwarded on their own lines if a handler asks the client). The
// handlers start once the batch is queued, so a request never overtakes an
// element before it.
func (p *Proxy) agentBatch(r *lineReader, line, body []byte, d decoded) error {
	var (
		kept    [][]byte
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
		case a.replace != nil:
			kept, changed = append(kept, a.replace), true
		default:
			kept = append(kept, e)
		}
		if a.stop != nil && stop == nil {
			stop = a.stop
		}
	}
	switch {
	case !changed:
		_ = r.forwardNow(p.toClient)
	case len(kept) > 0:
		parts := make([]batchPart, len(kept))
		for i, k := range kept {
			parts[i] = batchPart{raw: bytes.Clone(k)}
		}
		p.log.Info("forwarding an agent batch without the elements permhost answered", "elements", len(d.elems), "forwarded", len(kept))
		_ = p.toClient.placeBatch(&batchOut{parts: parts, term: bytes.Clone(line[len(body):])}, nil)
	}
	for _, a := range actions {
		p.startHandler(a.start)
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
		if d.method == MethodRequestPermission {
			return agentAction{drop: true, start: p.intercept(body)}
		}
	case kindNotification:
		switch d.method {
		case MethodRequestPermission:
			p.log.Warn("dropped a session/request_permission without an id: it cannot be answered", "bytes", len(body))
			return agentAction{drop: true}
		case MethodSessionUpdate:
			if d.strict == nil {
				p.trackUpdate(d.params)
			}
		case MethodCancelRequest:
			return agentAction{drop: p.agentCancelRequest(d.params)}
		}
	case kindResponse:
		return p.agentResponse(d)
	}
	return agentAction{}
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

// trackUpdate merges tool calls and records mode changes of a session/update.
func (p *Proxy) trackUpdate(params []byte) {
	u, ok := readUpdate(params)
	if !ok {
		return
	}
	switch u.kind {
	case "tool_call", "tool_call_update":
		p.state.updateToolCall(u.sessionID, u.update)
	case "current_mode_update":
		p.state.setMode(u.sessionID, u.modeID)
	case "config_option_update":
		p.state.setConfigOptions(u.sessionID, u.configOptions)
	}
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
	p.mu.Lock()
	pp := p.perms[idKey(f["requestId"])]
	held := pp != nil && !pp.done && pp.state == stateHeld
	p.mu.Unlock()
	if !held {
		return false
	}
	p.log.Debug("$/cancel_request: answering a held permission request cancelled", "id", pp.key)
	p.finish(pp, cancelledOutcome())
	return true
}

// agentResponse matches a response with the client request it answers and
// learns from it. A protocol version other than ProtocolVersion fails
// closed: the client gets an error instead of the result.
func (p *Proxy) agentResponse(d decoded) agentAction {
	key := idKey(d.id)
	p.mu.Lock()
	r, ok := p.pending[key]
	delete(p.pending, key)
	p.mu.Unlock()
	if !ok || d.result == nil || jsontext.IsNull(d.result) {
		return agentAction{}
	}
	if r.method == MethodInitialize {
		f, ok := fields(d.result, "protocolVersion", "agentInfo")
		v, okV := intValue(f["protocolVersion"])
		if !ok || !okV || v != ProtocolVersion {
			shown := bytes.TrimSpace(f["protocolVersion"])
			if !ok {
				shown = []byte("that cannot be read one way only")
			}
			msg := fmt.Sprintf("permhost: the agent answered protocolVersion %s; permhost supports only ACP version %d", shown, ProtocolVersion)
			p.log.Error("failing closed: unsupported protocol version", "agentVersion", string(shown))
			return agentAction{replace: errorLine(r.id, CodeInternalError, msg), stop: fmt.Errorf("%w: %s", ErrProtocolVersion, shown)}
		}
		p.state.setAgent(peerOf(f["agentInfo"]), ProtocolVersion)
		return agentAction{}
	}
	if d.strict != nil {
		return agentAction{}
	}
	switch r.method {
	case MethodSessionNew, MethodSessionLoad, MethodSessionResume:
		params, _ := fields(r.params, "sessionId", "cwd")
		res, _ := fields(d.result, "sessionId", "modes", "configOptions")
		modes, _ := fields(res["modes"], "currentModeId")
		id := stringOf(params["sessionId"])
		if r.method == MethodSessionNew || id == "" {
			id = stringOf(res["sessionId"])
		}
		p.state.setSession(id, stringOf(params["cwd"]), stringOf(modes["currentModeId"]))
		p.state.setConfigOptions(id, res["configOptions"])
	case MethodSessionSetMode:
		if params, ok := fields(r.params, "sessionId", "modeId"); ok {
			p.state.setMode(stringOf(params["sessionId"]), stringOf(params["modeId"]))
		}
	case MethodSessionSetConfigOption:
		params, ok := fields(r.params, "sessionId", "configId", "value")
		if !ok {
			break
		}
		if res, ok := fields(d.result, "configOptions"); ok && res["configOptions"] != nil {
			p.state.setConfigOptions(stringOf(params["sessionId"]), res["configOptions"])
		} else {
			p.state.setConfigOption(stringOf(params["sessionId"]), stringOf(params["configId"]), params["value"])
		}
	}
	return agentAction{}
}
