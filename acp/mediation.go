package acp

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/jsontext"
)

// This file is the mediation core's state (docs/mediation.md): the one
// mediator of an editor–agent pair (a Proxy's), which owns both
// directions' request ids and permhost's own, every pending request, and
// each session's governance; and the state machines of an agent request
// that carries a decision (a permission request, or one a Governor took
// over) and of a session. Every transition is made under the mediator's
// lock (mu for a request, gates.mu for a session) through moveLocked,
// which refuses one the table does not list; the caller then fails closed
// (the request is answered as it was, the client's answer is dropped, the
// session stays refused). What the agent receives for a request is
// decided in one place, Proxy.finishWith (proxy_perm.go); the editor's
// answer is validated in policy/mediate.go:readAnswer.

// mediator is the mediation state of one editor–agent pair.
type mediator struct {
	mu      sync.Mutex
	running bool
	seq     uint64
	// The client's requests to the agent awaiting the agent (by id).
	pending map[string]clientRequest
	// The agent's requests that carry a decision, not yet answered (by
	// id), and the ids of those answered (a later client answer under one
	// is dropped) or withdrawn from the client (its answer may still
	// come), counted: the client may hold several withdrawn under one id
	// (the agent reused it, then the newer one was withdrawn too), and the
	// id stays in use until each has its answer.
	perms               map[string]*permission
	answered, withdrawn idSet
	// confused are the ids under which a client answer could have been
	// either of two requests': a later permission request under one is
	// ambiguous too, whatever the count of withdrawn ones says, because a
	// client that answered one request twice cannot be told from one that
	// answered both.
	confused idSet
	// The agent's other requests to the client, forwarded as they are and
	// awaiting the client: the client never has two under one id.
	agentOut idSet
	// answerSlots are the slots of answered permission requests, by id:
	// an answer to a later request under the id goes after its slot.
	answerSlots map[string]*answerSlot
	agentGone   bool
	exitDesc    string

	// permhost's own requests (own.go), under ids no peer request shares,
	// and those given up, whose late answers are dropped.
	ownAgent, ownClient         map[string]*ownCall
	ownLateAgent, ownLateClient idSet

	// Each session's governance, with a Governor (gate.go).
	gates *gates
}

func newMediator(maxGoverned int) mediator {
	return mediator{
		pending:       map[string]clientRequest{},
		perms:         map[string]*permission{},
		answered:      newIDSet(maxAnsweredIDs),
		withdrawn:     newIDCounter(maxAnsweredIDs),
		confused:      newIDSet(maxAnsweredIDs),
		agentOut:      newIDSet(maxAnsweredIDs),
		answerSlots:   map[string]*answerSlot{},
		ownAgent:      map[string]*ownCall{},
		ownClient:     map[string]*ownCall{},
		ownLateAgent:  newIDSet(maxAnsweredIDs),
		ownLateClient: newIDSet(maxAnsweredIDs),
		gates:         newGates(maxGoverned),
	}
}

// permState is where an intercepted agent request is.
type permState int

const (
	// stateHeld: with its handler (or the Governor), not shown to the
	// client.
	stateHeld permState = iota
	// stateAsked: shown to the client (Client.Ask), awaiting its answer.
	stateAsked
	// stateWithdrawn: shown, then withdrawn ($/cancel_request: Ask's
	// context ended, or the agent reused its id); a late client answer
	// under the id is dropped, or applies to neither request.
	stateWithdrawn
	// stateAnswered: the client's answer was read; its place among the
	// client's lines to the agent is reserved (permission.slot) and the
	// handler is relaying it.
	stateAnswered
	// stateDone: the agent's answer is queued (finishWith, under the lock
	// that made this transition) or the agent went away. Final.
	stateDone
)

var permStateNames = [...]string{"held", "asked", "withdrawn", "answered", "done"}

func (s permState) String() string {
	if int(s) < len(permStateNames) {
		return permStateNames[s]
	}
	return fmt.Sprintf("permState(%d)", int(s))
}

// permMoves lists the transitions of a request; anything else is refused.
var permMoves = map[permState][]permState{
	stateHeld:      {stateAsked, stateWithdrawn, stateDone}, // withdrawn: Ask could not write the request
	stateAsked:     {stateAnswered, stateWithdrawn, stateDone},
	stateWithdrawn: {stateDone},
	stateAnswered:  {stateDone},
}

// moveLocked moves pp to state to if the table allows it and reports
// whether it did; Proxy.mu is held.
func (pp *permission) moveLocked(to permState) bool {
	for _, s := range permMoves[pp.state] {
		if s == to {
			pp.state = to
			return true
		}
	}
	return false
}

