package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/answer"
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
	// Plugin is a [*Plugin], a [Loading] decider, or any other Decider.
	Plugin Decider
	// Version and SHA256 are recorded with each vote for the decision log;
	// when both are empty, those Plugin reports are (Info().Version and
	// SHA256(), as [*Plugin] has).
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
	// ErrStillLoading is wrapped by the load failure of a member whose
	// plugin had not loaded by its deadline ([Loading]).
	ErrStillLoading = errors.New("host: plugin still loading")
	// ErrNotLoaded is wrapped by the failure a [Loading] decider reports
	// for a plugin that failed to load (and is being retried).
	ErrNotLoaded = errors.New("host: plugin not loaded")
	// ErrPanicked is wrapped by the trap failure of a member whose call
	// panicked.
	ErrPanicked = errors.New("host: plugin call panicked")
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
	Plugin string
	Layer  string
	Policy FailurePolicy
	// Version and SHA256 are the member's, else its loaded plugin's.
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
	// Skipped says why the plugin did not run: "quarantined", "a reject
	// is final" or "cancelled".
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
//
// Members whose plugin is still loading ([Loading]) are passed over at
// first: the ready ones decide at once, and a reject among them answers
// without waiting for the others. Then each loading member is called as
// soon as it has loaded, in the order they become ready, until a reject
// decides; one not loaded by its load deadline counts as failed for this
// decision (kind load, [ErrStillLoading]) so that its failure policy
// applies. Votes and their combination keep the layer order.
//
// A member that panics has failed (kind trap, [ErrPanicked]); the chain
// goes on. When ctx ends before Run returns, the outcome is cancel, whatever
// the members that ran said: a decision cut short is never an allow.
func (c *Chain) Run(ctx context.Context, req abi.Request) Verdict {
	v := Verdict{Votes: make([]Vote, len(c.members))}
	r := &run{chain: c, req: req, v: &v}
	var waiting []int
	for i, m := range c.members {
		v.Votes[i] = Vote{Plugin: m.Name, Layer: m.Layer, Policy: m.Policy, Version: m.Version, SHA256: m.SHA256}
		switch {
		case r.final:
			v.Votes[i].Skipped = skippedFinal
		case loading(m.Plugin):
			waiting = append(waiting, i)
		default:
			r.member(ctx, i)
		}
	}
	r.awaitLoading(ctx, waiting)
	if r.enc != nil {
		r.enc.release()
	}
	combine(&v, req.Options)
	if ctx.Err() != nil {
		v.Outcome, v.OptionID, v.DecidedBy = abi.OutcomeCancel, "", ""
		v.Reason = "cancelled while plugins ran"
	}
	return v
}

// Why a member did not run, in Vote.Skipped.
const (
	skippedFinal       = "a reject is final"
	skippedCancelled   = "cancelled"
	skippedQuarantined = "quarantined"
)

// run is one decision in progress.
type run struct {
	chain *Chain
	req   abi.Request
	v     *Verdict
	final bool // an enforced reject or cancel decided
	enc   *encodedRequest
}

// member runs member i, or records why it does not.
func (r *run) member(ctx context.Context, i int) {
	c, m, vote := r.chain, r.chain.members[i], &r.v.Votes[i]
	switch {
	case ctx.Err() != nil:
		vote.Skipped = skippedCancelled
		return
	case m.inQuarantine(c.now()):
		vote.Skipped = skippedQuarantined
		vote.Err = ErrQuarantined
		if m.Policy == FailClosed && r.v.Fallback == "" {
			r.v.Fallback = fmt.Sprintf("plugin %q is quarantined after repeated failures", m.Name)
		}
		return
	}
	res := r.call(ctx, m)
	vote.Decision, vote.Err, vote.Duration, vote.Logs = res.Decision, res.Err, res.Duration, res.Logs
	if id, ok := m.Plugin.(identified); ok && vote.Version == "" && vote.SHA256 == "" {
		vote.Version, vote.SHA256 = id.Info().Version, id.SHA256()
	}
	if res.Err != nil {
		vote.Decision = abi.Decision{}
		if countsTowardQuarantine(res.Err) {
			c.failed(m)
		}
		r.closedFailure(ctx, m, res.Err)
		return
	}
	m.succeeded()
	vote.Enforced = m.Policy != FailMonitor
	if e := res.Decision.Explanation; e != nil {
		r.v.Explanations = append(r.v.Explanations, Explained{Plugin: m.Name, Reason: res.Decision.Reason, Explanation: *e})
	}
	if vote.Enforced && (res.Decision.Outcome == abi.OutcomeReject || res.Decision.Outcome == abi.OutcomeCancel) {
		r.final = true
	}
}

