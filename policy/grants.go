package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/builtin"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/grants"
	"github.com/permhost/permhost/internal/profile"
)

// This file is [session] allow_always: which of the agent's options the
// plugins and the person see, permhost's own grants offered in place of
// the agent's durable options, and where a stored grant sits in a
// decision (RATIONALE.md, "Where a grant sits in the chain").

// ByGrant starts the decidedBy of a decision a stored grant made:
// "grant:g-1a2b3c4d5e".
const ByGrant = "grant:"

// LogGrant is the grant a person's answer recorded.
type LogGrant struct {
	ID    string `json:"id,omitempty"`
	Scope string `json:"scope"`
	Name  string `json:"name"`
	// Option is the option of permhost's the person chose.
	Option string `json:"option"`
	// Error says why the grant could not be stored (the agent still got
	// its one-time allow: the person allowed this call).
	Error string `json:"error,omitempty"`
}

// handsOver reports whether choosing o would let the agent decide later
// calls by itself: an allow_always or reject_always option, an option
// whose changes it describes, and a one-time option the profile says
// records a rule, has an unknown effect, or switches to a mode that does
// not ask. A one-time option whose only effect is a switch to a mode that
// asks (ExitPlanMode's "Yes, manually approve edits") hands nothing over.
func handsOver(o abi.Option, prof *profile.Profile) bool {
	switch {
	case o.Kind != abi.OptionAllowOnce && o.Kind != abi.OptionRejectOnce:
		return true
	case o.Changes != nil:
		return true
	case !o.Durable:
		return false
	}
	g := o.Grants
	if g == nil || g.Scope == abi.GrantScopeUnknown || g.Rule != "" || g.Mode == "" {
		return true
	}
	return !prof.Asks(g.Mode, "")
}

// reqProfile is the profile of the agent that sent req (the one
// BuildRequest read it with, for the agent's own requests), with the
// configured deciding words for an agent permhost has no profile for.
func (e *Engine) reqProfile(req abi.Request) *profile.Profile {
	p := profile.Generic
	if req.Session.Agent != nil {
		if q := profile.ByName(req.Session.Agent.Profile); q != nil {
			p = q
		}
	}
	if p == profile.Generic && e.cfg.Session.DecidingWords != nil {
		p = p.WithDeciding(e.cfg.Session.DecidingWords)
	}
	return p
}

// switchesToDeciding reports whether choosing o switches the session to a
// mode that decides by itself (ExitPlanMode's exit-plan-auto, claude's
// allow-with-updates on an edit).
func switchesToDeciding(o abi.Option, prof *profile.Profile) bool {
	return o.Grants != nil && o.Grants.Mode != "" && !prof.Asks(o.Grants.Mode, "")
}

// decidingSwitches returns the options that switch to a deciding mode.
func decidingSwitches(options []abi.Option, prof *profile.Profile) []abi.Option {
	var out []abi.Option
	for _, o := range options {
		if switchesToDeciding(o, prof) {
			out = append(out, o)
		}
	}
	return out
}

// withoutModeSwitches returns options without those that switch to a
// deciding mode when [session] modes governs, options otherwise.
func (e *Engine) withoutModeSwitches(options []abi.Option, prof *profile.Profile) []abi.Option {
	if e.cfg.Session.Modes != config.ModesGovern {
		return options
	}
	out := make([]abi.Option, 0, len(options))
	for _, o := range options {
		if !switchesToDeciding(o, prof) {
			out = append(out, o)
		}
	}
	return out
}

// oneTime returns options without those that hand later decisions to the
// agent.
func oneTime(options []abi.Option, prof *profile.Profile) []abi.Option {
	out := make([]abi.Option, 0, len(options))
	for _, o := range options {
		if !handsOver(o, prof) {
			out = append(out, o)
		}
	}
	return out
}