// idle reports whether the request is with its handler and not awaiting
// the client (never shown, or withdrawn): a cancel answers it at once.
func (pp *permission) idle() bool { return pp.state == stateHeld || pp.state == stateWithdrawn }

// sessionState is where a session is in permhost's governance (with a
// Governor).
type sessionState int

const (
	// sessionNew: no start of it seen on the connection (a session/new,
	// load, resume or fork the agent has not answered yet, or none).
	sessionNew sessionState = iota
	// sessionSwitching: its start awaits the Governor (SessionStart), or
	// the Governor holds it (Caller.Hold: a switch back to a mode that
	// asks under way), or what the client sent meanwhile is being
	// forwarded: the client's messages naming it wait, in order.
	sessionSwitching
	// sessionGoverned: the agent last reported (and confirmed) a mode
	// that asks: the client's messages pass.
	sessionGoverned
	// sessionRefused: permhost could not govern it (the agent would not
	// switch, permhost knows no way to, the connection started too many):
	// every later request naming it is answered with the refusal, and
	// nothing for it reaches the agent but the client's session/cancel.
	// Final.
	sessionRefused
)

var sessionStateNames = [...]string{"new", "switching", "governed", "refused"}

func (s sessionState) String() string {
	if int(s) < len(sessionStateNames) {
		return sessionStateNames[s]
	}
	return fmt.Sprintf("sessionState(%d)", int(s))
}

// sessionMoves lists the transitions of a session; anything else is
// refused.
var sessionMoves = map[sessionState][]sessionState{
	sessionNew:       {sessionSwitching},
	sessionSwitching: {sessionSwitching, sessionGoverned, sessionRefused}, // switching again: another hold
	sessionGoverned:  {sessionSwitching},                                  // refused only through a hold released with an error
}

// canMove reports whether the table allows a session's move from to to.
func (from sessionState) canMove(to sessionState) bool {
	for _, s := range sessionMoves[from] {
		if s == to {
			return true
		}
	}
	return false
}

// What the agent receives for an intercepted request is decided here:
// checkedResponse and checkedReply turn a handler's or a Governor's
// answer into an outcome, and finishWith writes it, once.

// checkedReply returns what the agent gets for a Governor's reply: the
// client's own response when it answers this request, a strict result
// compacted, or an error; anything else is an internal error, and a reply
// cut short by cancellation is CodeRequestCancelled.
func (p *Proxy) checkedReply(pp *permission, r Reply, herr error) outcome {
	id := pp.req.ID
	fail := func(why string) outcome {
		p.log.Warn("answering the agent's request with an error: "+why, "id", pp.key, "method", pp.areq.Method)
		return outcome{raw: errorLine(id, CodeInternalError, "permhost: "+why)}
	}
	switch {
	case herr != nil:
		if pp.ctx.Err() != nil {
			return pp.cancelled()
		}
		return fail(herr.Error())
	case r.Line != nil:
		line := bytes.TrimSpace(r.Line)
		d := decode(line)
		if d.kind != kindResponse || idKey(d.id) != pp.key {
			return fail("the answer is not a response to this request")
		}
		return outcome{raw: bytes.Clone(line)}
	case r.Result != nil:
		if err := jsontext.Check(r.Result); err != nil {
			return fail("the result is not strict JSON: " + err.Error())
		}
		return outcome{raw: responseLine(id, jsontext.AppendCompact(nil, r.Result))}
	case r.Error != nil:
		return outcome{raw: errorLine(id, r.Error.Code, r.Error.Message)}
	}
	return fail("no answer")
}

// outcome is what the agent is answered: a checked reply, or a refusal by
// JSON-RPC error.
type outcome struct {
	reply answer.Reply
	err   *answer.RPCError
	raw   []byte // a whole response of its own (a governed request's)
}

func cancelledOutcome() outcome { return outcome{reply: answer.Cancelled()} }

// encode is the agent's response to the request with id: re-encoded from
// what was checked, with the agent's own id bytes.
func (o outcome) encode(id []byte) []byte {
	if o.raw != nil {
		return o.raw
	}
	if o.err != nil {
		return answer.EncodeError(id, *o.err)
	}
	return answer.Encode(id, o.reply)
}

