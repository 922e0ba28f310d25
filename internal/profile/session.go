package profile

import (
	"errors"
	"fmt"
	"slices"

	"github.com/permhost/permhost/internal/jsontext"
)

// ErrSession is wrapped by the errors of [ReadSessionModes].
var ErrSession = errors.New("profile: session result")

// SessionModes are the modes a session/new, session/load or session/resume
// result offers, and how a client can change them.
type SessionModes struct {
	// Current is the current mode: the currentValue of the config option
	// of category "mode" when there is one (ACP tells clients to prefer
	// config options), else modes.currentModeId; "" when neither is given.
	Current string
	// Offered are the modes to choose from: the config option's values, or
	// modes.availableModes.
	Offered []Offered
	// ConfigOption is the id of the config option of category "mode"; ""
	// when there is none.
	ConfigOption string
	// SetMode is true when the result has modes (session/set_mode applies).
	SetMode bool
	// ConfigIDType is true when the mode option is named by "configId",
	// ACP v2's config option shape: v2's session/set_config_option also
	// says {"type":"id"} beside the value.
	ConfigIDType bool
}

// ReadSessionModes reads the modes of a session/new, session/load or
// session/resume result strictly: a result that is not one strict JSON
// object fails with ErrSession; members it does not need are not looked at,
// and a modes or configOptions member of the wrong shape counts as absent.
func ReadSessionModes(result []byte) (SessionModes, error) {
	var m SessionModes
	ms, err := jsontext.Object(result)
	if err != nil {
		return m, fmt.Errorf("%w: %w", ErrSession, err)
	}
	top := map[string][]byte{}
	for _, x := range ms {
		top[x.Key] = x.Value
	}
	if modes := object(top["modes"]); modes != nil {
		cur, err := modeString(modes["currentModeId"])
		if err != nil {
			return m, fmt.Errorf("%w: modes.currentModeId: %w", ErrSession, err)
		}
		var offered []Offered
		for _, e := range array(modes["availableModes"]) {
			o := object(e)
			id, err := jsontext.String(o["id"])
			if err != nil || id == "" {
				continue
			}
			name, _ := jsontext.String(o["name"])
			offered = append(offered, Offered{ID: id, Name: name})
		}
		// A current mode with nothing offered still counts: what the
		// profile knows of it decides, whatever availableModes says.
		if len(offered) > 0 || cur != "" {
			m.Current, m.Offered, m.SetMode = cur, offered, true
		}
	}
	for _, e := range array(top["configOptions"]) {
		o := object(e)
		id, _ := jsontext.String(o["id"])
		v2 := false
		if id == "" && o["id"] == nil {
			id, _ = jsontext.String(o["configId"]) // ACP v2
			v2 = true
		}
		cat, _ := jsontext.String(o["category"])
		if id == "" || cat != "mode" {
			continue
		}
		var offered []Offered
		for _, v := range array(o["options"]) {
			offered = append(offered, selectValues(v)...)
		}
		cur, err := modeString(o["currentValue"])
		if err != nil {
			return m, fmt.Errorf("%w: the mode option's currentValue: %w", ErrSession, err)
		}
		if len(offered) == 0 && cur == "" {
			continue
		}
		m.ConfigOption, m.Offered, m.ConfigIDType = id, offered, v2
		if cur != "" {
			m.Current = cur
		}
		break
	}
	return m, nil
}

// modeString reads a mode id: absent or null is "", anything but a string
// is an error (permhost cannot tell which mode it names).
func modeString(raw []byte) (string, error) {
	if raw == nil || jsontext.IsNull(raw) {
		return "", nil
	}
	return jsontext.String(raw)
}

// selectValues reads one entry of a select config option's options: a
// value, or a group of values.
func selectValues(b []byte) []Offered {
	o := object(b)
	if v, err := jsontext.String(o["value"]); err == nil && v != "" {
		name, _ := jsontext.String(o["name"])
		return []Offered{{ID: v, Name: name}}
	}
	var out []Offered
	for _, g := range array(o["options"]) {
		g := object(g)
		if v, err := jsontext.String(g["value"]); err == nil && v != "" {
			name, _ := jsontext.String(g["name"])
			out = append(out, Offered{ID: v, Name: name})
		}
	}
	return out
}

// Plan is what a governing proxy does with a session's modes.
type Plan struct {
	// CurrentAsks is whether the agent asks in the current mode (true
	// when the session has no modes or does not say which is current and
	// permhost cannot tell otherwise).
	CurrentAsks bool
	// Target is the mode to move the session to, "" when it stays.
	Target string
	// Switch is how: session/set_config_option or session/set_mode.
	Switch Switch
	// Governable is whether the policy sees what the agent does: the
	// session is, or can be moved to, a mode that asks (or has no modes).
	Governable bool
	// Why says so in a sentence.
	Why string
}

// Plan decides what to do with a session offering m: nothing when it
// asks already or has no modes; else move it to AskingModeOf(m.Offered)
// (the profile's AskingMode when it offers none) by the first of the
// profile's ModeSwitch ways the session offers.
func (p *Profile) Plan(m SessionModes) Plan {
	if len(m.Offered) == 0 && m.Current != "" && !p.Asks(m.Current, "") {
		if p.AskingMode == "" {
			return Plan{Why: "the current mode " + m.Current + " decides by itself and the session offers no mode that asks"}
		}
		for _, s := range p.ModeSwitch {
			if (s == SwitchConfigOption && m.ConfigOption != "") || (s == SwitchSetMode && m.SetMode) {
				return Plan{Target: p.AskingMode, Switch: s, Governable: true,
					Why: "the current mode " + m.Current + " decides by itself; " + p.AskingMode + " asks"}
			}
		}
		return Plan{Target: p.AskingMode, Why: "the current mode " + m.Current + " decides by itself and the session offers no way to change it"}
	}
	if len(m.Offered) == 0 {
		return Plan{CurrentAsks: true, Governable: true,
			Why: "the session offers no modes: the policy decides what the agent asks; what it does unasked shows only as tool-call updates"}
	}
	name := ""
	if i := slices.IndexFunc(m.Offered, func(o Offered) bool { return o.ID == m.Current }); i >= 0 {
		name = m.Offered[i].Name
	}
	if m.Current == "" || p.Asks(m.Current, name) {
		cur := m.Current
		if cur == "" {
			cur = "(not given)"
		}
		return Plan{CurrentAsks: true, Governable: true, Why: "the current mode " + cur + " asks"}
	}
	target, ok := p.AskingModeOf(m.Offered)
	if !ok {
		return Plan{Why: "the current mode " + m.Current + " decides by itself and no offered mode asks"}
	}
	for _, s := range p.ModeSwitch {
		if (s == SwitchConfigOption && m.ConfigOption != "") || (s == SwitchSetMode && m.SetMode) {
			return Plan{Target: target, Switch: s, Governable: true,
				Why: "the current mode " + m.Current + " decides by itself; " + target + " asks"}
		}
	}
	return Plan{Target: target, Why: "the current mode " + m.Current + " decides by itself and the session offers no way to change it"}
}
