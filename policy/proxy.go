package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/builtin"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/grants"
)

// Handler returns the proxy's permission handler: the configured strategy
// over the chain, the builtin fallback, and the person in the editor.
func (e *Engine) Handler() acp.Handler { return proxyHandler{e} }

type proxyHandler struct{ e *Engine }

// decision is what happened to one request, for the agent and the log.
type decision struct {
	entry LogEntry
	// result is the answer for the agent, always one permhost encoded
	// (from a verdict or from the editor's answer as readAnswer read it);
	// deliver checks it and logs what it says.
	result json.RawMessage
	offers []grants.Offer // permhost's grants shown to the person
	// personText is what a leader's person typed with the answer
	// (proxy_leader.go); with a reject it reaches the model.
	personText string
}

func (h proxyHandler) RequestPermission(ctx context.Context, pr *acp.PermissionRequest, c acp.Client) (acp.Response, error) {
	e := h.e
	start := e.now()
	req, err := BuildRequest(pr, newDecisionID(), e.home)
	entry := entryFor(req, e.via, e.cfg.Strategy, start)
	var d decision
	switch {
	case pr.Suspicious != "":
		d = h.person(ctx, pr, req, host.Verdict{Outcome: abi.OutcomeAsk, Fallback: "request is malformed: " + pr.Suspicious}, c, entry)
	case err != nil:
		d = h.person(ctx, pr, req, host.Verdict{Outcome: abi.OutcomeAsk, Fallback: "request not understood: " + err.Error()}, c, entry)
	case isQuestion(req, err):
		d = h.question(ctx, pr, req, c, entry)
	case e.cfg.Strategy == config.StrategyRace:
		d = h.race(ctx, pr, req, c, entry)
	default:
		v := e.decide(ctx, req)
		if v.Decided() {
			d = h.answer(pr, req, v, c, entry)
		} else {
			d = h.person(ctx, pr, req, v, c, entry)
		}
	}
	result, then := e.deliver(ctx, pr, req, err, &d, start, d.personText, c.Deliver)
	if ctx.Err() != nil {
		return acp.Response{}, ctx.Err()
	}
	return acp.Response{Result: result, FollowUp: then}, nil
}

// governed is what [session] adds to a decided permission request, in the
// proxy and in permhost run alike: with modes govern, the entry records
// the options removed because they switch into a mode that decides by
// itself (no plugin, person or leader saw them); an allowed call's own
// file and terminal requests are not asked again. berr is BuildRequest's.
func (e *Engine) governed(pr *acp.PermissionRequest, req abi.Request, berr error, entry *LogEntry) {
	if isQuestion(req, berr) {
		return // the person's answer to a question, untouched
	}
	if berr == nil && e.cfg.Session.Modes == config.ModesGovern {
		if removed := decidingSwitches(req.Options, e.reqProfile(req)); len(removed) > 0 {
			entry.Mode = &LogMode{Action: ModeRemoveOptions, Trigger: acp.MethodRequestPermission, Options: idsOf(removed)}
			e.log.Info("removed the options that would switch the session to a mode that decides by itself", "decisionId", req.DecisionID, "options", idsOf(removed))
		}
	}
	if entry.Outcome == "selected" && strings.HasPrefix(entry.OptionKind, "allow") {
		e.gov.allow(pr.SessionID, pr.ToolCallID, req, req.DecisionID)
	}
}

// answer tells the agent the verdict of the plugins, and the editor what was
// decided, as a tool_call_update in order before anything later about the
// call.
func (h proxyHandler) answer(pr *acp.PermissionRequest, req abi.Request, v host.Verdict, c acp.Client, entry LogEntry) decision {
	entry.recordVerdict(v)
	d := decision{entry: entry}
	h.setAnswer(&d, req, v.OptionID, v.Outcome == abi.OutcomeCancel)
	meta := marshal(map[string]any{"decision": map[string]any{
		"outcome": string(v.Outcome), "optionId": v.OptionID, "decidedBy": v.DecidedBy, "reason": v.Reason,
	}, "decisionId": req.DecisionID})
	if err := notifyDecision(pr, c, meta); err != nil {
		h.e.log.Warn("could not tell the editor about a decision", "decisionId", req.DecisionID, "err", err)
	}
	return d
}