// checkedResponse returns what the agent gets for a handler's result: the
// handler's answer if it reads strictly as an answer to this request
// selecting an offered option (or cancelling, or refusing with an error),
// else the cancelled outcome.
func (p *Proxy) checkedResponse(pp *permission, resp Response, herr error) outcome {
	fail := func(why string, args ...any) outcome {
		p.log.Warn("permission request answered cancelled: "+why, append([]any{"id", pp.key}, args...)...)
		return cancelledOutcome()
	}
	switch {
	case herr != nil:
		if pp.ctx.Err() != nil {
			return cancelledOutcome()
		}
		return fail("the handler failed", "err", herr)
	case resp.Line != nil:
		r, err := answer.DecodeResponse(bytes.TrimSpace(resp.Line))
		switch {
		case err != nil:
			return fail("the answer does not read one way only", "err", err)
		case idKey(r.ID) != pp.key:
			return fail("the answer is not a response to this request", "answerId", string(r.ID))
		case r.Error != nil:
			return outcome{err: r.Error} // an error response refuses
		}
		if err := r.Reply.Check(pp.req.Offered); err != nil {
			return fail("the answer selects an option that was not offered", "err", err)
		}
		return outcome{reply: r.Reply}
	case resp.Result != nil:
		// The check policy's handler logs its answer with (answer.Checked):
		// what it logs is what passes here.
		r, err := answer.Checked(resp.Result, pp.req.Offered)
		if err != nil {
			return fail("the handler's result does not check", "err", err)
		}
		return outcome{reply: r}
	default:
		return fail("the handler returned no answer")
	}
}

// finish sends the agent its answer, once, and releases the request. An
// answer not tied to a slot goes ahead of the client's lines waiting
// behind one, but not ahead of the answer to an earlier request under the
// same id.
func (p *Proxy) finish(pp *permission, o outcome) { p.finishWith(pp, o, false, nil, nil) }

// finishWith is finish, with inOrder for an answer not tied to a slot that
// the client's latest line caused (its session/cancel): it then reaches
// the agent after that line; then is the handler's follow-up. Marking the
// request done and reserving its answer's place are one step under p.mu:
// whoever finishes first is what the agent gets. record, if not nil, is
// called with the line the agent gets (nil: none, the agent went away)
// before the agent can read it, or, when the request was finished before,
// with the line it got then.
func (p *Proxy) finishWith(pp *permission, o outcome, inOrder bool, then *OwnRequest, record func(sent []byte)) {
	p.mu.Lock()
	if !p.doneLocked(pp) {
		sent := pp.sent
		p.mu.Unlock()
		if record != nil {
			record(sent)
		}
		return
	}
	if pp.sessionCancelled && o.raw == nil && o.err == nil && o.reply.Selects() {
		p.log.Debug("relaying an answer given after session/cancel as cancelled", "id", pp.key)
		o, then = cancelledOutcome(), nil
	}
	thenLine := p.followUpLocked(then)
	slot := pp.slot
	line := o.encode(pp.req.ID)
	if slot == nil {
		// Queued under p.mu, in a slot of its own: a later request under
		// the id, registered once this lock is released, follows it. A
		// line to record first goes in empty.
		var err error
		switch {
		case inOrder:
			slot, err = p.toAgent.answerInOrder(line)
			line = nil
		case record != nil:
			slot, err = p.toAgent.answerAfter(nil, pp.prev)
		default:
			slot, err = p.toAgent.answerAfter(line, pp.prev)
			line = nil
		}
		if err != nil {
			line = nil
		}
	}
	if slot != nil {
		pp.sent = o.encode(pp.req.ID)
		if !pp.superseded {
			if len(p.answerSlots) >= maxAnsweredIDs {
				clear(p.answerSlots) // long written, surely
			}
			p.answerSlots[pp.key] = slot
		}
	}
	sent := pp.sent
	p.mu.Unlock()
	if thenLine != nil {
		// Queued behind the answer's slot before the slot is filled: the
		// agent reads the answer first and the follow-up with it, before
		// it can act on the answer alone.
		_ = p.toAgent.messageInOrder(thenLine)
	}
	func() {
		if line != nil {
			defer slot.fill(line)
		}
		if record != nil {
			record(sent)
		}
	}()
	pp.cancel()
}

// doneLocked moves pp to stateDone (false: it was done already) and
// releases its id: a request the client was still asked is withdrawn, its
// late answer dropped; p.mu is held.
func (p *Proxy) doneLocked(pp *permission) bool {
	asked := pp.state == stateAsked
	if !pp.moveLocked(stateDone) {
		return false
	}
	if p.perms[pp.key] == pp {
		delete(p.perms, pp.key)
		p.answered.add(pp.key)
	}
	if asked {
		p.withdrawn.add(pp.key)
		_ = p.toClient.messageInOrder(notificationLine(MethodCancelRequest, cancelParams(pp.req.ID)))
	}
	return true
}
