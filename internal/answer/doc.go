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
//
// Decoding is [DecodeResult] (an ACP result), [DecodeResponse] (a whole
// JSON-RPC response, result or error; [DecodeEnvelope] its envelope alone)
// and [FromOutcome] (the leader protocol's two fields); each yields a
// [Reply], which [Reply.Check] holds against the options offered;
// [Checked] does both to an answer permhost is about to send, for the
// proxy and for the decision log alike. policy/mediate.go:readAnswer is
// where an editor's answer is read (docs/mediation.md). Encoding is [Encode] and [EncodeError] (with
// the request's id bytes) and [Reply.Result]. A Reply carries the peer's
// _meta objects only: they are the one part of a peer's answer passed on,
// and only after the whole answer decoded strictly.
package answer
