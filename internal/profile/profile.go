package profile

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/jsontext"
)

// Profile is what permhost knows about one agent. Profiles are values of
// this package, never modified after init; copy one to change it
// ([Profile.WithDeciding]).
type Profile struct {
	// Name is the profile's stable id, the plugins' session.agent.profile.
	Name string
	// Title names the agent for people.
	Title string
	// Agents are the agentInfo names and versions the profile is for.
	Agents []Match
	// ToolName is where the agent's own name for a tool is, in order.
	ToolName []Source
	// Tools maps the agent's tool names to a family; a key ending in "*"
	// matches every name with that prefix. A tool not listed takes its
	// family from the ACP kind.
	Tools map[string]string
	// Fields says where the facts are for each family; the entry for ""
	// holds the defaults, and a family's entry replaces only the lists it
	// sets.
	Fields map[string]Fields
	// Modes are the agent's session modes, with whether each asks.
	Modes []Mode
	// AskingMode is the mode to use so that the agent asks before edits
	// and commands; empty when the profile does not know one.
	AskingMode string
	// ModeSwitch is how a client changes the mode, preferred first.
	ModeSwitch []Switch
	// Deciding are the words that mark a mode the profile does not list as
	// one that decides by itself, when its id or name contains one.
	Deciding []string
	// Grants say what the agent's durable options grant.
	Grants []Grant
	// Elicitation, when set, recognises the elicitation/create requests
	// that are approvals of a tool call rather than questions.
	Elicitation *MetaMatch
	// Questions recognise the agent's permission requests that are
	// questions or consents, not tool calls (question.go); the generic
	// shape is recognised for every profile.
	Questions []Question
	// Settings, when set, says that the agent decides by its own
	// configuration whatever mode it reports: a session in an asking mode
	// may still run calls unasked (settings.go).
	Settings *Settings
	// Notes are what a person should know about the agent, one line each.
	Notes []string
}

// Match is an agentInfo name and the versions a profile is for.
type Match struct {
	Name string
	// Min is the oldest version (inclusive) the profile was checked
	// against; Max, when set, the first version (exclusive) it is not for.
	// A version that does not parse matches.
	Min, Max string
}

// Fields are the sources of an action's facts. Command and Cwd take the
// first source that gives a value; Paths and URLs take every value of every
// source, in order.
type Fields struct {
	Command []Source
	Cwd     []Source
	Paths   []Source
	URLs    []Source
}

// Mode is one session mode of an agent.
type Mode struct {
	ID string
	// Asks is true when the agent asks before edits and commands in this
	// mode; false when it decides some of them by itself.
	Asks bool
	// Decides says what the agent decides by itself when Asks is false.
	Decides string
}

// Switch is a way to change a session's mode.
type Switch string

// Ways to change a mode.
const (
	// SwitchConfigOption is session/set_config_option on the config option
	// of category "mode".
	SwitchConfigOption Switch = "config_option"
	// SwitchSetMode is session/set_mode.
	SwitchSetMode Switch = "set_mode"
)

// Grant is what choosing one durable option really grants.
type Grant struct {
	// OptionID is the option's id.
	OptionID string
	// Families are the families of the requests the entry is for; empty
	// means any.
	Families []string
	// Scope is an abi.GrantScope constant.
	Scope string
	// Rule is the rule the agent records, a template: {name} is the first
	// group of Name matched against the option's name, {root} the command
	// root, {command} the command, {paths} the action's paths. A template
	// whose value is unknown gives no rule.
	Rule string
	// Name matches the option's name for {name}.
	Name *regexp.Regexp
	// Mode is the mode the session switches to.
	Mode string
	// Where says where the agent keeps the grant and what was seen of it.
	Where string
}

// MetaMatch holds when a request's _meta[Key] is the string Value.
type MetaMatch struct {
	Key, Value string
}

// DefaultDeciding are the words that mark a mode of an unknown agent as one
// that decides by itself.
var DefaultDeciding = []string{"auto", "yolo", "bypass", "full-access", "accept"}

// profiles are the known agents, most specific first.
var profiles = []*Profile{claude, codex, gemini, qwen, kimi, opencode, copilot, vibe, auggie, cline}

// All returns the known profiles and then Generic, in a fixed order.
func All() []*Profile { return append(slices.Clone(profiles), Generic) }

