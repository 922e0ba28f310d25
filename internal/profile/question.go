package profile

import (
	"regexp"
	"slices"
	"strings"

	"github.com/permhost/permhost/abi"
)

// This file tells questions from tool calls. Some agents put a question or
// a consent to the person as a permission request (codex's plan review
// "Implement this plan?", an AskUserQuestion whose options are the
// answers): a tool policy that answered it would answer for the person and
// corrupt the session, so such a request is family abi.FamilyQuestion and
// goes to the person untouched.

// Question recognises an agent's permission requests that are questions or
// consents rather than tool calls. Every field that is set must hold.
type Question struct {
	// What names the question for people (permhost check).
	What string
	// ToolCallIDPrefix holds when the tool call's id starts with it.
	ToolCallIDPrefix string
	// Kind holds when it is the tool call's ACP kind.
	Kind string
	// OptionIDs holds when the request offers exactly these option ids, in
	// any order.
	OptionIDs []string
	// OptionPrefix holds when every option id the request offers starts
	// with it (an agent's numbered answers).
	OptionPrefix string
}

func (q Question) matches(toolCallID, kind string, options []abi.Option) bool {
	if q.ToolCallIDPrefix == "" && q.Kind == "" && len(q.OptionIDs) == 0 && q.OptionPrefix == "" {
		return false
	}
	if q.OptionPrefix != "" {
		if len(options) == 0 {
			return false
		}
		for _, o := range options {
			if !strings.HasPrefix(o.OptionID, q.OptionPrefix) {
				return false
			}
		}
	}
	if q.ToolCallIDPrefix != "" && !strings.HasPrefix(toolCallID, q.ToolCallIDPrefix) {
		return false
	}
	if q.Kind != "" && q.Kind != kind {
		return false
	}
	if len(q.OptionIDs) > 0 {
		if len(options) != len(q.OptionIDs) {
			return false
		}
		for _, o := range options {
			if !slices.Contains(q.OptionIDs, o.OptionID) {
				return false
			}
		}
	}
	return true
}

// answerID is the option id of an AskUserQuestion answer, as several ACP
// adapters number them: question n, option m.
var answerID = regexp.MustCompile(`^q[0-9]+_`)

// IsQuestion reports whether a permission request whose tool call has this
// id and ACP kind, offering options, is a question or a consent: one of the
// profile's Questions, or the generic shape every profile shares — a kind
// that acts on nothing (none, other, think, switch_mode) and options that
// are answers (every id q{n}_…, or a kind that is not ACP's allow/reject).
func (p *Profile) IsQuestion(toolCallID, kind string, options []abi.Option) bool {
	for _, q := range p.Questions {
		if q.matches(toolCallID, kind, options) {
			return true
		}
	}
	switch kind {
	case "", abi.KindOther, abi.KindThink, abi.KindSwitchMode:
	default:
		return false
	}
	if len(options) == 0 {
		return false
	}
	answers := true
	for _, o := range options {
		switch o.Kind {
		case abi.OptionAllowOnce, abi.OptionAllowAlways, abi.OptionRejectOnce, abi.OptionRejectAlways:
			if !answerID.MatchString(o.OptionID) {
				answers = false
			}
		default:
			return true // an answer of the agent's own kind
		}
	}
	return answers
}
