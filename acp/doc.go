// Package acp is permhost's side of the Agent Client Protocol (ACP): line
// framing that keeps every message's bytes, the byte-transparent proxy that
// sits between an editor (the ACP client) and an agent, the per-session state
// the proxy learns on the way (cwd, mode, initialize info, merged tool calls),
// and the JSON-RPC error codes permhost uses.
//
// The proxy forwards every line in both directions unchanged and in order,
// except agent→client session/request_permission requests, which it hands to
// a [Handler]. The handler either answers the agent itself or asks the editor
// through a [Client]; [Forward] does the latter and is what permhost does when
// no plugin pipeline is configured. Whatever a handler does, a failure, a
// panic or an answer naming an option that was not offered becomes the
// cancelled outcome, never an allow.
//
// [NewProxy] validates its [Options] once; [Proxy.Run] works on any readers
// and writers, so tests can drive it over io.Pipe. [StartAgent] runs the
// agent as a child in its own process group and stops it (close stdin, grace,
// SIGTERM, SIGKILL to the group) so that no process outlives permhost.
//
// [ClientConn] is the other end: a headless ACP client (what `permhost run`
// uses) that initializes an agent, opens a session, sends a prompt and
// follows the turn to its stop reason, handing each permission request to a
// [PermissionHandler] and streaming what happens as [Event]s. As a real
// endpoint it answers malformed input itself and advertises only what it
// serves.
//
// The package imports no plugin code: the decision pipeline is built on
// [Handler] one layer up.
package acp
