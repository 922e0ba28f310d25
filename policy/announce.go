package policy

import (
	"time"
	"unicode/utf8"
)

// maxAnnouncedTitle bounds the tool-call title in the diagnostics line: the
// decision log keeps it whole.
const maxAnnouncedTitle = 120

// record writes entry to the decision log and says at info level, in one
// line of the diagnostics, what was decided, by whom and why: an editor's
// proxy log then shows each decision without the decision log at hand.
func (e *Engine) record(entry LogEntry) {
	e.writeLog(entry)
	attrs := []any{"decisionId", entry.DecisionID, "tool", clipTitle(entry.ToolCall.Title)}
	if entry.ToolCall.Kind != "" {
		attrs = append(attrs, "kind", entry.ToolCall.Kind)
	}
	attrs = append(attrs, "outcome", entry.Outcome)
	if entry.OptionID != "" {
		attrs = append(attrs, "option", entry.OptionID, "optionKind", entry.OptionKind)
	}
	attrs = append(attrs, "decidedBy", entry.DecidedBy)
	if entry.Reason != "" {
		attrs = append(attrs, "reason", entry.Reason)
	}
	if entry.Fallback != "" {
		attrs = append(attrs, "fallback", entry.Fallback)
	}
	attrs = append(attrs, "latency", (time.Duration(entry.LatencyUs) * time.Microsecond).String())
	e.log.Info("permission decided", attrs...)
}

// clipTitle cuts an agent's title to a line's worth; the handler quotes
// and escapes what remains.
func clipTitle(s string) string {
	if utf8.RuneCountInString(s) <= maxAnnouncedTitle {
		return s
	}
	r := []rune(s)
	return string(r[:maxAnnouncedTitle]) + "…"
}
