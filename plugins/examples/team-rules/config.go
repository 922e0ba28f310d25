package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/permhost/permhost/abi"
)

// errConfig is wrapped by every configuration error, so that a test (and a
// reader of the decision log) can tell a bad config from a bad request. The
// pdk prefixes the plugin's name.
var errConfig = errors.New("bad config")

// config is the plugin's [plugin.config] after validation.
type config struct {
	rules []rule
}

// rule is one validated [[plugin.config.rules]] entry. Its conditions are
// ANDed; an empty list means the condition is not stated.
type rule struct {
	index    int
	action   abi.Outcome // allow, reject or ask
	families []string
	kinds    []string
	tools    []string
	commands [][]string
	// into are the commands a command of commands must be piped into for
	// the rule to match (reject and ask rules only).
	into    [][]string
	paths   []string
	access  string // "", read or write
	domains []string
	note    string
}

// rawConfig and rawRule are the JSON form. Unknown keys are refused so that a
// typo ("comand") is an error instead of a rule that silently matches more.
type rawConfig struct {
	// Home is refused with a message: permhost gives session.home.
	Home  *json.RawMessage  `json:"home"`
	Rules []json.RawMessage `json:"rules"`
}

type rawRule struct {
	Action    string          `json:"action"`
	Family    json.RawMessage `json:"family"`
	Kind      json.RawMessage `json:"kind"`
	Tool      json.RawMessage `json:"tool"`
	Command   json.RawMessage `json:"command"`
	PipedInto json.RawMessage `json:"piped_into"`
	Paths     []string        `json:"paths"`
	Access    string          `json:"access"`
	Domains   []string        `json:"domains"`
	Reason    string          `json:"reason"`
}

var families = map[string]bool{
	abi.FamilyShell: true, abi.FamilyEdit: true, abi.FamilyRead: true, abi.FamilyDelete: true, abi.FamilyMove: true,
	abi.FamilyFetch: true, abi.FamilySearch: true, abi.FamilyMCP: true, abi.FamilySwitchMode: true, abi.FamilyOther: true,
}

var toolKinds = map[string]bool{
	abi.KindRead: true, abi.KindEdit: true, abi.KindDelete: true, abi.KindMove: true,
	abi.KindSearch: true, abi.KindExecute: true, abi.KindThink: true, abi.KindFetch: true,
	abi.KindSwitchMode: true, abi.KindOther: true,
}

// lastConfig keeps the most recent parsed configuration: an instance serves
// many calls, nearly always with the same config, and parsing it is most of
// the cost of a decision. A config is never modified after parsing.
var lastConfig struct {
	sync.Mutex
	raw []byte
	cfg config
}

// cachedConfig is parseConfig with a one-entry cache keyed by the bytes.
func cachedConfig(raw json.RawMessage) (config, error) {
	lastConfig.Lock()
	defer lastConfig.Unlock()
	if lastConfig.raw != nil && bytes.Equal(lastConfig.raw, raw) {
		return lastConfig.cfg, nil
	}
	cfg, err := parseConfig(raw)
	if err != nil {
		return config{}, err
	}
	lastConfig.raw = bytes.Clone(raw)
	if lastConfig.raw == nil {
		lastConfig.raw = []byte{}
	}
	lastConfig.cfg = cfg
	return cfg, nil
}

// parseConfig validates the plugin's configuration. No configuration, or one
// without rules, is valid and matches nothing.
func parseConfig(raw json.RawMessage) (config, error) {
	var c config
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return c, nil
	}
	var rc rawConfig
	if err := decodeStrict(raw, &rc); err != nil {
		return c, fmt.Errorf("%w: %v", errConfig, err)
	}
	if rc.Home != nil {
		return c, fmt.Errorf("%w: home is no longer a config key: permhost tells the plugin the user's home directory (session.home)", errConfig)
	}
	for i, raw := range rc.Rules {
		var rr rawRule
		if err := decodeStrict(raw, &rr); err != nil {
			return config{}, fmt.Errorf("%w: rules[%d]: %v", errConfig, i, err)
		}
		r, err := rr.validate(i)
		if err != nil {
			return config{}, fmt.Errorf("%w: rules[%d]: %v", errConfig, i, err)
		}
		c.rules = append(c.rules, r)
	}
	return c, nil
}

// decodeStrict decodes one JSON value into v, refusing unknown keys and
// trailing data.
func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the config object")
	}
	return nil
}

