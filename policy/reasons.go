package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
)

// This file is [session] reasons: after a reject decided by a plugin, the
// builtin fallback, or a person who typed a reason, the agent's model is
// told why with the _session/steering extension (acp.MethodSessionSteering),
// when the agent advertised it. A bare reject tells claude's model only
// "User refused permission to run tool", and it retries variants.

// LogSteer is the steering request [session] reasons = "steer" sent
// after a reject; an entry without one sent none (reasons off, or the
// agent does not advertise the extension).
type LogSteer struct {
	// Method is acp.MethodSessionSteering.
	Method string `json:"method"`
	// Text is what the model is told.
	Text string `json:"text"`
}

// maxReasonRunes bounds a reason told to the model: a plugin's reason is
// untrusted text and the model's context is not a log.
const maxReasonRunes = 1000

// steer returns the steering request that tells the model why its call was
// refused, or nil, and records what was done in entry. personText is what
// the person typed with a reject ("" for none).
func (e *Engine) steer(pr *acp.PermissionRequest, entry *LogEntry, personText string) *acp.OwnRequest {
	if entry.Outcome != "selected" || !strings.HasPrefix(entry.OptionKind, "reject") {
		return nil
	}
	var text string
	switch by := entry.DecidedBy; {
	case by == ByPerson && personText != "":
		text = "The user rejected this tool call and said: " + cleanReason(personText)
	case by == ByPerson && e.grantAbsent(entry):
		// The person could only refuse: the agent's one allow would have
		// allowed later calls too, which the setting keeps from everyone.
		text = "The user's permission policy (permhost) rejected this tool call: " + e.noOneTimeReason()
	case by == ByPerson || by == ByCancel || by == ByModes || by == ByAgent || strings.HasPrefix(by, ByAllowedCall):
		// A person's bare reject says all it means to.
		return nil
	case by == ByBuiltin:
		why := entry.Reason
		if why == "" {
			why = entry.Fallback
		}
		text = "The user's permission policy (permhost) rejected this tool call: " + cleanReason(why)
	default: // a plugin, or a leader's ("leader:NAME")
		why := cleanReason(entry.Reason)
		if why == "" {
			why = "no reason given"
		}
		who := "plugin " + cleanReason(by)
		if name, ok := strings.CutPrefix(by, "leader:"); ok {
			who = "the leader's plugin " + cleanReason(name)
		}
		text = "The user's permission policy (permhost, " + who + ") rejected this tool call: " + why
	}
	if t := cleanReason(entry.ToolCall.Title); t != "" {
		text += " (tool call: " + t + ")"
	}
	if e.cfg.Session.Reasons != config.ReasonsSteer || !pr.Session.Steering || pr.SessionID == "" {
		// Nothing is sent to an agent that did not advertise it.
		return nil
	}
	entry.Steer = &LogSteer{Method: acp.MethodSessionSteering, Text: text}
	return &acp.OwnRequest{Method: acp.MethodSessionSteering, Params: acp.SteeringParams(pr.SessionID, text)}
}

// cleanReason makes untrusted text fit to tell a model: control and
// formatting characters (newlines, escapes, bidirectional overrides) become
// spaces, runs of spaces one, invalid UTF-8 is dropped, and the length is
// bounded.
func cleanReason(s string) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range strings.ToValidUTF8(s, "") {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if n >= maxReasonRunes {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// noOneTimeReason is why the fallback refused a request whose every option
// is durable: [session] allow_always keeps them from the plugins and the
// person, so nothing could allow this call once. It is the reason told to
// the model.
func (e *Engine) noOneTimeReason() string {
	return fmt.Sprintf("the agent offered only options that would also allow later calls, and [session] allow_always = %q lets nobody choose those, so this call could only be refused", e.cfg.Session.AllowAlways)
}

// grantAbsent reports whether a person was shown no allow at all because
// every allow the agent offered hands later calls over and [session]
// allow_always keeps those from the person.
func (e *Engine) grantAbsent(entry *LogEntry) bool {
	if !e.cfg.Session.OneTimeOnly() || entry.Person == nil {
		return false
	}
	kinds := map[string]string{}
	offered := false
	for _, o := range entry.Options {
		kinds[o.OptionID] = o.Kind
		offered = offered || strings.HasPrefix(o.Kind, "allow")
	}
	for _, id := range entry.Person.Shown {
		if strings.HasPrefix(kinds[id], "allow") {
			return false
		}
	}
	return offered
}
