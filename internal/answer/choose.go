package answer

import "github.com/permhost/permhost/abi"

// Choose returns the offered option that d answers with, and false when it
// names none. The rules (RATIONALE.md, "Allow once means a plain allow
// once"):
//
//   - allow picks among the options of its scope's kind (allow_once, or
//     allow_always for scope always); reject always picks a reject_always
//     option, else falls back to reject once; reject once picks among the
//     reject_once options only, so that a one-time reject never becomes a
//     durable one;
//   - among the options of that kind, a plain one (not durable) wins over a
//     durable one, and a durable one is chosen only when every option of
//     the kind is durable (every option of a switch_mode request is);
//   - an option whose changes could not be validated (Changes.Known false:
//     it may change anything) is never chosen this way, only by a select
//     that names it;
//   - within the same rank the agent's order decides;
//   - select takes the option with its id; cancel, ask and abstain choose
//     none.
//
// abi.Decision.Option gives the same answer for every option set (the
// package's tests compare them); it cannot call this package because abi
// uses the standard library only and is compiled into plugins.
func Choose(options []abi.Option, d abi.Decision) (abi.Option, bool) {
	switch d.Outcome {
	case abi.OutcomeAllow:
		if d.Scope == abi.ScopeAlways {
			return narrowest(options, abi.OptionAllowAlways)
		}
		return narrowest(options, abi.OptionAllowOnce)
	case abi.OutcomeReject:
		if d.Scope == abi.ScopeAlways {
			if o, ok := narrowest(options, abi.OptionRejectAlways); ok {
				return o, true
			}
		}
		return narrowest(options, abi.OptionRejectOnce)
	case abi.OutcomeSelect:
		for _, o := range options {
			if o.OptionID == d.OptionID {
				return o, true
			}
		}
	}
	return abi.Option{}, false
}

// Refusal is the builtin fallback's own answer without a person: the
// option a one-time reject chooses, or false when there is none and the
// agent is told "cancelled" (which refuses too). It never chooses an allow
// or a reject_always, which would persist a rule nobody asked for.
func Refusal(options []abi.Option) (abi.Option, bool) {
	return Choose(options, abi.Decision{Outcome: abi.OutcomeReject})
}

// Agree returns the index, in chosen, of the option that answers for
// several plugins that allowed or selected those options, or -1 when they
// conflict and a person must decide: options that are all the same give
// it; options that differ only as allow_once against allow_always give the
// allow_once one (the narrower), unless its changes are unknown; anything
// else conflicts.
func Agree(chosen []abi.Option) int {
	if len(chosen) == 0 {
		return -1
	}
	same := true
	for _, o := range chosen[1:] {
		same = same && o.OptionID == chosen[0].OptionID
	}
	if same {
		return 0
	}
	once := -1
	for i, o := range chosen {
		switch o.Kind {
		case abi.OptionAllowAlways:
		case abi.OptionAllowOnce:
			if once >= 0 && chosen[once].OptionID != o.OptionID {
				return -1
			}
			if once < 0 {
				once = i
			}
		default:
			return -1
		}
	}
	if once >= 0 && unknownChanges(chosen[once]) {
		return -1
	}
	return once
}

// Durable reports whether choosing o may change more than the one call it
// answers. It trusts a set Durable flag and also treats as durable what the
// flag alone might miss in a request built by hand: any kind other than
// allow_once and reject_once, and any option that describes changes.
func Durable(o abi.Option) bool {
	return o.Durable || o.Changes != nil || (o.Kind != abi.OptionAllowOnce && o.Kind != abi.OptionRejectOnce)
}

// The ranks of an option among those of the kind a decision asks for.
const (
	rankPlain   = iota // not durable: changes nothing beyond this call
	rankDurable        // durable, with an effect that is known (the kind's own, or validated changes)
	rankNever          // changes that failed validation: may change anything
)

func rank(o abi.Option) int {
	switch {
	case unknownChanges(o):
		return rankNever
	case Durable(o):
		return rankDurable
	}
	return rankPlain
}

func unknownChanges(o abi.Option) bool { return o.Changes != nil && !o.Changes.Known }

// narrowest returns the first option of kind with the lowest rank below
// rankNever.
func narrowest(options []abi.Option, kind string) (abi.Option, bool) {
	best, at := rankNever, -1
	for i, o := range options {
		if o.Kind != kind {
			continue
		}
		if r := rank(o); r < best {
			best, at = r, i
		}
	}
	if at < 0 {
		return abi.Option{}, false
	}
	return options[at], true
}
