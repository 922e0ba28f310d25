package policy

import (
	"encoding/json"
	"slices"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
)

// This file is the tool calls an agent runs without asking: in a governed
// session, a call that changes something (by its ACP kind, or by the
// action the agent's profile reads in it: claude's Write is filed as kind
// "other") that starts or ends with no permission request for it is
// logged ("unasked": true) and warned about once per session. Each call
// counts on its own: an id the agent uses again after its call finished
// (a new tool_call) is a new call, asked about or not by its own request. It is how a person learns that an agent
// decides by itself (a mode permhost could not see, a rule the agent
// stored, a silent switch).

// unaskedKinds are the ACP tool kinds whose unasked run is reported, and
// unaskedFamilies the actions, whatever the kind.
var (
	unaskedKinds    = []string{abi.KindExecute, abi.KindEdit, abi.KindDelete, abi.KindMove, abi.KindFetch}
	unaskedFamilies = []string{abi.FamilyShell, abi.FamilyEdit, abi.FamilyDelete, abi.FamilyMove, abi.FamilyFetch}
)

// maxUnaskedTracked bounds the calls followed per session.
const maxUnaskedTracked = 1024

// unaskedState is one session's record.
type unaskedState struct {
	warned  bool
	running map[string]bool // calls seen in_progress with no request yet
	logged  map[string]bool
}

// toolCallUpdate follows a tool call: a call that reaches completed, or
// fails after it was seen running, with no permission request for its id
// at any point ran unasked. (codex-acp sends its exec tool_call
// in_progress before the request: running alone does not tell.) The
// session's allowance for the call ends with it.
func (g *governor) toolCallUpdate(u *acp.Update, c acp.Caller) {
	finished := u.Status == "completed" || u.Status == "failed"
	g.mu.Lock()
	gs := g.sessionLocked(u.SessionID)
	if finished {
		delete(gs.allowed, u.ToolCallID)
	}
	if !g.governed() || !g.changes(u) {
		g.mu.Unlock()
		return
	}
	st := &gs.unasked
	if st.running == nil {
		st.running, st.logged = map[string]bool{}, map[string]bool{}
	}
	if u.Kind == "tool_call" {
		// A call starts: an id seen before names a new call.
		delete(st.running, u.ToolCallID)
		delete(st.logged, u.ToolCallID)
	}
	var report bool
	switch {
	case u.Asked:
		delete(st.running, u.ToolCallID)
	case u.Status == "in_progress":
		if len(st.running) < maxUnaskedTracked {
			st.running[u.ToolCallID] = true
		}
	case u.Status == "completed" || (u.Status == "failed" && st.running[u.ToolCallID]):
		delete(st.running, u.ToolCallID)
		report = !st.logged[u.ToolCallID]
		if report {
			if len(st.logged) >= maxUnaskedTracked {
				clear(st.logged)
			}
			st.logged[u.ToolCallID] = true
		}
	}
	warn := report && !st.warned
	if warn {
		st.warned = true
	}
	g.mu.Unlock()
	if report {
		cancel := g.e.cfg.Session.Unasked == config.UnaskedCancel
		g.reportUnasked(u, warn, cancel)
		if cancel && c != nil && g.dry == nil {
			g.endTurnUnasked(u, c) // govern_unasked_cancel.go
		}
	}
}

// changes reports whether a tool call changes something: by its ACP kind,
// or by the action the agent's profile reads in it. Only the updates that
// may make it unasked are read.
func (g *governor) changes(u *acp.Update) bool {
	if slices.Contains(unaskedKinds, u.ToolKind) {
		return true
	}
	if u.Status != "in_progress" && u.Status != "completed" && u.Status != "failed" {
		return false
	}
	f, err := g.e.agentProfile(u.Session.Agent).Read(u.ToolCall, u.Session.Cwd, "")
	return err == nil && slices.Contains(unaskedFamilies, f.Action.Family)
}

func (g *governor) reportUnasked(u *acp.Update, warn, cancel bool) {
	var tc struct {
		Title    string          `json:"title"`
		RawInput json.RawMessage `json:"rawInput"`
	}
	_ = json.Unmarshal(u.ToolCall, &tc) // merged state: strict JSON of the proxy's own
	e := g.e
	mode := u.Session.Mode
	if g.dry != nil {
		what := "ran with no permission request (" + u.Status + inMode(mode) + ")"
		if cancel {
			what += "; [session] unasked = \"cancel\": permhost would end the turn"
		}
		g.dry(ReplayNote{Session: u.SessionID, ToolCallID: u.ToolCallID, Kind: u.ToolKind, Title: tc.Title, Type: NoteUnasked, What: what})
		return
	}
	prof := e.agentProfile(u.Session.Agent)
	entry := LogEntry{DecisionID: newDecisionID(), Time: e.now().UTC(), Via: e.via, Session: u.SessionID, Cwd: LogCwd(u.Session.Cwd),
		Agent: &abi.Peer{Name: u.Session.Agent.Name, Title: u.Session.Agent.Title, Version: u.Session.Agent.Version, Profile: prof.Name},
		ToolCall: LogToolCall{ID: u.ToolCallID, Title: tc.Title, Kind: u.ToolKind, Status: u.Status,
			RawInputSHA256: CanonicalSHA256(nullIsAbsent(tc.RawInput))},
		Options: []LogOption{}, Plugins: []LogPlugin{}, Outcome: "ran", DecidedBy: ByAgent, Unasked: true,
		Reason: "the agent ran it with no permission request" + inMode(mode)}
	if cancel {
		entry.Reason += "; [session] unasked = \"cancel\": permhost ended the turn (session/cancel)"
	}
	e.writeLog(entry)
	attrs := []any{"session", u.SessionID, "toolCall", u.ToolCallID, "kind", u.ToolKind, "title", clipTitle(tc.Title), "mode", mode}
	if warn {
		e.log.Warn("the agent ran a tool call without asking: the policy never saw it (logged as unasked; later ones in this session are only logged)", attrs...)
		return
	}
	e.log.Info("the agent ran a tool call without asking", attrs...)
}

func inMode(mode string) string {
	if mode == "" {
		return ""
	}
	return ", mode " + mode
}
