package policy

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/suggestions"
)

// toolCallFields is the part of a merged ACP tool call a request carries.
type toolCallFields struct {
	ToolCallID string          `json:"toolCallId"`
	Title      string          `json:"title"`
	Kind       string          `json:"kind"`
	Status     string          `json:"status"`
	RawInput   json.RawMessage `json:"rawInput"`
	Content    json.RawMessage `json:"content"`
	Locations  []abi.Location  `json:"locations"`
	Meta       struct {
		ClaudeCode struct {
			ToolName         string `json:"toolName"`
			ParentToolUseID  string `json:"parentToolUseId"`
			ParentToolCallID string `json:"parentToolCallId"`
		} `json:"claudeCode"`
		ParentToolCallID string `json:"parentToolCallId"`
		ToolName         string `json:"toolName"`
	} `json:"_meta"`
}

// newDecisionID returns a random id for one decision, shared by the plugins'
// requests, the decision log and the _meta permhost adds.
func newDecisionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "d-" + hex.EncodeToString(b[:])
}

// BuildRequest turns an intercepted permission request into the plugins'
// request. It fails when the request cannot be understood well enough to
// show it to a plugin (options that do not decode); the caller then falls
// back. home is the user's home directory for ~ in shell commands ("" when
// unknown).
func BuildRequest(pr *acp.PermissionRequest, decisionID, home string) (abi.Request, error) {
	req := abi.Request{
		ABI:        abi.Current,
		DecisionID: decisionID,
		Session: abi.Session{
			ID:   pr.SessionID,
			Cwd:  pr.Session.Cwd,
			Mode: pr.Session.Mode,
		},
		Raw: pr.Params,
	}
	if a := pr.Session.Agent; a.Name != "" || a.Version != "" {
		req.Session.Agent = &abi.Peer{Name: a.Name, Title: a.Title, Version: a.Version}
	}
	if c := pr.Session.Client; c.Name != "" || c.Version != "" {
		req.Session.Client = &abi.Peer{Name: c.Name, Title: c.Title, Version: c.Version}
	}
	var tc toolCallFields
	if len(pr.ToolCall) > 0 {
		if err := json.Unmarshal(pr.ToolCall, &tc); err != nil {
			return req, fmt.Errorf("policy: toolCall: %w", err)
		}
	}
	req.ToolCall = abi.ToolCall{
		ID:        tc.ToolCallID,
		Title:     tc.Title,
		Kind:      tc.Kind,
		Status:    tc.Status,
		RawInput:  nullIsAbsent(tc.RawInput),
		Content:   nullIsAbsent(tc.Content),
		Locations: tc.Locations,
		ToolName:  first(tc.Meta.ClaudeCode.ToolName, tc.Meta.ToolName),
		ParentToolCallID: first(tc.Meta.ClaudeCode.ParentToolCallID, tc.Meta.ClaudeCode.ParentToolUseID,
			tc.Meta.ParentToolCallID),
	}
	var params struct {
		Options json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(pr.Params, &params); err != nil {
		return req, fmt.Errorf("policy: params: %w", err)
	}
	opts, err := suggestions.Options(tc.Kind, params.Options)
	if err != nil {
		return req, err
	}
	req.Options = opts
	req.Shell, req.Paths = analyze(req.ToolCall, pr.Session.Cwd, home)
	return req, nil
}

func nullIsAbsent(r json.RawMessage) json.RawMessage {
	if string(r) == "null" {
		return nil
	}
	return r
}

func first(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
