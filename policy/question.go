package policy

import (
	"context"
	"errors"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/builtin"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/prompt"
)

// This file is what happens to a permission request that is a question or
// a consent (abi.FamilyQuestion, recognised by the agent's profile): a
// tool policy that answered it would answer for the person. In the proxy
// it goes to the person untouched (the agent's own bytes, every option),
// the chain is not run and no verdict applies; the builtin fallback (a
// person who does not answer in time) never answers it with an allow. In
// `permhost run` [headless] on_question decides: cancel (the default),
// reject, or prompt the person at the terminal.

// reasonQuestion is the log's reason for a question's entry.
const reasonQuestion = "a question or consent for the person, not a tool call: no plugin decides it"

// isQuestion reports whether req, built without error, is a question.
func isQuestion(req abi.Request, berr error) bool {
	return berr == nil && req.Action != nil && req.Action.Family == abi.FamilyQuestion
}

// question forwards a question to the person in the editor untouched and
// checks the answer against the options offered.
func (h proxyHandler) question(ctx context.Context, pr *acp.PermissionRequest, req abi.Request, c acp.Client, entry LogEntry) decision {
	entry.Plugins, entry.Reason = []LogPlugin{}, reasonQuestion
	askCtx := ctx
	if t := h.e.cfg.PersonTimeout; t > 0 {
		var cancel context.CancelFunc
		askCtx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	ans, err := c.Ask(askCtx, nil)
	return h.personAnswered(ctx, req, req.Options, readAnswer(ans, err), decision{entry: entry})
}

// question answers a question in permhost run by [headless] on_question.
func (h headlessHandler) question(ctx context.Context, req abi.Request, entry LogEntry) headlessDecision {
	entry.Plugins = []LogPlugin{}
	d := headlessDecision{decision: decision{entry: entry}}
	ph := proxyHandler{h.e}
	mode := h.opts.OnQuestion
	if mode == "" {
		mode = h.e.cfg.OnQuestion
	}
	why := reasonQuestion
	if mode == config.UndecidedPrompt && !h.canAsk() {
		mode, why = config.UndecidedCancel, why+"; no terminal, so on_question prompt behaves as cancel"
	}
	switch mode {
	case config.UndecidedReject:
		// The offered reject, never an allow: an answer that is not an
		// allow/reject kind is not chosen either.
		a := builtin.Headless(req.Options)
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, why+"; [headless] on_question: reject"
		ph.setAnswer(&d.decision, req, a.OptionID, a.Cancelled)
		return d
	case config.UndecidedPrompt:
	default: // cancel, and anything unknown
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, why+"; [headless] on_question: cancel"
		ph.setAnswer(&d.decision, req, "", true)
		return d
	}
	d.entry.Person = &LogPerson{Shown: idsOf(req.Options)}
	q := question(req, host.Verdict{}, req.Options, "a question from the agent: your answer is its answer")
	if dl, ok := ctx.Deadline(); ok {
		q.Deadline, q.Expiry = dl, "the fallback rejects"
	}
	ans, err := h.ask(ctx, q)
	switch {
	case ctx.Err() != nil || pastDeadline(ctx):
		return headlessDecision{decision: d.decision, expired: true}
	case errors.Is(err, prompt.ErrDeclined):
		d.entry.Person.Answer = "cancelled"
		d.entry.DecidedBy, d.entry.Reason = ByPerson, "the person declined to answer"
		ph.setAnswer(&d.decision, req, "", true)
	case err != nil:
		d.entry.Person.Answer = "error"
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, "no answer from the person: "+err.Error()
		ph.setAnswer(&d.decision, req, "", true)
	default:
		d.entry.Person.Answer = ans.ID
		d.entry.DecidedBy, d.entry.Reason = ByPerson, "answered at the terminal"
		d.personText = ans.Reason
		ph.setAnswer(&d.decision, req, ans.ID, false)
	}
	return d
}