func (rr rawRule) validate(index int) (rule, error) {
	r := rule{index: index, note: strings.TrimSpace(rr.Reason)}
	switch rr.Action {
	case "allow":
		r.action = abi.OutcomeAllow
	case "reject":
		r.action = abi.OutcomeReject
	case "ask":
		r.action = abi.OutcomeAsk
	case "":
		return r, errors.New(`action is missing (want "allow", "reject" or "ask")`)
	default:
		return r, fmt.Errorf(`action %q is not "allow", "reject" or "ask"`, rr.Action)
	}
	var err error
	if r.families, err = stringOrList("family", rr.Family); err != nil {
		return r, err
	}
	for _, f := range r.families {
		if !families[f] {
			return r, fmt.Errorf("family %q is not one of shell, edit, read, delete, move, fetch, search, mcp, switch_mode, other", f)
		}
	}
	if r.kinds, err = stringOrList("kind", rr.Kind); err != nil {
		return r, err
	}
	for _, k := range r.kinds {
		if !toolKinds[k] {
			return r, fmt.Errorf("kind %q is not an ACP tool kind", k)
		}
	}
	if r.tools, err = stringOrList("tool", rr.Tool); err != nil {
		return r, err
	}
	if r.commands, err = commandPrefixes("command", rr.Command); err != nil {
		return r, err
	}
	if r.into, err = commandPrefixes("piped_into", rr.PipedInto); err != nil {
		return r, err
	}
	if len(r.into) > 0 {
		if r.action == abi.OutcomeAllow {
			return r, errors.New("piped_into is for reject and ask rules: an allow must cover every command on its own")
		}
		if len(r.commands) == 0 {
			return r, errors.New("piped_into needs command: what is piped into it")
		}
	}
	for _, p := range rr.Paths {
		if err := validGlob(p); err != nil {
			return r, err
		}
		r.paths = append(r.paths, p)
	}
	if rr.Paths != nil && len(rr.Paths) == 0 {
		return r, errors.New("paths is empty")
	}
	switch rr.Access {
	case "", abi.AccessRead, abi.AccessWrite:
		r.access = rr.Access
	default:
		return r, fmt.Errorf(`access %q is not "read" or "write"`, rr.Access)
	}
	if r.access != "" && len(r.paths) == 0 {
		return r, errors.New("access needs paths")
	}
	if rr.Domains != nil && len(rr.Domains) == 0 {
		return r, errors.New("domains is empty")
	}
	for _, d := range rr.Domains {
		d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		if err := validDomain(d); err != nil {
			return r, err
		}
		r.domains = append(r.domains, d)
	}
	if len(r.families)+len(r.kinds)+len(r.tools)+len(r.commands)+len(r.paths)+len(r.domains) == 0 {
		return r, errors.New("states no condition (family, kind, tool, command, paths or domains), so it would match every call")
	}
	return r, nil
}

// stringOrList accepts "x" or ["x", "y"].
func stringOrList(key string, raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, fmt.Errorf("%s is empty", key)
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s must be a string or a list of strings", key)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s is empty", key)
	}
	for _, s := range list {
		if s == "" {
			return nil, fmt.Errorf("%s has an empty entry", key)
		}
	}
	return list, nil
}

// commandPrefixes accepts one prefix ["npm", "test"] or several
// [["npm", "test"], ["npm", "run", "lint"]] for key.
func commandPrefixes(key string, raw json.RawMessage) ([][]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var one []string
	var many [][]string
	if err := json.Unmarshal(raw, &one); err == nil {
		if len(one) == 0 {
			return nil, fmt.Errorf("%s is empty", key)
		}
		many = [][]string{one}
	} else if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf(`%s must be a list of words, e.g. ["npm", "test"], or a list of such lists`, key)
	}
	if len(many) == 0 {
		return nil, fmt.Errorf("%s is empty", key)
	}
	for _, prefix := range many {
		if len(prefix) == 0 {
			return nil, fmt.Errorf("%s has an empty prefix", key)
		}
		for _, w := range prefix {
			if w == "" {
				return nil, fmt.Errorf("%s %q has an empty word", key, prefix)
			}
		}
		if strings.ContainsAny(prefix[0], " \t\n") {
			return nil, fmt.Errorf("%s %q: give each word separately, e.g. [\"npm\", \"test\"]", key, prefix)
		}
	}
	return many, nil
}

func validGlob(p string) error {
	if p == "" {
		return errors.New("paths has an empty glob")
	}
	if strings.HasPrefix(p, "~") && p != "~" && !strings.HasPrefix(p, "~/") {
		return fmt.Errorf("path %q: ~user is not supported, only ~ and ~/...", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("path %q: bad glob segment %q", p, seg)
		}
	}
	return nil
}

func validDomain(d string) error {
	if d == "" {
		return errors.New("domains has an empty entry")
	}
	if d == "*" {
		return nil
	}
	rest := strings.TrimPrefix(d, "*.")
	if rest == "" || strings.ContainsAny(rest, "*/@ \t\n?#") {
		return fmt.Errorf("domain %q: want a host name, optionally starting with \"*.\"", d)
	}
	return nil
}
