package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/permhost/permhost/internal/jsontext"
)

// ProtocolVersion2 is ACP version 2, which the proxy speaks beside version
// 1 when both peers do: an editor that sends a v2-shaped initialize (with
// "info") gets it forwarded unchanged, and the connection speaks whichever
// of 1 and 2 the agent answers.
const ProtocolVersion2 = 2

// MaxProtocolVersion is the newest ACP version the proxy speaks.
const MaxProtocolVersion = ProtocolVersion2

// v2Initialize reports whether the client's initialize params ask for
// version 2 or newer in the v2 shape: an "info" member (v2 requires it; a
// v1-shaped body with a newer number is what agents refuse with -32602, so
// such a client is still asked down to version 1 as before).
func v2Initialize(params []byte, version int64) bool {
	if version < ProtocolVersion2 {
		return false
	}
	f, ok := fields(params, "info")
	return ok && f["info"] != nil
}

// setRequested records the version the client's initialize will reach the
// agent with.
func (s *state) setRequested(v int) {
	s.mu.Lock()
	s.requested = v
	s.mu.Unlock()
}

// negotiated returns the version the client asked the agent for (1 until
// a v2 initialize was forwarded) and the one the agent answered (0 before
// it did).
func (s *state) negotiated() (requested, answered int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	requested = s.requested
	if requested == 0 {
		requested = ProtocolVersion
	}
	return requested, s.version
}

// agentInitialize checks the agent's answer to the client's initialize:
// a version from 1 up to what the client asked (and the proxy speaks)
// becomes the connection's, told to both sides as the agent said it (a
// v2 client answered 1 gets the agent's v1 result, which is what a direct
// connection would give it: ACP's negotiation lets the client go on in 1
// or disconnect). Anything else fails closed with an error naming the
// versions; the proxy stops.
func (p *Proxy) agentInitialize(r clientRequest, d decoded) agentAction {
	requested, _ := p.state.negotiated()
	f, ok := fields(d.result, "protocolVersion", "agentInfo", "info")
	v, okV := intValue(f["protocolVersion"])
	if ok && okV && v >= ProtocolVersion && v <= int64(requested) {
		info := f["agentInfo"]
		if v >= ProtocolVersion2 {
			info = f["info"]
		}
		p.state.setAgent(peerOf(info), int(v))
		p.state.setSteering(AdvertisesSteering(d.result))
		if int(v) != requested {
			p.log.Info("the agent answered an older ACP version than the client asked for; speaking it to both", "requested", requested, "answered", v)
		}
		return agentAction{}
	}
	shown := bytes.TrimSpace(f["protocolVersion"])
	if !ok || !okV {
		shown = []byte("that cannot be read one way only")
	}
	msg := fmt.Sprintf("permhost: the agent answered protocolVersion %s to a client that asked for %d; permhost speaks ACP versions %d to %d, no newer than the client's", shown, requested, ProtocolVersion, MaxProtocolVersion)
	p.log.Error("failing closed: unsupported protocol version", "agentVersion", string(shown), "requested", requested)
	return agentAction{replace: errorLine(r.id, CodeInternalError, msg), stop: fmt.Errorf("%w: %s", ErrProtocolVersion, shown)}
}

// Subject types of an ACP v2 permission request. Any other type (an
// extension's "_…") is kept verbatim in PermissionV2.Subject.
const (
	SubjectToolCall = "tool_call"
	SubjectCommand  = "command"
)

// PermissionV2 is what an ACP v2 permission request carries beyond v1's
// sessionId, options and _meta: its title, description and subject. The
// request's own bytes are what the editor is shown; these are what the
// proxy and the plugins read.
type PermissionV2 struct {
	// Title is the request's title (required in v2); Description its
	// optional description (codex-acp puts the model's justification
	// there). Empty when absent.
	Title, Description string
	// Subject is params.subject verbatim; nil when absent.
	Subject json.RawMessage
	// SubjectType is subject.type: SubjectToolCall (whose toolCall is the
	// request's tool call, merged as v1's toolCall is), SubjectCommand, or
	// another type kept as it is.
	SubjectType string
	// Command and Cwd are a command subject's command and cwd; a command
	// subject's optional toolCallId is PermissionRequest.ToolCallID.
	Command, Cwd string
}

// strictV2 reads title, description and subject (f read with exact keys)
// into req.V2 and returns the subject's toolCall object, nil when it has
// none. A request that has both v1's toolCall and a subject reads two
// ways and is an error.
func strictV2(req *PermissionRequest, f map[string][]byte) (toolCall []byte, err error) {
	v := &req.V2
	for key, dst := range map[string]*string{"title": &v.Title, "description": &v.Description} {
		if raw := f[key]; raw != nil && !jsontext.IsNull(raw) {
			if *dst, err = jsontext.String(raw); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	raw := f["subject"]
	if raw == nil || jsontext.IsNull(raw) {
		return nil, nil
	}
	if f["toolCall"] != nil {
		return nil, errors.New("both toolCall and subject")
	}
	s, err := jsontext.Lookup(raw, "type", "toolCall", "command", "cwd", "toolCallId")
	if err != nil {
		return nil, fmt.Errorf("subject: %w", err)
	}
	v.Subject = json.RawMessage(raw)
	if v.SubjectType, err = jsontext.String(s["type"]); err != nil || v.SubjectType == "" {
		return nil, errors.New("subject: no type")
	}
	switch v.SubjectType {
	case SubjectToolCall:
		tc := s["toolCall"]
		if _, err := jsontext.Object(tc); err != nil {
			return nil, fmt.Errorf("subject: toolCall: %w", err)
		}
		return tc, nil
	case SubjectCommand:
		if v.Command, err = jsontext.String(s["command"]); err != nil {
			return nil, fmt.Errorf("subject: command: %w", err)
		}
		if c := s["cwd"]; c != nil && !jsontext.IsNull(c) {
			if v.Cwd, err = jsontext.String(c); err != nil {
				return nil, fmt.Errorf("subject: cwd: %w", err)
			}
		}
		if id := s["toolCallId"]; id != nil && !jsontext.IsNull(id) {
			if req.ToolCallID, err = jsontext.String(id); err != nil {
				return nil, fmt.Errorf("subject: toolCallId: %w", err)
			}
		}
	}
	return nil, nil
}

// v2Params is a v2 request's own members as encoding/json reads them, for
// a suspicious request's conservative view.
type v2Params struct {
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Subject     json.RawMessage `json:"subject"`
}

// lax fills req.V2 from p and returns the subject's toolCall, if any.
func (p v2Params) lax(req *PermissionRequest) json.RawMessage {
	req.V2.Title, req.V2.Description = p.Title, p.Description
	if len(p.Subject) == 0 || string(p.Subject) == "null" {
		return nil
	}
	var s struct {
		Type       string          `json:"type"`
		ToolCall   json.RawMessage `json:"toolCall"`
		Command    string          `json:"command"`
		Cwd        string          `json:"cwd"`
		ToolCallID string          `json:"toolCallId"`
	}
	_ = json.Unmarshal(p.Subject, &s)
	req.V2.Subject, req.V2.SubjectType = p.Subject, s.Type
	if s.Type == SubjectCommand {
		req.V2.Command, req.V2.Cwd, req.ToolCallID = s.Command, s.Cwd, s.ToolCallID
	}
	if s.Type == SubjectToolCall {
		return s.ToolCall
	}
	return nil
}
