package acp

import "fmt"

// This file is the state machines of the mediation between an editor and
// an agent (docs/mediation.md): the life of an agent request that carries
// a decision (a permission request, or one a Governor took over) and the
// governance of a session (with a Governor). The Proxy is the one owner,
// per editor–agent pair, of both and of the ids (own.go, proxy_perm.go's
// tables): every transition is made under its lock (Proxy.mu for a
// request, gates.mu for a session) through moveLocked, which refuses one
// the table does not list; the caller then fails closed (the request is
// answered cancelled or the client's answer dropped, the session stays
// refused).

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
	sessionGoverned:  {sessionSwitching, sessionRefused},
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
