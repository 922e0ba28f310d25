package pdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/permhost/permhost/abi"
)

// Plugin is what a plugin registers.
type Plugin struct {
	// Info is returned by permhost_describe. Name is required.
	Info abi.Info
	// Decide answers one request. It must not keep req after returning.
	Decide func(req abi.Request) (abi.Decision, error)
	// CheckConfig, optional, returns every mistake in the plugin's
	// configuration (the [plugin.config] table as a JSON object), none when
	// it is good. The host calls it once at load through
	// permhost_check_config and reports each problem as a mistake of the
	// configuration file, with its line, before the agent starts; a plugin
	// without it is only checked against Info.ConfigKeys. [UnknownKeys] and
	// [Suggest] help write it.
	CheckConfig func(config json.RawMessage) []abi.ConfigProblem
}

// Errors of [Handle] and [Register].
var (
	ErrNotRegistered = errors.New("pdk: no plugin registered")
	ErrBadInput      = errors.New("pdk: bad request")
)

var registered *Plugin

// Register makes p the plugin this module runs. Call it once, from init. It
// panics on a second call, a nil Decide or an empty Info.Name: these are
// programming errors that must surface when the plugin is first loaded, not
// on some later request.
func Register(p Plugin) {
	if registered != nil {
		panic("pdk: Register called twice")
	}
	if p.Decide == nil {
		panic("pdk: Register: nil Decide")
	}
	if strings.TrimSpace(p.Info.Name) == "" {
		panic("pdk: Register: empty Info.Name")
	}
	registered = &p
	warmUp()
}

// Handle runs p on one encoded request and returns the encoded decision:
// what permhost_decide does, without the Extism plumbing. It passes the
// decision's text through [Clean]. It fails when the
// input is not a request, when Decide fails or panics, and when the decision
// does not validate against the request's options, so a plugin bug reaches
// the host as a failure instead of a wrong answer.
func Handle(p Plugin, input []byte) (out []byte, err error) {
	if p.Decide == nil {
		return nil, ErrNotRegistered
	}
	var req abi.Request
	if err := json.Unmarshal(input, &req); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("pdk: %s panicked: %v", p.Info.Name, r)
		}
	}()
	d, err := p.Decide(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Info.Name, err)
	}
	if d.Outcome == "" {
		d.Outcome = abi.OutcomeAbstain
	}
	d.Reason = Clean(d.Reason, 0)
	if e := d.Explanation; e != nil {
		d.Explanation = &abi.Explanation{Summary: Clean(e.Summary, 0), Risk: Clean(e.Risk, 0), RiskLevel: e.RiskLevel}
	}
	if err := d.Validate(req.Options); err != nil {
		return nil, fmt.Errorf("pdk: %s returned an invalid decision: %w", p.Info.Name, err)
	}
	return marshal(d)
}

// CheckConfig runs p.CheckConfig on one configuration and returns the
// encoded [abi.ConfigCheck]: what permhost_check_config does. A plugin
// without CheckConfig finds no problem; a panic is a failure.
func CheckConfig(p Plugin, config []byte) (out []byte, err error) {
	check := abi.ConfigCheck{Problems: []abi.ConfigProblem{}}
	if p.CheckConfig != nil {
		defer func() {
			if r := recover(); r != nil {
				out, err = nil, fmt.Errorf("pdk: %s: CheckConfig panicked: %v", p.Info.Name, r)
			}
		}()
		for _, pr := range p.CheckConfig(bytes.Clone(config)) {
			pr.Key, pr.Message, pr.Suggestion = Clean(pr.Key, 0), Clean(pr.Message, 0), Clean(pr.Suggestion, 0)
			check.Problems = append(check.Problems, pr)
		}
	}
	return marshal(check)
}

// Describe returns the encoded [abi.Info] of p.
func Describe(p Plugin) ([]byte, error) { return marshal(p.Info) }

// Version returns the encoded ABI version this package was built against.
func Version() []byte {
	b, _ := marshal(abi.Current)
	return b
}

// DecodeConfig decodes req.Config into v, which must be a pointer to a
// struct. An absent config leaves v unchanged, so set defaults first. Unknown
// keys are an error: a misspelt key in permhost.toml must fail loudly rather
// than silently weaken a policy.
func DecodeConfig(req abi.Request, v any) error {
	raw := bytes.TrimSpace(req.Config)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("pdk: config: %w", err)
	}
	return nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
