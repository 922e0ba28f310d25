package acp

import (
	"context"
	"encoding/json"
)

// Method names the proxy acts on.
const (
	MethodRequestPermission = "session/request_permission"
	MethodSessionUpdate     = "session/update"
	MethodSessionCancel     = "session/cancel"
	MethodCancelRequest     = "$/cancel_request"
	MethodInitialize        = "initialize"
	MethodSessionNew        = "session/new"
	MethodSessionLoad       = "session/load"
	MethodSessionResume     = "session/resume"
	MethodSessionSetMode    = "session/set_mode"
	// MethodSessionSetConfigOption sets a session config option; the one of
	// category "mode" is the session's mode.
	MethodSessionSetConfigOption = "session/set_config_option"
)

// PermissionOption is one option the agent offered.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	// Kind is allow_once, allow_always, reject_once or reject_always; in
	// v2 it may also be a custom "_…" kind, which is never an allow.
	Kind string `json:"kind"`
	// Meta is the option's _meta verbatim; nil when absent.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// PermissionRequest is one agent→client session/request_permission as the
// proxy received it, with what the proxy knows about its session. A handler
// must not modify it.
type PermissionRequest struct {
	// ID is the raw bytes of the agent's id, echoed exactly in the answer.
	ID json.RawMessage
	// Line is the request's original bytes without the line terminator (for
	// a request inside a batch, the element's bytes). Ask forwards it as it
	// is, on a line of its own.
	Line []byte
	// Params is the request's params verbatim.
	Params json.RawMessage
	// SessionID is params.sessionId.
	SessionID string
	// ToolCallID is params.toolCall.toolCallId.
	ToolCallID string
	// ToolCall is the merged tool call as a JSON object: every earlier
	// tool_call and tool_call_update for ToolCallID, then the request's own
	// toolCall on top (absent or null fields leave earlier values, lists are
	// replaced). nil when the request carries no usable toolCall.
	ToolCall json.RawMessage
	// Options are the offered options in the agent's order.
	Options []PermissionOption
	// V2 is what only an ACP v2 request carries (acp/v2.go); zero for v1.
	V2 PermissionV2
	// Meta is params._meta verbatim; nil when absent.
	Meta json.RawMessage
	// Session is the session's state when the request arrived.
	Session SessionInfo
	// Suspicious is non-empty when the request is malformed or ambiguous —
	// invalid UTF-8, a duplicate key (in any case), a key that differs from
	// a known one only in case, params that do not decode — and says why. Other parsers may read such a request differently than Go does,
	// so a decision pipeline should fall back to its most conservative path.
	Suspicious string
}

// Offered reports whether optionID is one of the request's options.
func (r *PermissionRequest) Offered(optionID string) bool {
	for _, o := range r.Options {
		if o.OptionID == optionID {
			return true
		}
	}
	return false
}

// Answer is the client's response to a forwarded permission request, as the
// client wrote it: a handler reads it strictly (internal/answer) before
// acting on it, and the proxy checks and re-encodes whatever a handler
// returns, so these bytes never reach the agent as they are.
type Answer struct {
	// Line is the client's response line, without terminator.
	Line []byte
	// Result is the response's result member; nil for an error response.
	Result json.RawMessage
	// Error is the response's error; nil for a result.
	Error *RPCError
}

// Client is what a handler may do with the editor while it handles one
// permission request. Its methods are safe for concurrent use.
type Client interface {
	// Ask forwards the request to the client with the agent's original id
	// and waits for the client's answer. With params nil the original line is
	// forwarded byte-for-byte; otherwise params replaces the original params.
	// If ctx is done first, Ask sends the client $/cancel_request for the
	// id, arranges for its late answer to be swallowed, and returns
	// ctx.Err(); an answer the proxy read before ctx was done is returned
	// whatever the order Ask notices them in, so that what decides is the
	// order of the two on the proxy's side. Ask may be called once per
	// request (ErrAlreadyAsked).
	Ask(ctx context.Context, params json.RawMessage) (Answer, error)
	// Deliver answers the agent with r now, as if the handler had returned
	// it, and calls record with the response line the agent gets before
	// the agent can read it: r checked and re-encoded, or the answer the
	// request got first (cancelled by a session/cancel, $/cancel_request
	// or its id reused; a session's cancel also turns a later selection
	// into cancelled). Settling the request and reserving its line's place
	// are one step, so a handler that logs from those bytes logs what the
	// agent gets, even when a cancel races it. record gets nil, and
	// Deliver returns ErrAnswered, when the agent went away unanswered.
	// What the handler returns afterwards is ignored.
	Deliver(r Response, record func(sent []byte)) error
	// Notify sends the client a notification (for example a session/update
	// tool_call_update telling what was decided), in order with the agent's
	// own messages.
	Notify(method string, params json.RawMessage) error
}

// Response is a handler's answer to the agent. Either way the proxy reads
// it strictly and the agent gets an answer re-encoded from the checked
// outcome and option id, with the request's own id bytes.
type Response struct {
	// Line, when set, is a whole response (for example the client's own
	// answer line); its id must be the request's id, by value. An error
	// response refuses.
	Line []byte
	// Result is used when Line is nil: a session/request_permission result.
	Result json.RawMessage
	// FollowUp, when set, is sent the agent right after the answer, as a
	// request of permhost's own (an id of permhost's, its response reaching
	// no peer): for example the _session/steering that tells the model why
	// its call was refused. It is sent only when the agent gets the answer
	// the handler returned, selecting an option, and its session was not
	// cancelled meanwhile.
	FollowUp *OwnRequest
}

// Handler decides permission requests. The proxy calls RequestPermission in
// its own goroutine per request; forwarding never waits for it. ctx is
// cancelled when the request no longer needs an answer (session/cancel,
// $/cancel_request, the agent went away); a handler should then return
// promptly. Whatever the handler returns is checked before it reaches the
// agent: an error, a panic, an answer for another id or naming an option
// that was not offered becomes the cancelled outcome.
type Handler interface {
	RequestPermission(ctx context.Context, req *PermissionRequest, c Client) (Response, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *PermissionRequest, c Client) (Response, error)

// RequestPermission calls f.
func (f HandlerFunc) RequestPermission(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
	return f(ctx, req, c)
}

// forward forwards every request unchanged to the client and returns the
// client's answer: permhost without a policy (a nil Options.Handler).
var forward Handler = HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
	a, err := c.Ask(ctx, nil)
	if err != nil {
		return Response{}, err
	}
	return Response{Line: a.Line}, nil
})
