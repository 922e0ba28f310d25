package policy

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/profile"
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
// request. The agent's profile (recognised from initialize's agentInfo)
// reads the tool call into the canonical action: where the agent put the
// command, its directory, the files and the URLs, and the agent's own tool
// name; the shell analysis runs on that command only; each durable option
// is described by what it really grants. It fails when the request cannot
// be understood well enough to show it to a plugin (a tool call that is
// not strict JSON, options that do not decode); the caller then falls
// back. home is the user's home directory for ~ ("" when unknown).
func BuildRequest(pr *acp.PermissionRequest, decisionID, home string) (abi.Request, error) {
	return buildRequest(pr, decisionID, home, nil)
}

// buildRequest is BuildRequest reading the tool call with profile read
// (nil: the agent's own). A request permhost makes up from an ACP method
// that is the same for every agent (fs/*, terminal/create) is read with
// the generic profile, while the session still names the agent's.
func buildRequest(pr *acp.PermissionRequest, decisionID, home string, read *profile.Profile) (abi.Request, error) {
	agent := pr.Session.Agent
	prof := profile.Recognize(agent.Name, agent.Version)
	name := prof.Name
	if read != nil {
		prof = read
	}
	req := abi.Request{
		ABI:        abi.Current,
		DecisionID: decisionID,
		Session: abi.Session{
			ID:    pr.SessionID,
			Cwd:   pr.Session.Cwd,
			Mode:  pr.Session.Mode,
			Agent: &abi.Peer{Name: agent.Name, Title: agent.Title, Version: agent.Version, Profile: name},
		},
		Raw: pr.Params,
	}
	if path.IsAbs(home) {
		req.Session.Home = path.Clean(home)
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
	facts, err := prof.Read(pr.ToolCall, pr.Session.Cwd, req.Session.Home)
	if err != nil {
		return req, fmt.Errorf("policy: %w", err)
	}
	applyV2(pr, &req, &facts, pr.Session.Cwd) // policy/request_v2.go
	req.ToolCall = abi.ToolCall{
		ID:        tc.ToolCallID,
		Title:     tc.Title,
		Kind:      tc.Kind,
		Status:    tc.Status,
		RawInput:  nullIsAbsent(tc.RawInput),
		Content:   nullIsAbsent(tc.Content),
		Locations: tc.Locations,
		ToolName:  first(facts.ToolName, tc.Meta.ClaudeCode.ToolName, tc.Meta.ToolName),
		ParentToolCallID: first(tc.Meta.ClaudeCode.ParentToolCallID, tc.Meta.ClaudeCode.ParentToolUseID,
			tc.Meta.ParentToolCallID),
	}
	req.Action = &facts.Action
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
	if prof.IsQuestion(tc.ToolCallID, tc.Kind, opts) && facts.Command == nil && len(facts.Paths) == 0 && len(facts.Action.URLs) == 0 {
		// A question or consent, not a tool call: the person answers it
		// (policy/question.go). A request that names a command, a file
		// or a URL acts, whatever its options look like: the chain
		// decides it.
		facts.Action.Family = abi.FamilyQuestion
	}
	req.Shell, req.Paths = analyze(facts, pr.Session.Cwd, req.Session.Home)
	roots := commandRoots(req.Shell)
	for i := range opts {
		if g := prof.GrantOf(opts[i], facts.Action, roots); g != nil {
			// An option that grants more than this call is durable, a
			// one-time allow that switches the mode included.
			opts[i].Grants, opts[i].Durable = g, true
		}
	}
	req.Options = opts
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
