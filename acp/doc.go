// Package acp is permhost's side of the Agent Client Protocol (ACP): line
// framing that keeps every message's bytes, the byte-transparent proxy that
// sits between an editor (the ACP client) and an agent, the per-session state
// the proxy learns on the way (cwd, mode, initialize info, merged tool calls),
// and the JSON-RPC error codes permhost uses.
//
// The proxy forwards every line in both directions unchanged and in order,
// except agent→client session/request_permission requests, which it hands to
// a [Handler]. The handler either answers the agent itself or asks the editor
// through a [Client]; a nil Options.Handler does the latter, which is what
// permhost does when no plugin pipeline is configured. Whatever a handler
// does, the agent gets an answer the proxy re-encoded from what it read
// strictly (internal/answer): a failure, a panic, an answer that reads two
// ways or names an option that was not offered becomes the cancelled
// outcome, never an allow. What the proxy acts on it reads with exact keys
// (internal/jsontext); an agent line that may be a permission request but
// cannot be read one way only is answered cancelled and never forwarded.
// Batches go element by element through the same path as single lines.
// A handler may also hand its answer over with [Client].Deliver, which
// settles the request and gives back the line the agent gets before the
// agent can read it (cancelled, when a cancel came first), so that what
// the handler logs is what the agent gets.
// A handler's Response.FollowUp (the _session/steering request that tells
// the model why a call was refused, [MethodSessionSteering]) reaches the
// agent right after the answer, under an id of permhost's own, and its
// answer reaches no one; [SessionInfo].Steering says whether the agent
// advertised the extension.
//
// The connection speaks the ACP version the agent answers to the client's
// initialize, 1 or 2 (acp/v2.go): a v2-shaped initialize goes unchanged, a
// v1-shaped one asking for more is asked down to 1, and any other answer
// fails closed. A v2 permission request's title, description and subject
// are read into [PermissionV2]; its subject's tool call is the request's.
// Cancellation is one path in both versions: the client's session/cancel
// and v2 tool_call/cancel ([MethodToolCallCancel]) answer the requests
// permhost holds for the session or the tool call cancelled once they are
// queued for the agent; the agent's $/cancel_request answers a held one,
// and one for a request already answered stays with the proxy.
//
// A [Governor] (Options.Governor) steers the rest, on the same path: it
// may hold the agent's result of session/new, load, resume or fork in its
// place while it switches the session's mode (the client's messages naming
// the session wait meanwhile, and get its refusal for good when it refuses
// the session), refuse the client's mode switches,
// take over the agent's other requests of the client (fs/*,
// terminal/create, elicitation/create) as a Handler takes permission
// requests, and watch tool-call and mode updates. It talks to either peer
// through a [Caller], whose requests carry ids of permhost's own (128
// random bits each) that no peer request shares and whose answers never
// reach the other peer. The editor never has two requests under one id:
// an agent request under an id it has outstanding is refused.
//
// [NewProxy] validates its [Options] once; [Proxy.Run] works on any readers
// and writers, so tests can drive it over io.Pipe. Each direction has a
// writer goroutine of its own, so a peer that stops reading stalls only what
// goes to it. [StartAgent] runs the agent as a child in its own process
// group and stops it (close stdin, grace, SIGTERM, SIGKILL to the group) so
// that no process outlives permhost.
//
// [ClientConn] is the other end: a headless ACP client (what `permhost run`
// uses) that initializes an agent, opens a session, sends a prompt and
// follows the turn to its stop reason, handing each permission request to a
// [PermissionHandler] and streaming what happens as [Event]s. As a real
// endpoint it answers malformed input itself and advertises only what it
// serves.
//
// What an embedder uses: [NewProxy] with [Options] and [Handler] (the
// [PermissionRequest] it gets, the [Client] it may ask, the [Response] it
// returns) and [Governor] (with [Caller], [SessionStart], [ClientRequest],
// [AgentRequest], [Reply] and [Update]), [StartAgent] and [Agent], [NewClientConn] with [ClientOptions],
// [PermissionHandler] and [Event], and the method, stop-reason and error-code
// constants. Framing, decoding, the writers and the state are unexported.
// This package carries no compatibility promise: only abi (the plugin ABI)
// and plugins/pdk (the plugin development kit) do; acp changes with permhost.
//
// The package imports no plugin code: the decision pipeline is built on
// [Handler] one layer up. One mediator per connection (acp/mediation.go)
// owns the ids, the pending requests and the sessions' governance, with
// their state machines; docs/mediation.md maps them, and where the
// editor's answer is validated (policy/mediate.go).
package acp
