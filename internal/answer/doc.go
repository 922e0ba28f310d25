// Package answer is permhost's one answer path for permission requests. The
// proxy, the headless client and the leader all go through it:
//
//   - choosing (choose.go): a verdict (allow or reject, once or always, or
//     a named option) becomes exactly one offered option, preferring
//     non-durable options and never one whose changes could not be
//     validated unless it is named; several plugins' allows resolve to the
//     narrower; abi.Decision.Option makes the same choice (tested);
//   - showing (shown.go): what a person may be shown, all options or, when
//     the builtin fallback governs or an admin asked, only the one-time
//     ones that change nothing beyond the call;
//   - decoding: an editor's or a leader's answer is read strictly (exact
//     keys, no duplicates in any case, only the known fields; see
//     internal/jsontext) and checked against the options offered;
//   - encoding: the agent always receives an answer re-encoded from the
//     checked outcome and option id, with the agent's own request id bytes,
//     never the peer's bytes.
package answer