// pluginView is req as the plugins see it: with allow_always permhost or
// off, without the agent's options that hand later decisions to it; with
// modes govern, without those that switch to a mode that decides by
// itself; so that no verdict (an allow always included) can choose one.
func (e *Engine) pluginView(req abi.Request) abi.Request {
	prof := e.reqProfile(req)
	if e.cfg.Session.OneTimeOnly() {
		req.Options = oneTime(req.Options, prof)
	}
	req.Options = e.withoutModeSwitches(req.Options, prof)
	return req
}

// plainAllow is the agent's option a grant answers with: its first allow
// once that changes nothing beyond the call.
func plainAllow(options []abi.Option) (abi.Option, bool) {
	for _, o := range options {
		if o.Kind == abi.OptionAllowOnce && !answer.Durable(o) {
			return o, true
		}
	}
	return abi.Option{}, false
}

// decide runs the plugins on their view of req, then applies a stored
// grant. A grant is the person's own standing allow, so it counts as one
// more allow after every plugin, under the chain's combination rule: a
// plugin's reject, cancel or ask beats it, as does the builtin fallback
// (a failed closed plugin: a failure never becomes an allow); over an
// abstaining chain it allows, with the agent's plain one-time allow; a
// plugin's allow of that same option stands as the plugin's; a plugin's
// other choice conflicts and a person decides.
func (e *Engine) decide(ctx context.Context, req abi.Request) host.Verdict {
	v := e.Run(ctx, e.pluginView(req))
	if !e.cfg.Session.GrantsOn() || e.grants == nil || ctx.Err() != nil {
		return v
	}
	switch {
	case v.Fallback != "", v.Outcome != abi.OutcomeAbstain && v.Outcome != abi.OutcomeAllow && v.Outcome != abi.OutcomeSelect:
		return v
	}
	allow, ok := plainAllow(e.pluginView(req).Options)
	if !ok {
		return v
	}
	g, ok, err := e.grants.Match(req)
	if err != nil {
		e.log.Warn("the grants file cannot be used: no grant applies", "path", e.grants.Path(), "err", err)
		return v
	}
	if !ok {
		return v
	}
	switch {
	case v.Outcome == abi.OutcomeAbstain:
		v.Outcome, v.OptionID, v.DecidedBy, v.Reason = abi.OutcomeAllow, allow.OptionID, ByGrant+g.ID, g.Name
	case v.OptionID != allow.OptionID:
		v.Reason = fmt.Sprintf("plugin %s chose %q, grant %s allows once", v.DecidedBy, v.OptionID, g.ID)
		v.Outcome, v.OptionID, v.DecidedBy = abi.OutcomeAsk, "", ""
	}
	return v
}

// personOptions are the options a person may choose for verdict v, and
// permhost's grants among them: with allow_always permhost or off,
// without those that hand later decisions to the agent; with permhost,
// and unless the choice is narrowed to one-time options (the builtin
// fallback governs, an admin asked), permhost's own grants, which answer
// the agent with its plain one-time allow.
func (e *Engine) personOptions(req abi.Request, v host.Verdict) ([]abi.Option, []grants.Offer) {
	prof := e.reqProfile(req)
	shown := e.withoutModeSwitches(shownOptions(req, v), prof)
	if !e.cfg.Session.OneTimeOnly() {
		return shown, nil
	}
	shown = oneTime(shown, prof)
	if !e.cfg.Session.GrantsOn() || e.grants == nil || v.Fallback != "" || v.StripDurable {
		return shown, nil
	}
	if _, ok := plainAllow(shown); !ok {
		return shown, nil
	}
	// req holds every option the agent offered: permhost's ids avoid
	// those it does not show too.
	offers := grants.Offers(req)
	for _, o := range offers {
		shown = append(shown, o.Option)
	}
	return shown, offers
}

// personChoices are the options a person may choose for verdict v on a
// path that offers no grants of permhost's (an approval elicitation):
// personOptions without the offers, narrowed the same way.
func (e *Engine) personChoices(req abi.Request, v host.Verdict) []abi.Option {
	shown, offers := e.personOptions(req, v)
	return withoutOffers(shown, offers)
}

func offerOf(offers []grants.Offer, id string) (grants.Offer, bool) {
	i := slices.IndexFunc(offers, func(o grants.Offer) bool { return o.Option.OptionID == id })
	if i < 0 {
		return grants.Offer{}, false
	}
	return offers[i], true
}

