package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/permhost/permhost/abi"
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

// leaderFunc returns the hook of `permhost run --leader SOCKET`; nil when
// socket is "".
func leaderFunc(socket, cwd string, timeout time.Duration) (policy.LeaderFunc, error) {
	if socket == "" {
		return nil, nil
	}
	lw, err := newLeaderWorker(socket, cwd, timeout)
	if err != nil {
		return nil, fmt.Errorf("--leader: %w", err)
	}
	return lw.ask, nil
}

// leaderMargin is the share of the decision's remaining time kept for the
// headless policy after the leader gives up, at most leaderMaxMargin.
const (
	leaderMarginDiv = 10
	leaderMaxMargin = 500 * time.Millisecond
)

// ask puts req, undecided by the worker's plugins (verdict v), to the
// leader; the person there may choose among shown. The wait ends a little
// before ctx's deadline (the --permission-timeout), so that the headless
// policy answers and logs why; ctx ending first (the turn cancelled)
// withdraws the request.
func (lw *leaderWorker) ask(ctx context.Context, req abi.Request, v host.Verdict, shown []abi.Option) policy.LeaderAnswer {
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
		q.Reason = "builtin fallback: " + v.Fallback
	}
	for _, o := range shown {
		q.Shown = append(q.Shown, o.OptionID)
	}
	for _, x := range v.Explanations {
		q.Explanations = append(q.Explanations, leader.Explanation{Plugin: x.Plugin, Summary: x.Explanation.Summary,
			Risk: x.Explanation.Risk, RiskLevel: x.Explanation.RiskLevel, Reason: x.Reason})
	}
	var deadline time.Time
	if lw.timeout > 0 {
		deadline = time.Now().Add(lw.timeout)
	}
	if dl, ok := ctx.Deadline(); ok {
		dl = dl.Add(-min(time.Until(dl)/leaderMarginDiv, leaderMaxMargin))
		if deadline.IsZero() || dl.Before(deadline) {
			deadline = dl
		}
	}
	askCtx := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		askCtx, cancel = context.WithDeadlineCause(ctx, deadline, errLeaderTimeout)
		defer cancel()
	}
	a, err := lw.client.Ask(askCtx, q)
	if err != nil {
		return policy.LeaderAnswer{Fallback: lw.why(err)}
	}
	res := policy.LeaderAnswer{Answered: true, OptionID: a.OptionID, Reason: a.Reason}
	if a.DecidedBy == policy.ByPerson {
		answer := a.OptionID
		if answer == "" {
			answer = "cancelled"
		}
		res.DecidedBy = policy.ByPerson
		res.Person = &policy.LogPerson{Shown: q.Shown, Answer: answer, Who: a.Leader.String()}
		res.PersonText = a.Said
		if a.AnsweredBy != "" && a.AnsweredBy != leader.ByTerminal {
			// The leader's web page: the log names the browser.
			res.Person.Who = a.AnsweredBy + " at " + a.Leader.String()
		}
		if res.Reason == "" && a.AnsweredBy != "" && a.AnsweredBy != leader.ByTerminal {
			res.Reason = "chosen at " + a.AnsweredBy + " (the leader's web page)"
		} else if res.Reason == "" {
			res.Reason = "chosen at the leader's terminal"
		}
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
		return fmt.Sprintf("leader timed out: no answer within the %v --permission-timeout", lw.timeout)
	case errors.Is(err, leader.ErrWithdrawn):
		return "request withdrawn from the leader: " + detail(err, leader.ErrWithdrawn)
	case errors.Is(err, leader.ErrUnreachable):
		return "leader unreachable: " + detail(err, leader.ErrUnreachable)
	case errors.Is(err, leader.ErrGone):
		return "leader gone: " + detail(err, leader.ErrGone)
	case errors.As(err, &refused):
		return fmt.Sprintf("leader refused (%s): %s", refused.Code, refused.Message)
	case errors.Is(err, leader.ErrNotOffered):
		return "leader answer not used: " + err.Error()
	case errors.Is(err, leader.ErrForeignLeader):
		return "leader not trusted: " + detail(err, leader.ErrForeignLeader)
	}
	return "leader failed: " + err.Error()
}

// detail is err's message without the sentinel's words, which the caller
// says better.
func detail(err, sentinel error) string {
	return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}
