package policy

import (
	"context"
	"encoding/json"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/answer"
)

// This file is `permhost proxy --leader PATH`: a request the plugins left
// to a person is put to the editor and to the leader (its terminal, its
// web page) at once, and the first answer wins. A leader's answer
// retracts the editor's prompt (Client.Ask sends $/cancel_request); an
// editor's answer withdraws the request from the leader. Both go through
// the same path as any person's answer: the leader's is held against the
// options shown (askLeader's check), the editor's read by readAnswer, and
// deliver checks the result against what the agent offered.

// SetLeader makes the proxy's handler put every request it asks the
// editor about to the leader too; call it before the proxy starts.
func (e *Engine) SetLeader(f LeaderFunc) { e.leader = f }

// personOrLeader asks the editor (params) and the leader at once and
// takes the first answer. A leader that cannot answer (unreachable,
// gone, an option not shown) leaves the editor's prompt up.
func (h proxyHandler) personOrLeader(ctx, askCtx context.Context, req abi.Request, v host.Verdict, shown []abi.Option, params json.RawMessage, c acp.Client, d decision) decision {
	editorCtx, retract := context.WithCancel(askCtx)
	defer retract()
	leaderCtx, withdraw := context.WithCancelCause(askCtx)
	defer withdraw(nil)
	editor := make(chan editorAnswer, 1)
	go func() { editor <- readAnswer(c.Ask(editorCtx, params)) }()
	leader := make(chan LeaderAnswer, 1)
	// A leader chooses among the agent's own options: a grant of
	// permhost's is the editor's person's to record.
	go func() { leader <- h.e.leader(leaderCtx, req, v, withoutOffers(shown, d.offers)) }()
	for {
		select {
		case a := <-editor:
			if a.askErr == nil && a.err == nil && a.rpcErr == nil {
				// The leader's pages say the editor answered, and when.
				withdraw(editorAnswered{at: time.Now()})
			}
			withdraw(nil)
			return h.personAnswered(ctx, req, shown, a, d)
		case la := <-leader:
			leader = nil
			if !la.Answered || (la.OptionID != "" && !answer.Offered(shown, la.OptionID)) {
				if la.Fallback != "" {
					h.e.log.Info("the leader did not answer; the editor's prompt stays", "decisionId", req.DecisionID, "why", la.Fallback)
				}
				continue
			}
			// The leader's answer is final there (its pages say who
			// answered): the editor's prompt is retracted, and an answer
			// of the editor's read meanwhile came second.
			retract()
			<-editor
			d.entry.DecidedBy, d.entry.Reason, d.entry.Person = la.DecidedBy, la.Reason, la.Person
			d.personText = la.PersonText
			h.setAnswer(&d, req, la.OptionID, la.OptionID == "")
			return d
		}
	}
}

// editorAnswered is the cause of the leader's withdrawal when the editor's
// person answered first; the leader's client carries it (its
// AnsweredElsewhere method) so that the leader's pages say "answered by
// the editor at …".
type editorAnswered struct{ at time.Time }

func (e editorAnswered) Error() string { return "policy: the editor answered first" }

// AnsweredElsewhere names the editor ("editor", as internal/leader's
// ByEditor) and when its answer came.
func (e editorAnswered) AnsweredElsewhere() (string, time.Time) { return "editor", e.at }
