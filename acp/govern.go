package acp

import (
	"context"
	"encoding/json"
)

// This file is the Governor: what a proxy lets a layer above it do beyond
// deciding permission requests — hold a new session's result until the
// session is in a mode that asks, refuse the client's switch into one that
// does not, take over the agent's other requests of the client (fs/*,
// terminal/create, elicitation/create), watch tool calls and mode changes,
// and send requests of permhost's own to either peer. The proxy supplies
// the mechanisms (order, ids, pending tables, strict reading); the
// governor decides.

// More method names a Governor takes over (fs/* are MethodReadTextFile and
// MethodWriteTextFile).
const (
	MethodTerminalCreate    = "terminal/create"
	MethodElicitationCreate = "elicitation/create"
)

// CodePolicyRefused is the error code of permhost's refusals by policy (an
// editor's switch into a mode that decides by itself, an agent's file
// request a plugin rejected): in JSON-RPC's range for implementation-defined
// server errors, unused by ACP.
const CodePolicyRefused = -32001

// Governor steers a proxied connection. Options.Governor nil means none:
// the proxy then only decides permission requests. Every method but
// SessionStart and AgentRequest is called on the proxy's own reading
// goroutines and must return promptly (work that waits goes in a
// goroutine of the governor's, which may use the Caller).
type Governor interface {
	// ClientRequest is called for the client's session/set_mode and
	// session/set_config_option requests before they are forwarded; a
	// non-nil error answers the client with it, and the request is not
	// forwarded.
	ClientRequest(r *ClientRequest) *RPCError
	// SessionStart is called in a goroutine of its own with the agent's
	// result of session/new, session/load, session/resume or session/fork.
	// The client gets the response only once it returns, in its place:
	// everything the agent sends after it waits behind it, and the
	// client's messages naming the session wait until then too (from its
	// session/load or session/resume request on). It returns the result
	// to forward instead (nil: the agent's own), or an error to answer the
	// client with instead of the result; the error then answers every
	// later request naming the session, and nothing for it is forwarded.
	SessionStart(ctx context.Context, s *SessionStart, c Caller) (json.RawMessage, *RPCError)
	// Intercepts reports whether the agent's request r (any method but
	// session/request_permission) is handed to AgentRequest instead of
	// being forwarded to the client.
	Intercepts(r *AgentRequest) bool
	// AgentRequest handles an intercepted request in a goroutine of its
	// own, like a permission Handler: c.Ask forwards it to the client with
	// the agent's id (and its params, or others). ctx ends when the request
	// no longer needs an answer (session/cancel of its session,
	// $/cancel_request, the agent went away); the agent then gets
	// CodeRequestCancelled. An error or panic answers the agent
	// CodeInternalError.
	AgentRequest(ctx context.Context, r *AgentRequest, c Client, p Caller) (Reply, error)
	// Update is called for each strict session/update of a tool call or a
	// mode change, after the proxy's state has learned it and before it is
	// forwarded.
	Update(u *Update, p Caller)
}

// Caller sends messages of permhost's own. Its methods are safe for
// concurrent use and may be called from any goroutine.
type Caller interface {
	// Agent sends the agent a request of permhost's own, under an id no
	// client request uses, and returns its response, which the client never
	// sees. A successful session/set_mode or session/set_config_option
	// updates the session's mode as the client's would.
	Agent(ctx context.Context, method string, params json.RawMessage) (Answer, error)
	// Client sends the client a request of permhost's own, under an id
	// none of the agent's requests uses, and returns its response, which
	// the agent never sees. If ctx ends first the client is sent
	// $/cancel_request and its late answer is dropped.
	Client(ctx context.Context, method string, params json.RawMessage) (Answer, error)
	// Notify sends the client a notification, after everything queued for
	// it so far.
	Notify(method string, params json.RawMessage) error
	// CancelSession sends the agent session/cancel for sessionID, of
	// permhost's own, and handles it as the client's: the session's
	// permission requests a handler holds are answered cancelled, those
	// shown to the client are withdrawn when the agent cancels them.
	CancelSession(sessionID string) error
	// Hold makes the client's requests and notifications naming session
	// sessionID wait, in order, until release is called: with nil they are
	// then forwarded in order (once no other hold is left); with an error
	// they, and every later request naming the session, are answered with
	// it and nothing for the session is forwarded again. Call release once.
	Hold(sessionID string) (release func(refuse *RPCError))
}

// ClientRequest is a client request a Governor may refuse.
type ClientRequest struct {
	Method string
	// Params is the request's params verbatim; nil when the request is not
	// strict JSON (then Suspicious says why).
	Params json.RawMessage
	// Session is what the proxy knows of params.sessionId's session.
	Session    SessionInfo
	Suspicious string
}

// SessionStart is the agent's result of a session/new, session/load,
// session/resume or session/fork.
type SessionStart struct {
	// Method is the client's request.
	Method string
	// Params are the client's params verbatim (nil when not strict JSON).
	Params json.RawMessage
	// Result is the agent's result verbatim.
	Result json.RawMessage
	// Session is the session as the proxy learned it from the result.
	Session SessionInfo
	// Suspicious is non-empty when the response is not strict JSON (it may
	// read differently in the client's parser) and says why.
	Suspicious string
}

// AgentRequest is one agent→client request other than a permission request.
type AgentRequest struct {
	// ID is the raw bytes of the agent's id.
	ID     json.RawMessage
	Method string
	// Line is the request's bytes without terminator.
	Line   []byte
	Params json.RawMessage
	// SessionID is params.sessionId, ToolCallID params.toolCallId (for an
	// elicitation), when given.
	SessionID, ToolCallID string
	// ToolCall is the merged state of ToolCallID's tool call, nil when the
	// proxy keeps none.
	ToolCall json.RawMessage
	Session  SessionInfo
	// Suspicious is non-empty when the request is not strict JSON, and
	// says why; its fields are then read leniently.
	Suspicious string
}

// Reply is a Governor's answer to an intercepted agent request: the
// client's own response line, a result, or an error.
type Reply struct {
	// Line is the client's response to the request (an Answer's Line): its
	// id must be the request's, by value; it reaches the agent as it is.
	Line []byte
	// Result, when Line is nil, is the result: strict JSON, written
	// compactly under the agent's id.
	Result json.RawMessage
	// Error, when Line and Result are nil, refuses.
	Error *RPCError
}

// Update is a session/update the Governor watches: a tool call's, or a
// change of mode.
type Update struct {
	SessionID string
	// Session is the session's state after the update.
	Session SessionInfo
	// Kind is the sessionUpdate: tool_call, tool_call_update,
	// current_mode_update or config_option_update.
	Kind string
	// ModeID is the mode the update names: currentModeId, or the current
	// value of the config option of category "mode"; "" when none.
	ModeID string
	// ConfigOptions is a config_option_update's list verbatim.
	ConfigOptions json.RawMessage
	// ToolCallID, ToolCall (merged over the earlier updates), Status and
	// ToolKind (ToolCall's) describe a tool call's update.
	ToolCallID, Status, ToolKind string
	ToolCall                     json.RawMessage
	// Asked is whether the agent sent a permission request (or an approval
	// the governor took over) for ToolCallID in this session.
	Asked bool
	// Loading is set while the client's session/load of the session is
	// unanswered: the agent is replaying the session's history.
	Loading bool
}
