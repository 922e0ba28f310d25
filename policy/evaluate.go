package policy

import (
	"context"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/builtin"
)

// Evaluation is what the proxy does with one permission request before any
// person answers (`permhost eval --config F` without --plugin): the
// decision and each plugin's part in it.
type Evaluation struct {
	Decision EvaluatedDecision `json:"decision"`
	// Plugins are the votes, as the decision log records them.
	Plugins []LogPlugin `json:"plugins"`
}

// EvaluatedDecision is the decision of an [Evaluation].
type EvaluatedDecision struct {
	// Outcome is the chain's: allow, select, reject or cancel answer the
	// agent; ask and abstain leave the call to a person, who would be shown
	// the options Shown (with the builtin fallback's answer instead when
	// none could be shown: DecidedBy is then "builtin").
	Outcome   string   `json:"outcome"`
	OptionID  string   `json:"optionId,omitempty"`
	DecidedBy string   `json:"decidedBy,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Fallback  string   `json:"fallback,omitempty"`
	AskedBy   []string `json:"askedBy,omitempty"`
	// Shown are the option ids the person would see, permhost's grants
	// after the agent's own; empty when no person is asked.
	Shown []string `json:"shown,omitempty"`
}

// Evaluate decides req as the proxy's permission handler does, with the
// same code: a question goes to the person untouched; anything else runs
// the chain on the plugins' view of req and applies permhost's grants
// (decide), and an undecided call gets the options a person would be shown
// (personOptions), or the builtin fallback's answer when there are none.
// With strategy race the proxy also asks the person at once, whose answer
// may come first; Evaluate shows the plugins' side. Nothing is logged.
func (e *Engine) Evaluate(ctx context.Context, req abi.Request) Evaluation {
	if isQuestion(req, nil) {
		return Evaluation{Decision: EvaluatedDecision{Outcome: string(abi.OutcomeAsk), Reason: reasonQuestion, Shown: idsOf(req.Options)},
			Plugins: []LogPlugin{}}
	}
	v := e.decide(ctx, req)
	ev := Evaluation{Plugins: LogPlugins(v.Votes), Decision: EvaluatedDecision{Outcome: string(v.Outcome), OptionID: v.OptionID,
		DecidedBy: v.DecidedBy, Reason: v.Reason, Fallback: v.Fallback, AskedBy: v.AskedBy}}
	if v.Decided() {
		return ev
	}
	shown, _ := e.personOptions(req, v) // permhost's grants among them
	if noneToShow(req, shown) {
		a := builtin.Headless(req.Options)
		ev.Decision.DecidedBy, ev.Decision.OptionID, ev.Decision.Outcome = ByBuiltin, a.OptionID, string(abi.OutcomeReject)
		if a.Cancelled {
			ev.Decision.Outcome = string(abi.OutcomeCancel)
		}
		return ev
	}
	ev.Decision.Shown = idsOf(shown)
	return ev
}
