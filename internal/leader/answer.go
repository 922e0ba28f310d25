package leader

import (
	"errors"
	"fmt"
	"time"
)

// This file is how a person answers a queued request from somewhere other
// than the leader's terminal (the web page, internal/web): any ready
// request, in any order. The first answer wins: the request leaves the
// queue under the server's lock, so a second answer, the terminal's
// prompt (retracted through the request's context) and a withdrawal all
// find it gone.

// ByTerminal is Record.By for an answer chosen at the leader's terminal.
const ByTerminal = "terminal"

// ByEditor is Record.By for a request withdrawn because the editor's
// person answered it first (permhost proxy --leader).
const ByEditor = "editor"

// An answeredElsewhere error, as the cause of [Client.Ask]'s context,
// says where and when the request was answered instead; the withdrawal
// carries it so that the leader's pages say "answered by the editor at …"
// rather than "withdrawn". Only ByEditor is carried: a worker cannot pass
// itself off as a page or the terminal.
type answeredElsewhere interface {
	error
	AnsweredElsewhere() (by string, at time.Time)
}

// Errors of Server.Answer.
var (
	// ErrNotPending means the request is not waiting for a person: it was
	// answered, withdrawn, or its plugins are still deciding.
	ErrNotPending = errors.New("leader: the request is not pending")
	// ErrNotShown means the answer names an option the person was not
	// shown; nothing is sent.
	ErrNotShown = errors.New("leader: the answer names an option that was not shown")
)

// Answer answers the ready request seq for the person at by (for example
// "web:…"): optionID, one of the options shown, or "" for cancelled. said
// is what the person typed with it. It returns ErrNotPending when the
// request was answered first by someone else or is gone.
func (s *Server) Answer(seq uint64, optionID, by, said string) error {
	s.mu.Lock()
	var it *item
	for _, q := range s.queue {
		if q.seq == seq {
			it = q
			break
		}
	}
	switch {
	case it == nil || it.done || !it.ready:
		s.mu.Unlock()
		return fmt.Errorf("%w: request #%d", ErrNotPending, seq)
	case optionID != "" && !offered(it.shown, optionID):
		s.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrNotShown, optionID)
	}
	s.removeLocked(it)
	s.mu.Unlock()
	rec := Record{Prompted: true, DecidedBy: "person", By: by, Said: said}
	if optionID == "" {
		rec.Outcome, rec.Answer = OutcomeCancelled, "cancelled"
	} else {
		rec.Outcome, rec.OptionID, rec.Answer = OutcomeSelected, optionID, optionID
	}
	s.answer(it, rec)
	return nil
}

// Changed returns a channel closed at the next change of the queue (a
// request queued, ready, answered or withdrawn).
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