// setAnswer fills the result for an option id, or cancelled; the log
// entry's outcome and option are deliver's, read back from it.
func (h proxyHandler) setAnswer(d *decision, req abi.Request, optionID string, cancelled bool) {
	if cancelled || optionID == "" {
		d.result = answer.Cancelled().Result()
		return
	}
	d.result = selectedResult(optionID)
}

func selectedResult(optionID string) json.RawMessage { return answer.Selected(optionID).Result() }

// notifyDecision sends session/update tool_call_update with the request's
// tool-call fields and _meta.permhost.
func notifyDecision(pr *acp.PermissionRequest, c acp.Client, permhostMeta json.RawMessage) error {
	toolCall := requestToolCall(pr) // policy/request_v2.go
	if len(toolCall) == 0 {
		return fmt.Errorf("request has no toolCall object")
	}
	fields, err := splitObject(toolCall)
	if err != nil {
		return err
	}
	update := append([]member{{"sessionUpdate", json.RawMessage(`"tool_call_update"`)}}, fields...)
	withPermhost, err := withMeta(joinObject(update), "permhost", permhostMeta)
	if err != nil {
		return err
	}
	note := joinObject([]member{{"sessionId", marshal(pr.SessionID)}, {"update", withPermhost}})
	return c.Notify(acp.MethodSessionUpdate, note)
}

// shownOptions are the options a person may choose for verdict v: only
// the one-time ones when the builtin fallback governs or an admin asked.
func shownOptions(req abi.Request, v host.Verdict) []abi.Option {
	return answer.Shown(req.Options, narrowed(v))
}

func narrowed(v host.Verdict) bool { return v.Fallback != "" || v.StripDurable }

// presentation builds the params forwarded to the editor: the agent's own,
// options narrowed to shown, _meta.permhost with what the plugins said, and
// the presentation record _meta.permission when the agent sent none.
func presentation(pr *acp.PermissionRequest, req abi.Request, v host.Verdict, shown []abi.Option) (json.RawMessage, error) {
	params := pr.Params
	if len(shown) != len(req.Options) {
		ms, err := splitObject(params)
		if err != nil {
			return nil, err
		}
		raw, _ := getMember(ms, "options")
		var all []json.RawMessage
		if err := json.Unmarshal(raw, &all); err != nil || len(all) != len(req.Options) {
			return nil, errors.New("options changed shape")
		}
		keep := make([]json.RawMessage, 0, len(shown))
		for i, o := range req.Options {
			for _, s := range shown {
				if s.OptionID == o.OptionID {
					keep = append(keep, all[i])
				}
			}
		}
		params = joinObject(setMember(ms, "options", arrayOf(keep)))
	}
	type explained struct {
		Plugin    string `json:"plugin"`
		Summary   string `json:"summary,omitempty"`
		Risk      string `json:"risk,omitempty"`
		RiskLevel string `json:"riskLevel,omitempty"`
		Reason    string `json:"reason,omitempty"`
	}
	ph := map[string]any{"decisionId": req.DecisionID}
	var ex []explained
	for _, x := range v.Explanations {
		ex = append(ex, explained{x.Plugin, x.Explanation.Summary, x.Explanation.Risk, x.Explanation.RiskLevel, x.Reason})
	}
	if len(ex) > 0 {
		ph["explanations"] = ex
		ph["riskLevel"] = highestRisk(v.Explanations)
	}
	if len(v.AskedBy) > 0 {
		ph["askedBy"] = v.AskedBy
	}
	if v.Reason != "" {
		ph["reason"] = v.Reason
	}
	if v.Fallback != "" {
		ph["fallback"] = v.Fallback
	}
	if len(shown) != len(req.Options) {
		var removed []string
		for _, o := range req.Options {
			if !answer.Offered(shown, o.OptionID) {
				removed = append(removed, o.OptionID)
			}
		}
		ph["removedOptions"] = removed
	}
	out, err := withMeta(params, "permhost", marshal(ph))
	if err != nil {
		return nil, err
	}
	if !metaHas(pr.Meta, "permission") {
		rec := map[string]any{"version": 1, "title": req.ToolCall.Title}
		if desc := describe(v); desc != "" {
			rec["description"] = desc
		}
		if req.ToolCall.Title == "" {
			rec["title"] = "Permission requested"
		}
		out, err = withMeta(out, "permission", marshal(rec))
	}
	return out, err
}

