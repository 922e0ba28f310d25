package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/builtin"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/leader"
	"github.com/permhost/permhost/policy"
)

// leaderWorker is the worker's side of `permhost run --leader`: it sends
// the requests the worker's plugins left undecided to the leader and turns
// the leader's answer, or its failure, into what the worker does and logs.
type leaderWorker struct {
	client  *leader.Client
	cwd     string
	timeout time.Duration
}

// newLeaderWorker validates the socket path once; timeout bounds each
// wait for the leader (--permission-timeout), 0 meaning no bound.
func newLeaderWorker(socket, cwd string, timeout time.Duration) (*leaderWorker, error) {
	c, err := leader.NewClient(socket)
	if err != nil {
		return nil, err
	}
	return &leaderWorker{client: c, cwd: cwd, timeout: timeout}, nil
}

// leaderResult is what came of asking the leader.
type leaderResult struct {
	// Answered is false when the worker must fall back to its headless
	// policy; Fallback then says why, for its log.
	Answered bool
	Fallback string
	// OptionID is the answer ("" = cancelled), one of the options the
	// person could choose.
	OptionID string
	// DecidedBy and Reason are for the worker's log: ByPerson when the
	// leader's person chose (Person.Who names the leader), else
	// "leader:<plugin>".
	DecidedBy string
	Reason    string
	Person    *policy.LogPerson
}

// personOptions are the options a person may choose for verdict v: the
// one-time ones when the fallback governs or an admin plugin said so.
func personOptions(req abi.Request, v host.Verdict) []abi.Option {
	if v.Fallback != "" || v.StripDurable {
		return builtin.PersonOptions(req.Options)
	}
	return req.Options
}

// ask puts req, undecided by the worker's plugins (verdict v), to the
// leader and waits at most the timeout. ctx ending (the turn cancelled)
// withdraws the request.
func (lw *leaderWorker) ask(ctx context.Context, req abi.Request, v host.Verdict) leaderResult {
	shown := personOptions(req, v)
	if len(shown) == 0 {
		return leaderResult{Fallback: "no option a person may choose"}
	}
	q := leader.Question{
		Worker:  leader.Worker{PID: os.Getpid(), Cwd: lw.cwd, Session: req.Session.ID},
		Request: req,
		Reason:  v.Reason,
	}
	if q.Worker.Cwd == "" {
		q.Worker.Cwd = req.Session.Cwd
	}
	if a := req.Session.Agent; a != nil {
		q.Worker.Agent = a.Name
		if a.Version != "" {
			q.Worker.Agent += " " + a.Version
		}
	}
	if v.Fallback != "" && q.Reason == "" {
		q.Reason = v.Fallback
	}
	for _, o := range shown {
		q.Shown = append(q.Shown, o.OptionID)
	}
	for _, x := range v.Explanations {
		q.Explanations = append(q.Explanations, leader.Explanation{Plugin: x.Plugin, Summary: x.Explanation.Summary,
			Risk: x.Explanation.Risk, RiskLevel: x.Explanation.RiskLevel, Reason: x.Reason})
	}
	askCtx := ctx
	if lw.timeout > 0 {
		var cancel context.CancelFunc
		askCtx, cancel = context.WithTimeoutCause(ctx, lw.timeout, errLeaderTimeout)
		defer cancel()
	}
	a, err := lw.client.Ask(askCtx, q)
	if err != nil {
		return leaderResult{Fallback: lw.why(err)}
	}
	res := leaderResult{Answered: true, OptionID: a.OptionID, Reason: a.Reason}
	if a.DecidedBy == policy.ByPerson {
		answer := a.OptionID
		if answer == "" {
			answer = "cancelled"
		}
		res.DecidedBy = policy.ByPerson
		res.Person = &policy.LogPerson{Shown: q.Shown, Answer: answer, Who: a.Leader.String()}
	} else {
		res.DecidedBy = "leader:" + a.DecidedBy
		if res.Reason == "" {
			res.Reason = "decided by " + a.Leader.String()
		} else {
			res.Reason += " (" + a.Leader.String() + ")"
		}
	}
	return res
}

var errLeaderTimeout = errors.New("permission timeout")

// why says, for the worker's log, why it falls back.
func (lw *leaderWorker) why(err error) string {
	var refused *leader.RefusedError
	switch {
	case errors.Is(err, errLeaderTimeout):
		return fmt.Sprintf("leader timed out after %v", lw.timeout)
	case errors.Is(err, leader.ErrWithdrawn):
		return "request withdrawn from the leader: " + err.Error()
	case errors.Is(err, leader.ErrUnreachable):
		return "leader unreachable: " + err.Error()
	case errors.Is(err, leader.ErrGone):
		return "leader gone: " + err.Error()
	case errors.As(err, &refused):
		return fmt.Sprintf("leader refused (%s): %s", refused.Code, refused.Message)
	case errors.Is(err, leader.ErrNotOffered):
		return "leader answer not used: " + err.Error()
	case errors.Is(err, leader.ErrForeignLeader):
		return "leader not trusted: " + err.Error()
	}
	return "leader failed: " + err.Error()
}
