// Package builtin is permhost's fallback: the conservative logic used when no
// plugin can decide (a plugin failed under failure_policy "closed", every
// plugin abstained, or the person did not answer in time).
//
// The fallback offers only "allow once" or "reject": a person sees the
// request with every durable or mode-switching option removed, the remaining
// allow_once and reject_once options keeping their ids and order; without a
// person it answers the offered reject_once option, or "cancelled" when there
// is none. It never chooses an allow on its own.
package builtin
