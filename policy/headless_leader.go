package policy

import (
	"context"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/answer"
)

// LeaderFunc puts a request the plugins left undecided to a leader
// (`permhost run --leader`, see internal/leader) before the headless policy.
// shown are the options a person may choose; v is the chain's verdict. It
// returns when the leader answered or cannot: its own wait must end before
// ctx's deadline, so that the headless policy still has time to answer.
type LeaderFunc func(ctx context.Context, req abi.Request, v host.Verdict, shown []abi.Option) LeaderAnswer

// LeaderAnswer is what came of asking a leader.
type LeaderAnswer struct {
	// Answered is false when the headless policy must decide; Fallback
	// then says why (leader unreachable, gone, refused, timed out...).
	Answered bool
	Fallback string
	// OptionID is the answer, "" for cancelled. An id not among the shown
	// options is never sent: the headless policy decides instead.
	OptionID string
	// DecidedBy, Reason and Person go to the decision log: Person.Who
	// names the leader when its person chose.
	DecidedBy string
	Reason    string
	Person    *LogPerson
	// PersonText is what the leader's person typed with the answer; with
	// a reject it reaches the model ([session] reasons, reasons.go).
	PersonText string
}

// askLeader applies a leader's answer to d; it reports false, with why
// extended, when the headless policy must decide.
func (h headlessHandler) askLeader(ctx context.Context, d *headlessDecision, req abi.Request, v host.Verdict, shown []abi.Option, why *string) bool {
	if h.opts.Leader == nil || len(shown) == 0 {
		return false
	}
	a := h.opts.Leader(ctx, req, v, shown)
	switch {
	case ctx.Err() != nil:
		return false
	case !a.Answered:
		*why += "; " + a.Fallback
		return false
	case a.OptionID != "" && !answer.Offered(shown, a.OptionID):
		*why += "; the leader's answer " + a.OptionID + " was not offered"
		return false
	}
	d.entry.DecidedBy, d.entry.Reason, d.entry.Person = a.DecidedBy, a.Reason, a.Person
	d.personText = a.PersonText
	proxyHandler{h.e}.setAnswer(&d.decision, req, a.OptionID, a.OptionID == "")
	return true
}
