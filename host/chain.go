package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
)

// FailurePolicy says what a plugin's failure means for the decision.
type FailurePolicy string

// Failure policies (DESIGN §4).
const (
	// FailClosed sends the whole decision to the builtin fallback.
	FailClosed FailurePolicy = "closed"
	// FailAbstain treats the failed plugin as silent.
	FailAbstain FailurePolicy = "abstain"
	// FailMonitor runs and logs the plugin but never enforces it, failed or
	// not: for trialling a new policy.
	FailMonitor FailurePolicy = "monitor"
)

// Layers, in the order the chain runs them.
const (
	LayerAdmin = "admin"
	LayerTeam  = "team"
	LayerUser  = "user"
)

var layerOrder = map[string]int{LayerAdmin: 0, LayerTeam: 1, LayerUser: 2}

// Decider is what a chain calls; [*Plugin] is one.
type Decider interface {
	Call(ctx context.Context, req abi.Request) Result
}

// Member is one plugin of a chain.
type Member struct {
	Name   string
	Layer  string // LayerAdmin, LayerTeam or LayerUser
	Policy FailurePolicy
	Plugin Decider
	// Version and SHA256 are recorded with each vote for the decision log.
	Version, SHA256 string
}

// ChainOptions configure [NewChain].
type ChainOptions struct {
	Members []Member
	// QuarantineAfter consecutive failures put a plugin in quarantine for
	// QuarantineFor; defaults 3 and 30 s.
	QuarantineAfter int
	QuarantineFor   time.Duration
	// Logger receives quarantine notices; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Errors of the chain.
var (
	// ErrChain is wrapped by errors of [NewChain].
	ErrChain = errors.New("host: bad chain")
	// ErrQuarantined is the Err of a vote whose plugin was not called
	// because it failed repeatedly.
	ErrQuarantined = errors.New("host: plugin quarantined after repeated failures")
)

// Chain runs plugins in layer order and combines their decisions.
type Chain struct {
	members []*member
	after   int
	period  time.Duration
	log     *slog.Logger
	now     func() time.Time
}

type member struct {
	Member
	mu          sync.Mutex
	failures    int       // consecutive
	quarantined time.Time // until
}

// NewChain validates opts and returns a chain whose members run admin first,
// then team, then user, keeping the given order within a layer.
func NewChain(opts ChainOptions) (*Chain, error) {
	c := &Chain{after: opts.QuarantineAfter, period: opts.QuarantineFor, log: opts.Logger, now: opts.Now}
	if c.after == 0 {
		c.after = 3
	}
	if c.period == 0 {
		c.period = 30 * time.Second
	}
	if c.after < 0 || c.period < 0 {
		return nil, fmt.Errorf("%w: negative quarantine setting", ErrChain)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	for i, m := range opts.Members {
		if _, ok := layerOrder[m.Layer]; !ok {
			return nil, fmt.Errorf("%w: member %d (%s): unknown layer %q", ErrChain, i, m.Name, m.Layer)
		}
		switch m.Policy {
		case FailClosed, FailAbstain, FailMonitor:
		default:
			return nil, fmt.Errorf("%w: member %d (%s): unknown failure policy %q", ErrChain, i, m.Name, m.Policy)
		}
		if m.Plugin == nil {
			return nil, fmt.Errorf("%w: member %d (%s): no plugin", ErrChain, i, m.Name)
		}
		c.members = append(c.members, &member{Member: m})
	}
	slices.SortStableFunc(c.members, func(a, b *member) int { return layerOrder[a.Layer] - layerOrder[b.Layer] })
	return c, nil
}

// Len is the number of members.
func (c *Chain) Len() int { return len(c.members) }

// Vote is one member's part in a decision.
type Vote struct {
	Plugin  string
	Layer   string
	Policy  FailurePolicy
	Version string
	SHA256  string
	// Decision is the plugin's answer; zero when it failed or did not run.
	Decision abi.Decision
	// Err is the failure, an [*Error] or [ErrQuarantined]; nil when the
	// plugin answered.
	Err error
	// Enforced is false for monitor plugins, failures treated as silent,
	// and plugins that did not run.
	Enforced bool
	// Skipped says why the plugin did not run: "quarantined" or
	// "a reject is final".
	Skipped  string
	Duration time.Duration
	Logs     []Log
}

// Explained is a plugin's explanation of a request, shown to the person.
type Explained struct {
	Plugin      string
	Reason      string
	Explanation abi.Explanation
}

// Verdict is the chain's combined decision.
type Verdict struct {
	// Outcome is reject, cancel, ask, allow, select or abstain. allow,
	// select and reject carry OptionID; a reject with no reject option
	// offered becomes cancel.
	Outcome  abi.Outcome
	OptionID string
	// DecidedBy is the plugin whose decision governs, or "" for ask and
	// abstain.
	DecidedBy string
	Reason    string
	// Fallback is non-empty when a plugin with failure policy closed
	// failed: the builtin fallback governs (Outcome is then ask, or a reject
	// that another plugin made final), and Fallback says why.
	Fallback string
	// StripDurable is set when an admin-layer plugin asked: the person may
	// only see one-time options.
	StripDurable bool
	// AskedBy names the plugins that asked for a person.
	AskedBy      []string
	Explanations []Explained
	Votes        []Vote
}

// Decided reports whether the verdict answers the agent without a person.
func (v Verdict) Decided() bool {
	switch v.Outcome {
	case abi.OutcomeReject, abi.OutcomeCancel, abi.OutcomeAllow, abi.OutcomeSelect:
		return true
	}
	return false
}

// Run asks every member in order and combines their answers: reject and
// cancel beat ask, which beats allow and select, which beat abstain; a
// reject is final, so members after it do not run. A closed failure hands
// the decision to the builtin fallback unless a reject already decided.
// When ctx ends, Run stops calling members and returns what it has, with
// Outcome cancel.
func (c *Chain) Run(ctx context.Context, req abi.Request) Verdict {
	var v Verdict
	final := ""
	for _, m := range c.members {
		vote := Vote{Plugin: m.Name, Layer: m.Layer, Policy: m.Policy, Version: m.Version, SHA256: m.SHA256}
		switch {
		case final != "":
			vote.Skipped = "a reject is final"
		case ctx.Err() != nil:
			vote.Skipped = "cancelled"
		case m.inQuarantine(c.now()):
			vote.Skipped = "quarantined"
			vote.Err = ErrQuarantined
			if m.Policy == FailClosed && v.Fallback == "" {
				v.Fallback = fmt.Sprintf("plugin %q is quarantined after repeated failures", m.Name)
			}
		default:
			res := m.Plugin.Call(ctx, req)
			vote.Decision, vote.Err, vote.Duration, vote.Logs = res.Decision, res.Err, res.Duration, res.Logs
			if res.Err != nil {
				vote.Decision = abi.Decision{}
				if KindOf(res.Err) != KindCancelled {
					c.failed(m)
				}
				if m.Policy == FailClosed && v.Fallback == "" && ctx.Err() == nil {
					v.Fallback = fmt.Sprintf("plugin %q failed: %v", m.Name, res.Err)
				}
			} else {
				m.succeeded()
				vote.Enforced = m.Policy != FailMonitor
				if e := res.Decision.Explanation; e != nil {
					v.Explanations = append(v.Explanations, Explained{Plugin: m.Name, Reason: res.Decision.Reason, Explanation: *e})
				}
				if vote.Enforced && (res.Decision.Outcome == abi.OutcomeReject || res.Decision.Outcome == abi.OutcomeCancel) {
					final = m.Name
				}
			}
		}
		v.Votes = append(v.Votes, vote)
	}
	combine(&v, req.Options)
	if ctx.Err() != nil && !v.Decided() {
		v.Outcome, v.OptionID, v.DecidedBy = abi.OutcomeCancel, "", ""
		v.Reason = "cancelled while plugins ran"
	}
	return v
}

// combine applies DESIGN §4 to the enforced votes.
func combine(v *Verdict, options []abi.Option) {
	var (
		allows []Vote
		chosen []abi.Option
		asked  bool
	)
	for _, vote := range v.Votes {
		if !vote.Enforced {
			continue
		}
		d := vote.Decision
		switch d.Outcome {
		case abi.OutcomeReject, abi.OutcomeCancel:
			v.Outcome, v.DecidedBy, v.Reason = d.Outcome, vote.Plugin, d.Reason
			if d.Outcome == abi.OutcomeReject {
				if o, ok := d.Option(options); ok {
					v.OptionID = o.OptionID
				} else {
					v.Outcome = abi.OutcomeCancel
				}
			}
			return
		case abi.OutcomeAsk:
			asked = true
			v.AskedBy = append(v.AskedBy, vote.Plugin)
			if vote.Layer == LayerAdmin {
				v.StripDurable = true
			}
			if v.Reason == "" {
				v.Reason = d.Reason
			}
		case abi.OutcomeAllow, abi.OutcomeSelect:
			if o, ok := d.Option(options); ok {
				allows = append(allows, vote)
				chosen = append(chosen, o)
			}
		}
	}
	switch {
	case v.Fallback != "" || asked:
		v.Outcome = abi.OutcomeAsk
		return
	case len(allows) == 0:
		v.Outcome = abi.OutcomeAbstain
		return
	}
	pick := pickAllow(chosen)
	if pick < 0 {
		v.Outcome = abi.OutcomeAsk
		v.Reason = "plugins chose different options"
		return
	}
	v.Outcome, v.OptionID = allows[pick].Decision.Outcome, chosen[pick].OptionID
	v.DecidedBy, v.Reason = allows[pick].Plugin, allows[pick].Decision.Reason
}

// pickAllow returns the index of the option to answer among what several
// plugins chose, or -1 when they conflict: all the same option → it; options
// that differ only as allow_once versus allow_always → the allow_once one
// (the more conservative); anything else → a person decides.
func pickAllow(chosen []abi.Option) int {
	same := true
	for _, o := range chosen[1:] {
		same = same && o.OptionID == chosen[0].OptionID
	}
	if same {
		return 0
	}
	once := -1
	for i, o := range chosen {
		switch o.Kind {
		case abi.OptionAllowAlways:
		case abi.OptionAllowOnce:
			if once >= 0 && chosen[once].OptionID != o.OptionID {
				return -1
			}
			if once < 0 {
				once = i
			}
		default:
			return -1
		}
	}
	return once
}

func (m *member) inQuarantine(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return now.Before(m.quarantined)
}

func (m *member) succeeded() {
	m.mu.Lock()
	m.failures = 0
	m.mu.Unlock()
}

func (c *Chain) failed(m *member) {
	m.mu.Lock()
	m.failures++
	start := m.failures >= c.after
	if start {
		m.failures = 0
		m.quarantined = c.now().Add(c.period)
	}
	m.mu.Unlock()
	if start {
		c.log.Warn("plugin quarantined after repeated failures", "plugin", m.Name, "failures", c.after, "for", c.period, "policy", string(m.Policy))
	}
}
