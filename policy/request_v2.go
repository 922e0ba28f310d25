package policy

import (
	"encoding/json"
	"path"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/profile"
)

// applyV2 adds what an ACP v2 request carries to the plugins' request
// (ABI 1.4): its title, description and subject type, and a command
// subject's command and cwd as the action, read like any shell command
// (facts.Command feeds the shell analysis). The rest of the request is
// built as for v1, so the same action gets the same request shape.
func applyV2(pr *acp.PermissionRequest, req *abi.Request, facts *profile.Facts, cwd string) {
	v := pr.V2
	req.Title, req.Description = v.Title, v.Description
	if v.SubjectType == "" {
		return
	}
	req.Subject = &abi.Subject{Type: v.SubjectType}
	if v.SubjectType != acp.SubjectCommand {
		return
	}
	script, _ := json.Marshal(v.Command)
	facts.Command = script
	facts.Action.Family = abi.FamilyShell
	facts.Action.Command = v.Command
	dir := v.Cwd
	if dir != "" && !path.IsAbs(dir) && path.IsAbs(cwd) {
		dir = path.Join(cwd, dir)
	}
	if path.IsAbs(dir) {
		facts.Dir = path.Clean(dir)
		facts.Action.Cwd = facts.Dir
	} else {
		facts.Dir, facts.Action.Cwd = "", ""
		if path.IsAbs(cwd) {
			facts.Action.Cwd = path.Clean(cwd)
		}
	}
}

// paramsV2 reads an ACP v2 request's title, description and subject from
// params a person wrote (`permhost test`'s requests), with the subject's
// tool call, or a command subject's tool call id. An agent's request is
// read by the proxy (acp), strictly.
func paramsV2(params json.RawMessage) (v acp.PermissionV2, toolCall json.RawMessage, toolCallID string) {
	var p struct {
		Title       string          `json:"title"`
		Description string          `json:"description"`
		Subject     json.RawMessage `json:"subject"`
	}
	if json.Unmarshal(params, &p) != nil {
		return v, nil, ""
	}
	v.Title, v.Description = p.Title, p.Description
	var s struct {
		Type       string          `json:"type"`
		ToolCall   json.RawMessage `json:"toolCall"`
		Command    string          `json:"command"`
		Cwd        string          `json:"cwd"`
		ToolCallID string          `json:"toolCallId"`
	}
	if len(p.Subject) == 0 || json.Unmarshal(p.Subject, &s) != nil || s.Type == "" {
		return v, nil, ""
	}
	v.Subject, v.SubjectType = p.Subject, s.Type
	switch s.Type {
	case acp.SubjectToolCall:
		return v, s.ToolCall, ""
	case acp.SubjectCommand:
		v.Command, v.Cwd = s.Command, s.Cwd
		return v, nil, s.ToolCallID
	}
	return v, nil, ""
}

// requestToolCall is the tool call object a request carries as the agent
// wrote it: v1's toolCall, or v2's tool_call subject's toolCall; for a v2
// command subject naming a tool call, just its id. nil when there is none.
func requestToolCall(pr *acp.PermissionRequest) json.RawMessage {
	var params struct {
		ToolCall json.RawMessage `json:"toolCall"`
		Subject  struct {
			ToolCall json.RawMessage `json:"toolCall"`
		} `json:"subject"`
	}
	if json.Unmarshal(pr.Params, &params) != nil {
		return nil
	}
	switch {
	case len(params.ToolCall) > 0 && string(params.ToolCall) != "null":
		return params.ToolCall
	case pr.V2.SubjectType == acp.SubjectToolCall && len(params.Subject.ToolCall) > 0:
		return params.Subject.ToolCall
	case pr.V2.SubjectType == acp.SubjectCommand && pr.ToolCallID != "":
		return marshal(map[string]string{"toolCallId": pr.ToolCallID})
	}
	return nil
}

// inVersion reshapes a permission request permhost makes up (from a v1
// shape: sessionId, toolCall, options) for an ACP v2 connection, where
// the editor it may be shown to requires a title and takes the tool call
// as the subject.
func inVersion(pr *acp.PermissionRequest, title string) {
	if pr.Session.ProtocolVersion < acp.ProtocolVersion2 {
		return
	}
	ms, err := splitObject(pr.Params)
	if err != nil {
		return
	}
	tc, _ := getMember(ms, "toolCall")
	if title == "" {
		var t struct {
			Title string `json:"title"`
		}
		_ = json.Unmarshal(tc, &t)
		title = t.Title
	}
	subject := joinObject([]member{{"type", marshal(acp.SubjectToolCall)}, {"toolCall", tc}})
	out := []member{}
	for _, m := range ms {
		switch m.key {
		case "toolCall":
			out = append(out, member{"title", marshal(title)}, member{"subject", subject})
		default:
			out = append(out, m)
		}
	}
	pr.Params = joinObject(out)
	pr.V2 = acp.PermissionV2{Title: title, Subject: subject, SubjectType: acp.SubjectToolCall}
}