func describe(v host.Verdict) string {
	for _, x := range v.Explanations {
		if x.Explanation.Summary != "" {
			s := x.Explanation.Summary
			if x.Explanation.Risk != "" {
				s += " Risk: " + x.Explanation.Risk
			}
			return s
		}
	}
	if v.Fallback != "" {
		return "permhost could not decide (" + v.Fallback + "): only one-time choices are offered."
	}
	return v.Reason
}

func highestRisk(ex []host.Explained) string {
	rank := map[string]int{abi.RiskLow: 1, abi.RiskMedium: 2, abi.RiskHigh: 3}
	best := ""
	for _, x := range ex {
		if rank[x.Explanation.RiskLevel] > rank[best] {
			best = x.Explanation.RiskLevel
		}
	}
	return best
}

func metaHas(meta json.RawMessage, key string) bool {
	ms, err := splitObject(meta)
	if err != nil {
		return false
	}
	v, ok := getMember(ms, key)
	return ok && string(v) != "null"
}

func arrayOf(items []json.RawMessage) json.RawMessage {
	b := []byte{'['}
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// noneToShow reports whether the person would be shown none of the
// options req offers (every one is durable and the choice is narrowed):
// the builtin fallback then answers without a person.
func noneToShow(req abi.Request, shown []abi.Option) bool {
	return len(shown) == 0 && len(req.Options) > 0
}

// person puts the request to the person in the editor and checks the answer
// against the options shown.
func (h proxyHandler) person(ctx context.Context, pr *acp.PermissionRequest, req abi.Request, v host.Verdict, c acp.Client, entry LogEntry) decision {
	entry.Plugins = LogPlugins(v.Votes)
	entry.Fallback, entry.Reason = v.Fallback, v.Reason
	shown, offers := h.e.personOptions(req, v)
	d := decision{entry: entry, offers: offers}
	if noneToShow(req, shown) {
		// Nothing one-time to offer (every option is durable): the
		// fallback answers without a person.
		a := builtin.Headless(req.Options)
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, h.e.noOneTimeReason()
		h.setAnswer(&d, req, a.OptionID, a.Cancelled)
		return d
	}
	params, err := h.e.present(pr, req, v, shown, offers)
	if err != nil {
		h.e.log.Warn("could not annotate the request; forwarding it with one-time options only", "err", err)
		params, shown, d.offers = nil, req.Options, nil
		if narrowed(v) || h.e.cfg.Session.OneTimeOnly() {
			a := builtin.Headless(req.Options)
			d.entry.DecidedBy = ByBuiltin
			h.setAnswer(&d, req, a.OptionID, a.Cancelled)
			return d
		}
	}
	askCtx := ctx
	if t := h.e.cfg.PersonTimeout; t > 0 {
		var cancel context.CancelFunc
		askCtx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	if h.e.leader != nil {
		return h.personOrLeader(ctx, askCtx, req, v, shown, params, c, d)
	}
	return h.personAnswered(ctx, req, shown, readAnswer(c.Ask(askCtx, params)), d)
}

// personAnswered turns the person's answer, as readAnswer read it, into
// the agent's: only an option shown to the person reaches the agent;
// anything else gets the fallback's reject.
func (h proxyHandler) personAnswered(ctx context.Context, req abi.Request, shown []abi.Option, a editorAnswer, d decision) decision {
	d.entry.Person = &LogPerson{Shown: idsOf(shown)}
	refuse := func(why string) decision {
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, why
		b := builtin.Headless(req.Options)
		h.setAnswer(&d, req, b.OptionID, b.Cancelled)
		return d
	}
	switch {
	case a.askErr != nil && ctx.Err() == nil && errors.Is(a.askErr, context.DeadlineExceeded):
		d.entry.Person.Answer = "timeout"
		return refuse("the person did not answer in time")
	case a.askErr != nil:
		d.entry.Person.Answer = "cancelled"
		d.entry.DecidedBy = ByCancel
		h.setAnswer(&d, req, "", true)
		return d
	case a.rpcErr != nil:
		d.entry.Person.Answer = "error"
		d.entry.DecidedBy, d.entry.Reason = ByPerson, "the editor answered with an error: "+a.rpcErr.Message
		h.setAnswer(&d, req, "", true)
		return d
	case a.err != nil:
		d.entry.Person.Answer, d.entry.Person.Refused = "unreadable", true
		h.e.log.Warn("the editor's answer does not read one way only; the agent gets the reject option", "decisionId", req.DecisionID, "err", a.err)
		return refuse("the editor's answer does not read one way only: " + a.err.Error())
	}
	r := a.reply
	d.entry.DecidedBy = ByPerson
	switch {
	case !r.Selects():
		d.entry.Person.Answer = "cancelled"
		d.result = r.Result()
	case answer.Offered(shown, r.OptionID) && isOffer(d.offers, r.OptionID):
		d.entry.Person.Answer = r.OptionID
		offer, _ := offerOf(d.offers, r.OptionID)
		h.grantChosen(req, offer, &d)
	case answer.Offered(shown, r.OptionID):
		d.entry.Person.Answer = r.OptionID
		d.result = r.Result() // re-encoded, with the editor's _meta objects
	default:
		d.entry.Person.Answer, d.entry.Person.Refused = r.OptionID, true
		h.e.log.Warn("the editor's answer named an option that was not offered; the agent gets the reject option", "decisionId", req.DecisionID, "answer", r.OptionID)
		return refuse(fmt.Sprintf("the editor answered %q, which was not offered", r.OptionID))
	}
	return d
}

func idsOf(opts []abi.Option) []string {
	out := make([]string, 0, len(opts))
	for _, o := range opts {
		out = append(out, o.OptionID)
	}
	return out
}

// race shows the person the request at once while the plugins run. The
// rule when both answer (RATIONALE.md, "The race strategy"): the person's
// answer, once permhost has read it, wins. A plugin verdict that decides
// retracts the editor's prompt; if the editor's answer was read before the
// retraction took (Client.Ask then returns it), the person still wins,
// so a person's reject never loses. A person's answer read first cancels
// the plugins and discards what they would have said; only an answer that
// would hand later calls over (a durable option, a grant of permhost's)
// waits for their verdict, which says whether it was a choice a person
// may make (a failed fail-closed plugin or an admin's ask narrows them).
func (h proxyHandler) race(ctx context.Context, pr *acp.PermissionRequest, req abi.Request, c acp.Client, entry LogEntry) decision {
	pluginCtx, stopPlugins := context.WithCancel(ctx)
	defer stopPlugins()
	askCtx, retract := context.WithCancel(ctx)
	defer retract()
	if t := h.e.cfg.PersonTimeout; t > 0 {
		var cancel context.CancelFunc
		askCtx, cancel = context.WithTimeout(askCtx, t)
		defer cancel()
	}
	verdicts := make(chan host.Verdict, 1)
	go func() { verdicts <- h.e.decide(pluginCtx, req) }()
	answers := make(chan editorAnswer, 1)
	deciding := host.Verdict{Outcome: abi.OutcomeAsk, Reason: "plugins are deciding"}
	shown, offers := h.e.personOptions(req, deciding)
	params, err := h.e.present(pr, req, deciding, shown, offers)
	if err != nil && h.e.cfg.Session.OneTimeOnly() {
		// The agent's own params would show the options that hand
		// decisions to it: the plugins alone decide, else the fallback.
		h.e.log.Warn("could not annotate the request; the plugins decide without a person", "err", err)
		v := <-verdicts
		if v.Decided() {
			return h.answer(pr, req, v, c, entry)
		}
		d := decision{entry: entry}
		d.entry.Plugins, d.entry.Fallback, d.entry.DecidedBy, d.entry.Reason = LogPlugins(v.Votes), v.Fallback, ByBuiltin, "the request could not be shown with one-time options only"
		a := builtin.Headless(req.Options)
		h.setAnswer(&d, req, a.OptionID, a.Cancelled)
		return d
	}
	if err != nil {
		params, shown = nil, req.Options
	}
	go func() { answers <- readAnswer(c.Ask(askCtx, params)) }()
	shownFirst := shown
	// person is the person's answer winning; v is the plugins' verdict
	// when it came, which narrows what the person could choose.
	person := func(a editorAnswer, v *host.Verdict) decision {
		if v != nil {
			shown, _ = h.e.personOptions(req, *v)
			entry.Plugins, entry.Fallback, entry.Reason = LogPlugins(v.Votes), v.Fallback, v.Reason
		}
		d := h.personAnswered(ctx, req, shown, a, decision{entry: entry, offers: offers})
		if d.entry.Person != nil {
			d.entry.Person.Shown = idsOf(shownFirst)
		}
		if v == nil {
			// The plugins lost: whatever they say is discarded.
			d.entry.Plugins = []LogPlugin{}
		}
		return d
	}
	select {
	case v := <-verdicts:
		if !v.Decided() {
			// Undecided: the person's answer stands, checked against what
			// the fallback or an admin ask would have offered. The offers
			// stay those the person was shown.
			return person(<-answers, &v)
		}
		retract()
		if a := <-answers; a.askErr == nil {
			// The editor's answer was read before the retraction: the
			// person answered first.
			h.e.log.Info("race: the person's answer came before the plugins' verdict took; the person decides", "decisionId", req.DecisionID, "plugins", v.DecidedBy)
			return person(a, &v)
		}
		d := h.answer(pr, req, v, c, entry)
		d.entry.Person = &LogPerson{Shown: idsOf(shownFirst), Answer: "retracted"}
		return d
	case a := <-answers:
		if a.askErr != nil {
			// No answer from the person (a timeout): a verdict that is
			// ready decides rather than the fallback.
			select {
			case v := <-verdicts:
				if v.Decided() {
					d := h.answer(pr, req, v, c, entry)
					d.entry.Person = &LogPerson{Shown: idsOf(shownFirst), Answer: "retracted"}
					return d
				}
			default:
			}
		}
		if handsOverChoice(req, offers, a) {
			v := <-verdicts
			return person(a, &v)
		}
		stopPlugins()
		return person(a, nil)
	}
}

// handsOverChoice reports whether an answer selects an option that would
// hand later calls over: one of the agent's durable options or a grant of
// permhost's.
func handsOverChoice(req abi.Request, offers []grants.Offer, a editorAnswer) bool {
	id, ok := a.selected()
	if !ok {
		return false
	}
	if isOffer(offers, id) {
		return true
	}
	for _, o := range req.Options {
		if o.OptionID == id {
			return answer.Durable(o)
		}
	}
	return false
}