// Recognize returns the profile for the agent that sent agentInfo name and
// version in initialize, or Generic when no profile is for it.
func Recognize(name, version string) *Profile {
	for _, p := range profiles {
		for _, m := range p.Agents {
			if m.Name == name && inRange(version, m.Min, m.Max) {
				return p
			}
		}
	}
	return Generic
}

// ByName returns the profile with that Name, or nil.
func ByName(name string) *Profile {
	for _, p := range All() {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// WithDeciding returns a copy of p that marks the modes it does not list as
// deciding by the given words (for a configured list).
func (p *Profile) WithDeciding(words []string) *Profile {
	c := *p
	c.Deciding = slices.Clone(words)
	return &c
}

// Mode returns the profile's entry for mode id.
func (p *Profile) Mode(id string) (Mode, bool) {
	for _, m := range p.Modes {
		if m.ID == id {
			return m, true
		}
	}
	return Mode{}, false
}

// Asks reports whether the agent asks before edits and commands in the mode
// with this id and display name: as the profile says for a mode it lists;
// otherwise unless the id or the name contains one of the Deciding words.
func (p *Profile) Asks(id, name string) bool {
	if m, ok := p.Mode(id); ok {
		return m.Asks
	}
	id, name = strings.ToLower(id), strings.ToLower(name)
	for _, w := range p.Deciding {
		w = strings.ToLower(w)
		if strings.Contains(id, w) || strings.Contains(name, w) {
			return false
		}
	}
	return true
}

// Offered is a mode a session offers: its id and display name.
type Offered struct {
	ID, Name string
}

// AskingModeOf returns the mode to move a session offering these modes to
// so that the agent asks: the profile's asking mode when offered; else
// "default" when offered and asking; else the first offered mode that
// asks. It returns false when no offered mode asks.
func (p *Profile) AskingModeOf(offered []Offered) (string, bool) {
	has := func(id string) bool {
		return slices.ContainsFunc(offered, func(o Offered) bool { return o.ID == id })
	}
	if p.AskingMode != "" && has(p.AskingMode) {
		return p.AskingMode, true
	}
	for _, o := range offered {
		if o.ID == "default" && p.Asks(o.ID, o.Name) {
			return o.ID, true
		}
	}
	for _, o := range offered {
		if p.Asks(o.ID, o.Name) {
			return o.ID, true
		}
	}
	return "", false
}

// IsApprovalElicitation reports whether an elicitation/create whose params
// carry this _meta object is an approval of a tool call rather than a
// question. _meta that is not one strict JSON object is not an approval.
func (p *Profile) IsApprovalElicitation(meta json.RawMessage) bool {
	if p.Elicitation == nil {
		return false
	}
	v, ok := object(meta)[p.Elicitation.Key]
	if !ok {
		return false
	}
	s, err := jsontext.String(v)
	return err == nil && s == p.Elicitation.Value
}

// GrantOf returns what choosing option o really grants, in a request whose
// action is a: for a durable option, the profile's description, or scope
// "unknown" when it has none; for a one-time option nil, unless the profile
// says it also switches the mode. root names the programs the command runs
// ("rm", or "git, rm"), "" when unknown.
func (p *Profile) GrantOf(o abi.Option, a abi.Action, root string) *abi.Grant {
	for _, g := range p.Grants {
		if g.OptionID != o.OptionID || (len(g.Families) > 0 && !slices.Contains(g.Families, a.Family)) {
			continue
		}
		return &abi.Grant{Scope: g.Scope, Rule: g.rule(o.Name, a, root), Mode: g.Mode}
	}
	if !o.Durable {
		return nil
	}
	return &abi.Grant{Scope: abi.GrantScopeUnknown}
}

var placeholder = regexp.MustCompile(`\{(name|root|command|paths)\}`)

func (g Grant) rule(optionName string, a abi.Action, root string) string {
	unknown := false
	out := placeholder.ReplaceAllStringFunc(g.Rule, func(ph string) string {
		var v string
		switch ph {
		case "{name}":
			if g.Name != nil {
				if m := g.Name.FindStringSubmatch(optionName); len(m) > 1 {
					v = m[1]
				}
			}
		case "{root}":
			v = root
		case "{command}":
			v = a.Command
		case "{paths}":
			v = strings.Join(a.Paths, ", ")
		}
		if v == "" {
			unknown = true
		}
		return v
	})
	if unknown {
		return ""
	}
	return out
}