// present is presentation with permhost's grants: the agent's options
// shown are the agent's own bytes, permhost's are appended after them
// (as allow_always options, their names stating the scope), and
// _meta.permhost.grants says what each allows.
func (e *Engine) present(pr *acp.PermissionRequest, req abi.Request, v host.Verdict, shown []abi.Option, offers []grants.Offer) (json.RawMessage, error) {
	params, err := presentation(pr, req, v, withoutOffers(shown, offers))
	if err != nil || len(offers) == 0 {
		return params, err
	}
	ms, err := splitObject(params)
	if err != nil {
		return nil, err
	}
	raw, _ := getMember(ms, "options")
	var all []json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	type described struct {
		OptionID string           `json:"optionId"`
		Scope    string           `json:"scope"`
		Kind     string           `json:"kind"`
		Project  string           `json:"project"`
		Session  string           `json:"session,omitempty"`
		Cwd      string           `json:"cwd,omitempty"`
		Commands []grants.Command `json:"commands,omitempty"`
		Dir      string           `json:"dir,omitempty"`
		Files    []string         `json:"files,omitempty"`
	}
	var desc []described
	for _, o := range offers {
		all = append(all, marshal(map[string]string{"optionId": o.Option.OptionID, "name": o.Option.Name, "kind": o.Option.Kind}))
		g := o.Grant
		desc = append(desc, described{o.Option.OptionID, g.Scope, g.Kind, g.Project, g.Session, g.Cwd, g.Commands, g.Dir, g.Files})
	}
	params = joinObject(setMember(ms, "options", arrayOf(all)))
	return withPermhostMeta(params, "grants", marshal(desc))
}

// withPermhostMeta sets _meta.permhost[key], keeping what is there.
func withPermhostMeta(params json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	ms, err := splitObject(params)
	if err != nil {
		return nil, err
	}
	var ph []member
	if meta, ok := getMember(ms, "_meta"); ok {
		if mm, err := splitObject(meta); err == nil {
			if raw, ok := getMember(mm, "permhost"); ok {
				ph, _ = splitObject(raw)
			}
		}
	}
	return withMeta(params, "permhost", joinObject(setMember(ph, key, value)))
}

// grantChosen records the grant of the offer the person chose and answers
// the agent with its plain one-time allow: permhost, not the agent, holds
// the standing decision.
func (h proxyHandler) grantChosen(req abi.Request, offer grants.Offer, d *decision) {
	e := h.e
	allow, ok := plainAllow(oneTime(req.Options, e.reqProfile(req)))
	if !ok {
		// personOptions offers grants only beside a plain allow.
		a := builtin.Headless(req.Options)
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, "internal error: a grant was chosen with no one-time allow to answer"
		h.setAnswer(d, req, a.OptionID, a.Cancelled)
		return
	}
	lg := &LogGrant{Scope: offer.Grant.Scope, Name: offer.Grant.Name, Option: offer.Option.OptionID}
	g, err := e.grants.Add(offer.Grant)
	if err != nil {
		lg.Error = err.Error()
		e.log.Error("the grant could not be stored; the agent is allowed this one call", "grant", offer.Grant.Name, "path", e.grants.Path(), "err", err)
	} else {
		lg.ID = g.ID
		e.log.Info("grant recorded", "grant", g.ID, "scope", g.Scope, "name", g.Name)
	}
	d.entry.Grant = lg
	d.entry.Reason = "the person chose " + strings.TrimPrefix(offer.Grant.Name, "Allow ")
	// The agent gets its own option, not the editor's answer.
	h.setAnswer(d, req, allow.OptionID, false)
}

func isOffer(offers []grants.Offer, id string) bool {
	_, ok := offerOf(offers, id)
	return ok
}

func withoutOffers(shown []abi.Option, offers []grants.Offer) []abi.Option {
	return slices.DeleteFunc(slices.Clone(shown), func(o abi.Option) bool { return isOffer(offers, o.OptionID) })
}
