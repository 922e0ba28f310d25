package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
)

// ErrNotPermission is returned by [SessionSetup.Request] for input that
// is neither a session/request_permission message nor its params.
var ErrNotPermission = errors.New("policy: not a session/request_permission message or its params")

// SessionSetup is what the proxy would know about a session before one of
// its permission requests: what the agent said of itself in initialize,
// the session's working directory and mode, and the user's home.
type SessionSetup struct {
	// Agent is initialize's agentInfo, which chooses the profile that
	// reads the request; the zero Peer means none (the generic profile).
	Agent acp.Peer
	// Cwd is session/new's cwd; Mode the session's current mode id ("" for
	// none).
	Cwd, Mode string
	// Home is the home directory for ~ ("" when unknown).
	Home string
}

// Request builds the plugins' request for one permission request exactly
// as the proxy builds it in the session s describes. input holds the
// request, a whole session/request_permission message or its params, after
// any session/update notifications the agent sent before it (JSON values
// one after the other, such as JSON lines): the tool_call and
// tool_call_update of its tool call are merged under the request's own
// toolCall, as the proxy merges them. The messages go through the proxy
// after an initialize and a session/new that tell it s, so that the
// proxy's own reading (strict JSON, its suspicion of duplicate keys and
// invalid UTF-8, the session state) and [BuildRequest] make the request.
// Its DecisionID is decisionID. It fails where the proxy would not show the
// request to plugins, saying why.
func (s SessionSetup) Request(ctx context.Context, input []byte, decisionID string) (abi.Request, error) {
	agentLines, sessionID, err := permissionLines(input)
	if err != nil {
		return abi.Request{}, err
	}
	result := map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}}
	if s.Agent.Name != "" || s.Agent.Version != "" {
		info := map[string]any{"name": s.Agent.Name, "version": s.Agent.Version}
		if s.Agent.Title != "" {
			info["title"] = s.Agent.Title
		}
		result["agentInfo"] = info
	}
	session := map[string]any{"sessionId": sessionID}
	if s.Mode != "" {
		session["modes"] = map[string]any{"currentModeId": s.Mode,
			"availableModes": []any{map[string]any{"id": s.Mode, "name": s.Mode}}}
	}
	// Ids the agent's request cannot share: each side numbers its own.
	lines := []ReplayLine{
		setupLine(false, map[string]any{"jsonrpc": "2.0", "id": "permhost-setup-1", "method": acp.MethodInitialize,
			"params": map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}}),
		setupLine(true, map[string]any{"jsonrpc": "2.0", "id": "permhost-setup-1", "result": result}),
		setupLine(false, map[string]any{"jsonrpc": "2.0", "id": "permhost-setup-2", "method": acp.MethodSessionNew,
			"params": map[string]any{"cwd": s.Cwd, "mcpServers": []any{}}}),
		setupLine(true, map[string]any{"jsonrpc": "2.0", "id": "permhost-setup-2", "result": session}),
	}
	lines = append(lines, agentLines...)
	recorded, err := interceptRecording(ctx, lines, s.Home, nil)
	if err != nil {
		return abi.Request{}, err
	}
	if len(recorded) != 1 {
		return abi.Request{}, fmt.Errorf("%w: the proxy intercepted %d permission requests in it", ErrNotPermission, len(recorded))
	}
	r := recorded[0]
	if r.err != nil {
		return abi.Request{}, fmt.Errorf("the proxy would not show this request to plugins (the person decides, offered the one-time options): %w", r.err)
	}
	r.req.DecisionID = decisionID
	return r.req, nil
}

func setupLine(fromAgent bool, v any) ReplayLine {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings only
	}
	return ReplayLine{FromAgent: fromAgent, Msg: b}
}

// permissionLines splits input into the agent's lines: the
// session/update notifications, then the permission request, each
// compacted (its keys, values and their bytes kept), params wrapped in a
// request with id 0. It also returns the request's sessionId.
func permissionLines(input []byte) ([]ReplayLine, string, error) {
	dec := json.NewDecoder(bytes.NewReader(input))
	var values []json.RawMessage
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			break
		} else if err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrNotPermission, err)
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		return nil, "", fmt.Errorf("%w: no JSON", ErrNotPermission)
	}
	var lines []ReplayLine
	for i, v := range values {
		var compact bytes.Buffer
		_ = json.Compact(&compact, v) // v decoded
		line := compact.Bytes()
		var top map[string]json.RawMessage
		if err := json.Unmarshal(line, &top); err != nil || top == nil {
			return nil, "", fmt.Errorf("%w: JSON value %d is not an object", ErrNotPermission, i+1)
		}
		var method string
		_, hasMethod := top["method"]
		if hasMethod && json.Unmarshal(top["method"], &method) != nil {
			return nil, "", fmt.Errorf("%w: JSON value %d: method %s", ErrNotPermission, i+1, top["method"])
		}
		last := i == len(values)-1
		switch {
		case !last && method == acp.MethodSessionUpdate:
			lines = append(lines, ReplayLine{FromAgent: true, Msg: line})
			continue
		case !last:
			return nil, "", fmt.Errorf("%w: JSON value %d: only session/update notifications may come before the request, got %s", ErrNotPermission, i+1, orNone(top["method"]))
		case hasMethod && method != acp.MethodRequestPermission:
			return nil, "", fmt.Errorf("%w: the last JSON value is %s", ErrNotPermission, top["method"])
		case hasMethod:
			if _, ok := top["id"]; !ok {
				return nil, "", fmt.Errorf("%w: a request needs an id (this is a notification)", ErrNotPermission)
			}
		default:
			_, v1 := top["toolCall"]
			if _, v2 := top["subject"]; !v1 && !v2 {
				return nil, "", fmt.Errorf("%w: params need a toolCall (ACP v1) or a subject (v2)", ErrNotPermission)
			}
			top = map[string]json.RawMessage{"params": line}
			line = append(append([]byte(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":`), line...), '}')
		}
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(top["params"], &p) // the proxy judges the params
		return append(lines, ReplayLine{FromAgent: true, Msg: line}), p.SessionID, nil
	}
	panic("unreachable")
}

func orNone(method json.RawMessage) string {
	if method == nil {
		return "a value without a method"
	}
	return string(method)
}
