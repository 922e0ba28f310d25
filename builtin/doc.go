// Package builtin is permhost's fallback: the conservative logic used when no
// plugin can decide (a plugin failed under failure_policy "closed", every
// plugin abstained, or the person did not answer in time).
//
// The fallback offers only "allow once" or "reject": a person sees the
// request with every durable or mode-switching option removed, the remaining
// allow_once and reject_once options keeping their ids and order; without a
// person it answers the reject_once option a plugin's one-time reject would
// get (a plain one before a durable one, never one whose changes could not
// be validated), or "cancelled" when there is none. It never chooses an
// allow on its own. Both choices are made by permhost's one answer module,
// internal/answer, which the plugin chain and the pipeline use too.
//
// Only packages abi and plugins/pdk carry a compatibility promise; this
// package's API may change between releases.
package builtin
