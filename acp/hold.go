package acp

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/permhost/permhost/internal/jsontext"
)

// This file holds a session's start: the agent's result of session/new,
// session/load, session/resume or session/fork waits in its place among the agent's
// lines to the client while the Governor acts on it (moving the session to
// a mode that asks), and what the Governor returns takes that place.

// holdWait bounds how long the agent's later lines wait behind a held
// session start before they go ahead; the Governor bounds its own work
// well within it.
const holdWait = time.Minute

// heldStart is one held session start.
type heldStart struct {
	slot  *answerSlot
	line  []byte // the response, the proxy's own copy
	at    int    // where the result starts in line
	n     int    // the result's length
	id    []byte // the client's id
	start *SessionStart
	gated string // the session held until the Governor returns (gate.go)
}

// newHold holds the agent's response body (d decodes it) to the client's
// request r.
func (p *Proxy) newHold(r clientRequest, body []byte, d decoded, s SessionInfo) *heldStart {
	line := bytes.Clone(body)
	at := cap(body) - cap(d.result) // d.result is a subslice of body
	res := line[at : at+len(d.result)]
	st := &SessionStart{Method: r.method, Params: r.params, Result: res, Session: s}
	if d.strict != nil {
		st.Suspicious = suspicion(d.strict)
	}
	return &heldStart{slot: p.toClient.newSlotWait(holdWait), line: line, at: at, n: len(d.result), id: r.id, start: st}
}

// startHold runs the Governor on a held start and fills its place.
func (p *Proxy) startHold(h *heldStart) {
	if h == nil {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		res, rerr := p.callSessionStart(h.start)
		// The client's messages for the session go on, or are refused,
		// once the result's place is filled: the client reads the result
		// before any answer to them.
		defer p.release(h.gated, rerr)
		switch {
		case rerr != nil:
			p.log.Warn("answering the client's "+h.start.Method+" with an error instead of the agent's result", "err", rerr.Message)
			h.slot.fill(errorLine(h.id, rerr.Code, rerr.Message))
		case res != nil:
			out := make([]byte, 0, len(h.line)-h.n+len(res))
			out = append(out, h.line[:h.at]...)
			out = append(out, res...)
			out = append(out, h.line[h.at+h.n:]...)
			h.slot.fill(out)
		default:
			h.slot.fill(h.line)
		}
	}()
}

func (p *Proxy) callSessionStart(s *SessionStart) (res []byte, rerr *RPCError) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("the governor panicked on a session's start", "panic", fmt.Sprint(v))
			res, rerr = nil, &RPCError{Code: CodeInternalError, Message: fmt.Sprintf("permhost: internal error governing the session: %v", v)}
		}
	}()
	ctx, cancel := context.WithTimeout(p.ctx, holdWait)
	defer cancel()
	res, rerr = p.gov.SessionStart(ctx, s, caller{p})
	if res != nil {
		// The governor edits values in place: everything else stays the
		// agent's bytes, so only strictness is checked.
		if err := jsontext.Check(res); err != nil {
			return nil, &RPCError{Code: CodeInternalError, Message: "permhost: internal error: the governed session result is not strict JSON"}
		}
	}
	return res, rerr
}
