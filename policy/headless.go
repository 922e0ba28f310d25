package policy

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/builtin"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/prompt"
)

// AskFunc puts a question to a person and returns the chosen option id.
// [prompt.Terminal.Ask] is one; it returns [prompt.ErrDeclined] when the
// person declines to choose.
type AskFunc func(ctx context.Context, q prompt.Question) (string, error)

// HeadlessOptions configure [Engine.Headless].
type HeadlessOptions struct {
	// OnUndecided is what happens to a request the plugins leave
	// undecided: reject, cancel or prompt; "" means the configuration's
	// headless.on_undecided.
	OnUndecided string
	// OnQuestion is what happens to a question or consent (no plugin
	// decides one): cancel, reject or prompt; "" means the configuration's
	// headless.on_question.
	OnQuestion string
	// Timeout bounds each decision, the person's answer included; when it
	// expires the builtin fallback answers (the offered reject option, or
	// cancelled). 0 means no bound.
	Timeout time.Duration
	// Ask asks the person at the terminal. nil means there is none: prompt
	// then behaves as reject, and the log says why.
	Ask AskFunc
	// AskReason, when set, is used instead of Ask: the person may type a
	// reason with a reject, which [session] reasons tells the agent's
	// model ([prompt.Terminal.AskReason]).
	AskReason func(ctx context.Context, q prompt.Question) (prompt.Answer, error)
	// Leader, when set, is asked about undecided requests before the
	// headless policy (permhost run --leader); see headless_leader.go.
	Leader LeaderFunc
}

// ErrHeadless is wrapped by the errors of Engine.Headless.
var ErrHeadless = errors.New("policy: headless options")

// Headless returns the permission handler of `permhost run`: the plugin
// chain, then for undecided requests the headless policy. Every decision is
// logged with decidedBy a plugin, builtin, person or cancel, and records
// what [session] adds as the proxy's handler does (options removed under
// modes = "govern"; an allowed call's own file requests not asked again by
// the Governor, which permhost run runs in a proxy of its own).
func (e *Engine) Headless(opts HeadlessOptions) (acp.PermissionHandler, error) {
	if opts.OnUndecided == "" {
		opts.OnUndecided = e.cfg.OnUndecided
	}
	switch opts.OnUndecided {
	case config.UndecidedReject, config.UndecidedCancel, config.UndecidedPrompt:
	case "":
		opts.OnUndecided = config.UndecidedReject
	default:
		return nil, fmt.Errorf("%w: on-undecided %q: want reject, cancel or prompt", ErrHeadless, opts.OnUndecided)
	}
	switch opts.OnQuestion {
	case "", config.UndecidedReject, config.UndecidedCancel, config.UndecidedPrompt:
	default:
		return nil, fmt.Errorf("%w: on-question %q: want cancel, reject or prompt", ErrHeadless, opts.OnQuestion)
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("%w: negative timeout %v", ErrHeadless, opts.Timeout)
	}
	return headlessHandler{e: e, opts: opts}, nil
}

type headlessHandler struct {
	e    *Engine
	opts HeadlessOptions
}

// headlessDecision is a decision and whether the deadline cut it short.
type headlessDecision struct {
	decision
	expired    bool
	personText string // the reason the person typed with a reject
}