// countsTowardQuarantine: a call the plugin failed. A cancelled call, and
// a plugin that is not loaded, was not the plugin misbehaving on a call:
// quarantine would only keep it out after it loads.
func countsTowardQuarantine(err error) bool {
	return KindOf(err) != KindCancelled && !errors.Is(err, ErrNotLoaded) && !errors.Is(err, ErrStillLoading)
}

// closedFailure hands the decision to the fallback for a failed member
// whose policy is closed.
func (r *run) closedFailure(ctx context.Context, m *member, err error) {
	if m.Policy == FailClosed && r.v.Fallback == "" && ctx.Err() == nil {
		r.v.Fallback = fmt.Sprintf("plugin %q failed: %v", m.Name, err)
	}
}

// call calls m's plugin; a panic is the member's failure. A loaded
// [*Plugin] gets the request encoded once for the whole chain.
func (r *run) call(ctx context.Context, m *member) (res Result) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			r.chain.log.Error("plugin call panicked; counted as its failure", "plugin", m.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if r.enc != nil {
				r.enc.abandoned = true // whatever held it is in an unknown state
			}
			res = Result{Err: &Error{Kind: KindTrap, Plugin: m.Name, Err: fmt.Errorf("%w: %v", ErrPanicked, p)}, Duration: time.Since(start)}
		}
	}()
	r.chain.log.Debug("calling plugin", "plugin", m.Name, "decisionId", r.req.DecisionID)
	if p := pluginOf(m.Plugin); p != nil {
		if r.enc == nil {
			r.enc = newEncodedRequest(r.req)
		}
		return p.callEncoded(ctx, r.enc)
	}
	return m.Plugin.Call(ctx, r.req)
}

// Loading is implemented by a member's Decider whose plugin loads in the
// background (package policy's engine makes one per configured plugin).
type Loading interface {
	Decider
	// Loaded returns a channel that is closed once loading is over (the
	// plugin loaded or failed to) and the time after which a decision no
	// longer waits for it.
	Loaded() (done <-chan struct{}, until time.Time)
	// Plugin returns the loaded plugin when it runs in this process, or
	// nil (while it loads, when it failed to load, or when it runs
	// elsewhere): the chain then calls Call. The chain calls a plugin of
	// this process directly, so that every plugin of a decision shares one
	// encoding of the request.
	Plugin() *Plugin
}

// identified is a Decider that can say which plugin it runs, for the
// votes: [*Plugin] does, and so may a [Loading] decider once loaded.
type identified interface {
	Info() abi.Info
	SHA256() string
}

// pluginOf returns the plugin behind d, or nil.
func pluginOf(d Decider) *Plugin {
	switch d := d.(type) {
	case *Plugin:
		return d
	case Loading:
		return d.Plugin()
	}
	return nil
}

func loading(d Decider) bool {
	l, ok := d.(Loading)
	if !ok {
		return false
	}
	done, _ := l.Loaded()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// awaitLoading runs the members at waiting (indexes of members still
// loading) as each finishes loading, until a reject is final, ctx ends or
// every one has loaded or run out of time.
func (r *run) awaitLoading(ctx context.Context, waiting []int) {
	if len(waiting) == 0 {
		return
	}
	type event struct {
		i    int
		late bool
	}
	events := make(chan event, len(waiting))
	stop := make(chan struct{})
	defer close(stop)
	for _, i := range waiting {
		done, until := r.chain.members[i].Plugin.(Loading).Loaded()
		go func() {
			t := time.NewTimer(time.Until(until))
			defer t.Stop()
			select {
			case <-done:
				events <- event{i: i}
			case <-t.C:
				select {
				case <-done:
					events <- event{i: i}
				default:
					events <- event{i: i, late: true}
				}
			case <-stop:
			}
		}()
	}
	left := map[int]bool{}
	for _, i := range waiting {
		left[i] = true
	}
	for len(left) > 0 && !r.final {
		select {
		case ev := <-events:
			delete(left, ev.i)
			if !ev.late {
				r.member(ctx, ev.i)
				continue
			}
			m, vote := r.chain.members[ev.i], &r.v.Votes[ev.i]
			vote.Err = &Error{Kind: KindLoad, Plugin: m.Name, Err: ErrStillLoading}
			r.closedFailure(ctx, m, vote.Err)
		case <-ctx.Done():
			for i := range left {
				r.v.Votes[i].Skipped = skippedCancelled
			}
			return
		}
	}
	for i := range left {
		r.v.Votes[i].Skipped = skippedFinal
	}
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
				if o, ok := answer.Choose(options, d); ok {
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
			if o, ok := answer.Choose(options, d); ok {
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
	pick := answer.Agree(chosen)
	if pick < 0 {
		v.Outcome = abi.OutcomeAsk
		v.Reason = "plugins chose different options"
		return
	}
	v.Outcome, v.OptionID = allows[pick].Decision.Outcome, chosen[pick].OptionID
	v.DecidedBy, v.Reason = allows[pick].Plugin, allows[pick].Decision.Reason
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
