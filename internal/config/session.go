package config

import "fmt"

// Values of [session] modes and fs.
const (
	// ModesGovern: permhost keeps sessions in a mode where the agent asks.
	ModesGovern = "govern"
	// ModesPass: modes are the agent's and the editor's business.
	ModesPass = "pass"
	// FSGovern: the agent's fs/* and terminal/create requests go through
	// the plugin chain.
	FSGovern = "govern"
	// FSPass: they pass to the editor untouched.
	FSPass = "pass"
)

// Values of [session] allow_always.
const (
	// AllowAlwaysPermhost: the agent's durable options are not shown;
	// permhost offers its own grants, whose scope the option names exactly.
	AllowAlwaysPermhost = "permhost"
	// AllowAlwaysAgent: the agent's durable options are forwarded.
	AllowAlwaysAgent = "agent"
	// AllowAlwaysOff: only one-time options are offered.
	AllowAlwaysOff = "off"
)

// Values of [session] reasons.
const (
	// ReasonsSteer: a reject decided by a plugin, the fallback or a person
	// who typed a reason is followed by a _session/steering request that
	// tells the agent's model why, when the agent advertised it.
	ReasonsSteer = "steer"
	// ReasonsOff: the model is told nothing beyond the reject.
	ReasonsOff = "off"
)

// Values of [session] unasked.
const (
	// UnaskedWarn: a tool call that acts and runs with no permission
	// request in a governed session is logged, and warned about once.
	UnaskedWarn = "warn"
	// UnaskedCancel: the first such call ends the turn (session/cancel
	// to the agent) and the editor is told why.
	UnaskedCancel = "cancel"
)

// Session is the [session] table: what permhost does about the decisions an
// agent would otherwise make by itself. Load and Parse fill every field
// with its default; in a Config built in code the empty strings mean
// today's agent-side behaviour: pass, agent, pass.
type Session struct {
	// Modes is ModesGovern or ModesPass; by default govern whenever a
	// plugin or bundle is configured, else pass.
	Modes string
	// AllowAlways is AllowAlwaysPermhost (the default), AllowAlwaysAgent or
	// AllowAlwaysOff.
	AllowAlways string
	// FS is FSGovern or FSPass, by default as Modes.
	FS string
	// DecidingWords mark a mode of an agent permhost has no profile for as
	// one that decides by itself, when its id or name contains one of them;
	// nil means the built-in list (auto, yolo, bypass, full-access,
	// accept).
	DecidingWords []string
	// Reasons is ReasonsSteer or ReasonsOff; by default steer whenever a
	// plugin or bundle is configured, else off.
	Reasons string
	// Unasked is UnaskedWarn (the default) or UnaskedCancel.
	Unasked string
	// Line is the line of [session]; 0 when the file has none.
	Line int
}

// GrantsOn reports whether permhost offers and applies its own grants.
func (s Session) GrantsOn() bool { return s.AllowAlways == AllowAlwaysPermhost }

// OneTimeOnly reports whether the agent's durable options are kept from
// the person and the plugins (allow_always permhost or off).
func (s Session) OneTimeOnly() bool {
	return s.AllowAlways == AllowAlwaysPermhost || s.AllowAlways == AllowAlwaysOff
}

// session reads the [session] table into s; defaults are applied by
// sessionDefaults once the plugins and bundles are known.
func (c *checker) session(k string, v any, s *Session) {
	s.Line = c.line(k)
	c.table(k, c.asTable(k, v), map[string]func(string, any){
		"modes": func(k string, v any) { s.Modes = c.enum(k, v, ModesGovern, ModesPass) },
		"allow_always": func(k string, v any) {
			s.AllowAlways = c.enum(k, v, AllowAlwaysPermhost, AllowAlwaysAgent, AllowAlwaysOff)
		},
		"fs":      func(k string, v any) { s.FS = c.enum(k, v, FSGovern, FSPass) },
		"reasons": func(k string, v any) { s.Reasons = c.enum(k, v, ReasonsSteer, ReasonsOff) },
		"unasked": func(k string, v any) { s.Unasked = c.enum(k, v, UnaskedWarn, UnaskedCancel) },
		"deciding_words": func(k string, v any) {
			list, ok := v.([]any)
			if !ok {
				c.fail(k, "want an array of strings, got %s", typeName(v))
				return
			}
			s.DecidingWords = []string{}
			for i, e := range list {
				ek := fmt.Sprintf("%s[%d]", k, i)
				w := c.str(ek, e)
				switch {
				case c.failed(ek):
				case w == "":
					c.fail(ek, "must not be empty (it would mark every mode as deciding)")
				default:
					s.DecidingWords = append(s.DecidingWords, w)
				}
			}
		},
	})
}

// sessionDefaults fills what [session] left out: modes and fs govern when
// a plugin or bundle is configured (a policy then exists to govern with),
// allow_always is permhost, reasons steer when there is a policy.
func sessionDefaults(s *Session, policies bool) {
	dflt := ModesPass
	if policies {
		dflt = ModesGovern
	}
	if s.Modes == "" {
		s.Modes = dflt
	}
	if s.FS == "" {
		s.FS = dflt
	}
	if s.AllowAlways == "" {
		s.AllowAlways = AllowAlwaysPermhost
	}
	if s.Unasked == "" {
		s.Unasked = UnaskedWarn
	}
	if s.Reasons == "" {
		s.Reasons = ReasonsOff
		if policies {
			s.Reasons = ReasonsSteer
		}
	}
}