func (h headlessHandler) DecidePermission(ctx context.Context, pr *acp.PermissionRequest) (acp.PermissionDecision, error) {
	e := h.e
	start := e.now()
	req, berr := BuildRequest(pr, newDecisionID(), e.home)
	entry := entryFor(req, e.via, config.StrategySequential, start)

	dctx, cancel := ctx, context.CancelFunc(func() {})
	if h.opts.Timeout > 0 {
		dctx, cancel = context.WithTimeout(ctx, h.opts.Timeout)
	}
	defer cancel()
	results := make(chan headlessDecision, 1)
	go func() {
		// This goroutine is permhost's own: a panic here would end
		// permhost run, so it becomes the builtin fallback's answer.
		defer func() {
			if p := recover(); p != nil {
				e.log.Error("a permission decision panicked; the builtin fallback answers", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				d := headlessDecision{decision: decision{entry: entry}}
				a := builtin.Headless(req.Options)
				d.entry.DecidedBy, d.entry.Reason = ByBuiltin, fmt.Sprintf("internal error: the decision panicked: %v", p)
				proxyHandler{e}.setAnswer(&d.decision, req, a.OptionID, a.Cancelled)
				results <- d
			}
		}()
		results <- h.decide(dctx, pr, req, berr, entry)
	}()
	var d headlessDecision
	select {
	case d = <-results:
	case <-dctx.Done():
		// Plugins and the prompt stop on their own; the answer does not
		// wait for them.
		d = headlessDecision{decision: decision{entry: entry}, expired: true}
	}
	switch {
	case ctx.Err() != nil:
		d.entry.DecidedBy, d.entry.Reason = ByCancel, "the request was cancelled (turn cancelled or withdrawn)"
		proxyHandler{e}.setAnswer(&d.decision, req, "", true)
	case d.expired:
		a := builtin.Headless(req.Options)
		d.entry.DecidedBy = ByBuiltin
		d.entry.Reason = fmt.Sprintf("no decision within %v (--permission-timeout)", h.opts.Timeout)
		if d.entry.Person != nil && d.entry.Person.Answer == "" {
			d.entry.Person.Answer = "timeout"
		}
		proxyHandler{e}.setAnswer(&d.decision, req, a.OptionID, a.Cancelled)
	}
	// The same last step as the proxy's handler (deliver): the answer is
	// checked against the options offered, encoded, and the log entry,
	// the allowance and the option ClientConn sends are read back from
	// those bytes.
	_, then := e.deliver(ctx, pr, req, berr, &d.decision, start, d.personText, nil)
	reason := d.entry.Reason
	if reason == "" {
		reason = d.entry.Fallback
	}
	return acp.PermissionDecision{OptionID: d.entry.OptionID, DecidedBy: d.entry.DecidedBy, Reason: reason, DecisionID: req.DecisionID, FollowUp: then}, nil
}

// pastDeadline reports whether ctx's deadline has passed. A plugin stopped
// by its own timer at that deadline can return a moment before ctx itself
// is marked done; its failure is then the deadline's, not the plugin's.
func pastDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// decide runs the chain and, for an undecided request, the headless policy.
func (h headlessHandler) decide(ctx context.Context, pr *acp.PermissionRequest, req abi.Request, berr error, entry LogEntry) headlessDecision {
	var v host.Verdict
	switch {
	case pr.Suspicious != "":
		v = host.Verdict{Outcome: abi.OutcomeAsk, Fallback: "request is malformed: " + pr.Suspicious}
	case berr != nil:
		v = host.Verdict{Outcome: abi.OutcomeAsk, Fallback: "request not understood: " + berr.Error()}
	case isQuestion(req, berr):
		return h.question(ctx, req, entry)
	default:
		v = h.e.decide(ctx, req)
	}
	if ctx.Err() != nil || pastDeadline(ctx) {
		return headlessDecision{decision: decision{entry: entry}, expired: true}
	}
	entry.Plugins = LogPlugins(v.Votes)
	entry.Fallback = v.Fallback
	d := headlessDecision{decision: decision{entry: entry}}
	ph := proxyHandler{h.e}
	if v.Decided() {
		d.entry.DecidedBy, d.entry.Reason = v.DecidedBy, v.Reason
		ph.setAnswer(&d.decision, req, v.OptionID, v.Outcome == abi.OutcomeCancel)
		return d
	}

	why := undecidedWhy(v)
	shown, offers := h.e.personOptions(req, v)
	// A leader chooses among the agent's own options: a grant is the
	// local person's to record.
	if h.askLeader(ctx, &d, req, v, withoutOffers(shown, offers), &why) {
		return d
	}
	if ctx.Err() != nil || pastDeadline(ctx) {
		return headlessDecision{decision: d.decision, expired: true}
	}
	mode := h.opts.OnUndecided
	if mode == config.UndecidedPrompt && !h.canAsk() {
		mode = config.UndecidedReject
		why += "; no terminal, so --on-undecided prompt behaves as reject"
	}
	if mode == config.UndecidedPrompt && len(shown) == 0 {
		mode = config.UndecidedReject
		why += "; every option is durable, so nothing could be offered to the person"
	}
	switch mode {
	case config.UndecidedCancel:
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, why+"; headless policy: cancel"
		ph.setAnswer(&d.decision, req, "", true)
		return d
	case config.UndecidedReject:
		a := builtin.Headless(req.Options)
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, why+"; headless policy: reject"
		ph.setAnswer(&d.decision, req, a.OptionID, a.Cancelled)
		return d
	}

	d.entry.Person = &LogPerson{Shown: idsOf(shown)}
	q := question(req, v, shown, why)
	if dl, ok := ctx.Deadline(); ok {
		q.Deadline, q.Expiry = dl, "the fallback rejects"
	}
	ans, err := h.ask(ctx, q)
	id := ans.ID
	d.personText = ans.Reason
	switch {
	case ctx.Err() != nil || pastDeadline(ctx):
		return headlessDecision{decision: d.decision, expired: true}
	case errors.Is(err, prompt.ErrDeclined):
		d.entry.Person.Answer = "cancelled"
		d.entry.DecidedBy, d.entry.Reason = ByPerson, "the person declined to choose"
		ph.setAnswer(&d.decision, req, "", true)
	case err != nil:
		d.entry.Person.Answer = "error"
		a := builtin.Headless(req.Options)
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, "no answer from the person: "+err.Error()
		ph.setAnswer(&d.decision, req, a.OptionID, a.Cancelled)
	case answer.Offered(shown, id) && isOffer(offers, id):
		d.entry.Person.Answer, d.entry.DecidedBy = id, ByPerson
		offer, _ := offerOf(offers, id)
		ph.grantChosen(req, offer, &d.decision)
	case !answer.Offered(shown, id):
		d.entry.Person.Answer, d.entry.Person.Refused = id, true
		a := builtin.Headless(req.Options)
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, fmt.Sprintf("the answer %q was not offered", id)
		ph.setAnswer(&d.decision, req, a.OptionID, a.Cancelled)
	default:
		d.entry.Person.Answer = id
		d.entry.DecidedBy, d.entry.Reason = ByPerson, "chosen at the terminal"
		ph.setAnswer(&d.decision, req, id, false)
	}
	return d
}

func (h headlessHandler) canAsk() bool { return h.opts.Ask != nil || h.opts.AskReason != nil }

// ask puts q to the person with AskReason, else Ask.
func (h headlessHandler) ask(ctx context.Context, q prompt.Question) (prompt.Answer, error) {
	if h.opts.AskReason != nil {
		return h.opts.AskReason(ctx, q)
	}
	id, err := h.opts.Ask(ctx, q)
	return prompt.Answer{ID: id}, err
}

// undecidedWhy says why the plugins left a request undecided.
func undecidedWhy(v host.Verdict) string {
	switch {
	case v.Fallback != "":
		return "builtin fallback: " + v.Fallback
	case len(v.AskedBy) > 0 && v.Reason != "":
		return fmt.Sprintf("%v asked for a person: %s", v.AskedBy, v.Reason)
	case len(v.AskedBy) > 0:
		return fmt.Sprintf("%v asked for a person", v.AskedBy)
	case v.Reason != "":
		return "undecided: " + v.Reason
	case len(v.Votes) == 0:
		return "no plugin configured"
	default:
		return "every plugin abstained"
	}
}

// question is the terminal's view of a request: only the options shown.
func question(req abi.Request, v host.Verdict, shown []abi.Option, why string) prompt.Question {
	q := prompt.Question{Title: req.ToolCall.Title, Kind: req.ToolCall.Kind, Reason: why}
	if req.Shell != nil {
		q.Command = req.Shell.Source
	}
	for _, p := range req.Paths {
		q.Paths = append(q.Paths, prompt.Path{Path: p.Path, Access: p.Access, Outside: !p.InsideCwd})
	}
	for _, x := range v.Explanations {
		q.Explanations = append(q.Explanations, prompt.Explanation{Plugin: x.Plugin, Summary: x.Explanation.Summary,
			Risk: x.Explanation.Risk, RiskLevel: x.Explanation.RiskLevel, Reason: x.Reason})
	}
	for _, o := range shown {
		q.Options = append(q.Options, prompt.Option{ID: o.OptionID, Name: o.Name, Kind: o.Kind})
	}
	return q
}
