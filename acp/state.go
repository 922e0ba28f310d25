package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/permhost/permhost/internal/jsontext"
)

// Bounds of the per-session state. A session's finished tool calls are
// dropped at once; beyond the caps the oldest entries go first.
const (
	DefaultMaxSessions          = 256
	DefaultMaxToolCallsPerSessn = 512
	// DefaultMaxToolCallBytesPerSession bounds the bytes of a session's
	// merged tool calls (their keys and values); a single call larger than
	// the bound is not kept.
	DefaultMaxToolCallBytesPerSession = 16 << 20
)

// Peer is what one side told about itself in initialize (agentInfo or
// clientInfo).
type Peer struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
	// Info is the agentInfo or clientInfo object verbatim; nil when absent.
	Info json.RawMessage `json:"-"`
}

// SessionInfo is what the proxy knows about a session when a permission
// request arrives. Fields are empty when the proxy has not seen them (for
// example when it was started after session/new).
type SessionInfo struct {
	ID string
	// Cwd is the working directory of session/new, session/load or
	// session/resume.
	Cwd string
	// Mode is the current mode id: modes.currentModeId of the session's
	// new/load/resume result, then each current_mode_update and successful
	// session/set_mode; or the value of the session config option of
	// category "mode", which agents that offer config options report in the
	// same result, in config_option_update and in the answer to
	// session/set_config_option (clients are told to prefer it to modes).
	Mode   string
	Agent  Peer
	Client Peer
	// ProtocolVersion is the version the agent answered in initialize.
	ProtocolVersion int
	// Steering is true when the agent's initialize result advertised the
	// _session/steering extension (MethodSessionSteering).
	Steering bool
}

// toolCall is the merged state of one tool call: its fields in first-seen
// order, values copied (what the peer sent is not kept).
type toolCall struct {
	keys   []string
	fields map[string][]byte
	size   int // bytes of keys and values
}

type session struct {
	id, cwd, mode string
	modeOption    string // id of the config option of category "mode"
	calls         map[string]*toolCall
	order         []string // tool call ids, oldest first; may hold dropped ids
	callBytes     int      // sum of the calls' sizes
	asked         *idSet   // tool call ids the agent asked about; nil until one
}

// maxAskedPerSession bounds the record of the tool calls a session's
// agent asked about, oldest forgotten first.
const maxAskedPerSession = 4096

// state is the proxy's knowledge of the connection. It is safe for
// concurrent use. It learns only from strict JSON (exact keys, no
// duplicate in any case), since it is what decisions are made on.
type state struct {
	mu             sync.Mutex
	maxSessions    int
	maxToolCalls   int
	maxToolCallMem int
	sessions       map[string]*session
	order          []string // session ids, oldest first; may hold dropped ids
	agent          Peer
	client         Peer
	version        int  // the agent's answer to initialize
	requested      int  // what the client's initialize asked the agent for; 0 is 1
	steering       bool // the agent advertised _session/steering
}

// newState returns an empty state; a zero bound is its default.
func newState(maxSessions, maxToolCalls, maxToolCallBytes int) *state {
	if maxSessions == 0 {
		maxSessions = DefaultMaxSessions
	}
	if maxToolCalls == 0 {
		maxToolCalls = DefaultMaxToolCallsPerSessn
	}
	if maxToolCallBytes == 0 {
		maxToolCallBytes = DefaultMaxToolCallBytesPerSession
	}
	return &state{maxSessions: maxSessions, maxToolCalls: maxToolCalls, maxToolCallMem: maxToolCallBytes, sessions: map[string]*session{}}
}

// sessionLocked returns the session with id, creating it (and evicting the
// oldest beyond the cap) when needed. s.mu is held.
func (s *state) sessionLocked(id string) *session {
	if ss, ok := s.sessions[id]; ok {
		return ss
	}
	for len(s.sessions) >= s.maxSessions && len(s.order) > 0 {
		delete(s.sessions, s.order[0])
		s.order = s.order[1:]
	}
	ss := &session{id: id, calls: map[string]*toolCall{}}
	s.sessions[id] = ss
	s.order = append(s.order, id)
	if len(s.order) > 2*s.maxSessions {
		s.order = compactIDs(s.order, func(id string) bool { _, ok := s.sessions[id]; return ok })
	}
	return ss
}

func compactIDs(ids []string, keep func(string) bool) []string {
	out := ids[:0]
	for _, id := range ids {
		if keep(id) {
			out = append(out, id)
		}
	}
	return out
}

func (s *state) setSession(id, cwd, mode string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessionLocked(id)
	if cwd != "" {
		ss.cwd = cwd
	}
	if mode != "" {
		ss.mode = mode
	}
}

func (s *state) setMode(id, mode string) { s.setSession(id, "", mode) }

// setConfigOptions learns the mode from a session's full list of config
// options (a session/new|load|resume or session/set_config_option result,
// or a config_option_update): the current value of the option of category
// "mode". A list without one changes nothing.
func (s *state) setConfigOptions(sessionID string, options []byte) {
	if sessionID == "" {
		return
	}
	id, v, ok := modeOfConfigOptions(options)
	if !ok {
		return
	}
	s.mu.Lock()
	ss := s.sessionLocked(sessionID)
	ss.modeOption, ss.mode = id, v
	s.mu.Unlock()
}

// setConfigOption records a successful session/set_config_option whose
// answer did not list the options: the mode changes when configID is the
// session's mode option.
func (s *state) setConfigOption(sessionID, configID string, value []byte) {
	v := stringOf(value)
	if sessionID == "" || v == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok && ss.modeOption != "" && ss.modeOption == configID {
		ss.mode = v
	}
}

func (s *state) setClient(p Peer) {
	s.mu.Lock()
	s.client = p
	s.mu.Unlock()
}

func (s *state) setAgent(p Peer, version int) {
	s.mu.Lock()
	s.agent, s.version = p, version
	s.mu.Unlock()
}

// setSteering records whether the agent advertised _session/steering.
func (s *state) setSteering(on bool) {
	s.mu.Lock()
	s.steering = on
	s.mu.Unlock()
}

func (s *state) info(id string) SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	si := SessionInfo{ID: id, Agent: s.agent, Client: s.client, ProtocolVersion: s.version, Steering: s.steering}
	if ss, ok := s.sessions[id]; ok {
		si.Cwd, si.Mode = ss.cwd, ss.mode
	}
	return si
}

// updateToolCall merges update (a ToolCall or ToolCallUpdate object, strict
// JSON) into the session's state for its toolCallId and returns the merged
// object. A finished call (status completed or failed) is dropped after the
// merge; so is a call larger than the session's byte bound, and older calls
// make way for the newest.
func (s *state) updateToolCall(sessionID string, update []byte) (merged json.RawMessage, id string, ok bool) {
	members, err := jsontext.Object(update)
	if err != nil {
		return nil, "", false
	}
	for _, m := range members {
		if m.Key == "toolCallId" {
			id = stringOf(m.Value)
		}
	}
	if id == "" {
		return nil, "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessionLocked(sessionID)
	tc, known := ss.calls[id]
	if !known {
		tc = &toolCall{fields: map[string][]byte{}}
	}
	before := tc.size
	tc.merge(members)
	merged = tc.encode()
	if st := tc.fields["status"]; isFinished(st) || tc.size > s.maxToolCallMem {
		if known {
			ss.forget(id)
		}
		return merged, id, true
	}
	if known {
		ss.callBytes += tc.size - before
	} else {
		for len(ss.calls) >= s.maxToolCalls && len(ss.order) > 0 {
			ss.forget(ss.order[0])
		}
		ss.calls[id] = tc
		ss.callBytes += tc.size
		ss.order = append(ss.order, id)
	}
	for ss.callBytes > s.maxToolCallMem && len(ss.order) > 0 && ss.order[0] != id {
		ss.forget(ss.order[0])
	}
	if len(ss.order) > 2*s.maxToolCalls {
		ss.order = compactIDs(ss.order, func(id string) bool { _, ok := ss.calls[id]; return ok })
	}
	return merged, id, true
}

// forget drops a call; an id at the front of order goes with it.
func (ss *session) forget(id string) {
	if tc, ok := ss.calls[id]; ok {
		ss.callBytes -= tc.size
		delete(ss.calls, id)
	}
	if len(ss.order) > 0 && ss.order[0] == id {
		ss.order = ss.order[1:]
	}
}

func isFinished(status []byte) bool {
	s := string(bytes.TrimSpace(status))
	return s == `"completed"` || s == `"failed"`
}

// merge applies the members of an update: absent or null leaves a field
// unchanged, anything else (lists included) replaces it.
func (tc *toolCall) merge(ms []jsontext.Member) {
	for _, m := range ms {
		if m.Key == "sessionUpdate" || jsontext.IsNull(m.Value) {
			continue
		}
		old, ok := tc.fields[m.Key]
		if !ok {
			tc.keys = append(tc.keys, m.Key)
			tc.size += len(m.Key)
		}
		tc.size += len(m.Value) - len(old)
		tc.fields[m.Key] = bytes.Clone(m.Value)
	}
}

func (tc *toolCall) encode() json.RawMessage {
	b := make([]byte, 0, tc.size+2*len(tc.keys)+8)
	b = append(b, '{')
	for i, k := range tc.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, jsontext.Quote(k)...)
		b = append(b, ':')
		b = jsontext.AppendCompact(b, tc.fields[k])
	}
	return append(b, '}')
}

// permissionRequest builds a handler's view of an agent's permission
// request (d is own decoded: the request keeps own): its params read with
// exact keys, the session's state and the merged tool call, and why it is
// suspicious when it is (not strict JSON, a key spelled in another case,
// params that do not decode). A suspicious request's fields are read as
// encoding/json reads them, for the conservative path to show.
func (s *state) permissionRequest(d decoded, own []byte) *PermissionRequest {
	req := &PermissionRequest{ID: d.id, Line: own, Params: d.params}
	if d.strict != nil {
		req.Suspicious = suspicion(d.strict)
	}
	toolCall := s.readParams(req)
	switch {
	case req.Suspicious == "" && len(toolCall) > 0 && toolCall[0] == '{':
		req.ToolCall, req.ToolCallID = s.mergedToolCall(req.SessionID, toolCall)
	case req.ToolCallID != "":
		// What earlier strict updates said; the request's own toolCall is
		// not merged in.
		req.ToolCall = s.toolCallState(req.SessionID, req.ToolCallID)
	}
	req.Session = s.info(req.SessionID)
	return req
}

// readParams fills the request's fields from its params, strictly, and
// returns the toolCall object's bytes; a suspicious request falls back to
// encoding/json.
func (s *state) readParams(req *PermissionRequest) []byte {
	if req.Suspicious == "" {
		toolCall, err := strictParams(req)
		if err == nil {
			return toolCall
		}
		req.Suspicious = suspicion(err)
	}
	var params struct {
		SessionID string             `json:"sessionId"`
		ToolCall  json.RawMessage    `json:"toolCall"`
		Options   []PermissionOption `json:"options"`
		Meta      json.RawMessage    `json:"_meta"`
		v2Params
	}
	if err := json.Unmarshal(req.Params, &params); err != nil && !strings.HasPrefix(req.Suspicious, "params do not decode") {
		req.Suspicious += "; params do not decode: " + err.Error()
	}
	req.SessionID, req.Options, req.Meta = params.SessionID, params.Options, params.Meta
	if tc := params.v2Params.lax(req); params.ToolCall == nil {
		params.ToolCall = tc
	}
	var tc struct {
		ID string `json:"toolCallId"`
	}
	if json.Unmarshal(params.ToolCall, &tc) == nil {
		req.ToolCallID = tc.ID
	}
	return nil
}

// strictParams reads sessionId, toolCall, options and _meta with exact keys.
func strictParams(req *PermissionRequest) ([]byte, error) {
	f, err := jsontext.Lookup(req.Params, "sessionId", "toolCall", "options", "_meta", "title", "description", "subject")
	if err != nil {
		return nil, err
	}
	subjectToolCall, err := strictV2(req, f)
	if err != nil {
		return nil, err
	}
	if v := f["sessionId"]; v != nil {
		if req.SessionID, err = jsontext.String(v); err != nil {
			return nil, fmt.Errorf("sessionId: %w", err)
		}
	}
	if v := f["options"]; v != nil && !jsontext.IsNull(v) {
		elems, err := jsontext.Elements(v)
		if err != nil {
			return nil, fmt.Errorf("options: %w", err)
		}
		for _, e := range elems {
			o, err := jsontext.Lookup(e, "optionId", "name", "kind", "_meta")
			if err != nil {
				return nil, fmt.Errorf("option: %w", err)
			}
			opt := PermissionOption{Meta: json.RawMessage(o["_meta"])}
			for key, dst := range map[string]*string{"optionId": &opt.OptionID, "name": &opt.Name, "kind": &opt.Kind} {
				if v, ok := o[key]; ok {
					if *dst, err = jsontext.String(v); err != nil {
						return nil, fmt.Errorf("option %s: %w", key, err)
					}
				}
			}
			req.Options = append(req.Options, opt)
		}
	}
	if v := f["_meta"]; v != nil {
		req.Meta = json.RawMessage(v)
	}
	if subjectToolCall != nil {
		return subjectToolCall, nil
	}
	return f["toolCall"], nil
}

// toolCallState returns the merged state of a call; nil when none is kept.
func (s *state) toolCallState(sessionID, id string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		if tc, ok := ss.calls[id]; ok {
			return tc.encode()
		}
	}
	return nil
}

// mergedToolCall returns the merged state of the request's toolCall over the
// session's earlier updates for the same id (the request winning), and
// records it.
func (s *state) mergedToolCall(sessionID string, toolCallObj []byte) (json.RawMessage, string) {
	merged, id, ok := s.updateToolCall(sessionID, toolCallObj)
	if !ok {
		return nil, ""
	}
	return merged, id
}

// markAsked records that the agent asked about a tool call of a session.
func (s *state) markAsked(sessionID, toolCallID string) {
	if toolCallID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessionLocked(sessionID)
	if ss.asked == nil {
		set := newIDSet(maxAskedPerSession)
		ss.asked = &set
	}
	ss.asked.add(toolCallID)
}

// unmarkAsked forgets that the agent asked about a tool call: it finished.
func (s *state) unmarkAsked(sessionID, toolCallID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok && ss.asked != nil {
		ss.asked.remove(toolCallID)
	}
}

// wasAsked reports whether the agent asked about a tool call of a session.
func (s *state) wasAsked(sessionID, toolCallID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sessionID]
	return ok && ss.asked != nil && ss.asked.has(toolCallID)
}

// agentRequest builds a Governor's view of an agent request other than a
// permission request (d decodes body): sessionId and toolCallId read with
// exact keys, or as encoding/json reads them when the request is not
// strict JSON (Suspicious then says why), the session's state and the
// merged tool call.
func (s *state) agentRequest(d decoded, body []byte) *AgentRequest {
	r := &AgentRequest{ID: d.id, Method: d.method, Line: body, Params: d.params}
	if d.strict != nil {
		r.Suspicious = suspicion(d.strict)
	}
	if r.Suspicious == "" {
		f, err := jsontext.Lookup(d.params, "sessionId", "toolCallId")
		if err == nil {
			r.SessionID, r.ToolCallID = stringOf(f["sessionId"]), stringOf(f["toolCallId"])
		} else if d.params != nil {
			r.Suspicious = suspicion(err)
		}
	}
	if r.Suspicious != "" {
		var p struct {
			SessionID  string `json:"sessionId"`
			ToolCallID string `json:"toolCallId"`
		}
		_ = json.Unmarshal(d.params, &p)
		r.SessionID, r.ToolCallID = p.SessionID, p.ToolCallID
	}
	if r.ToolCallID != "" && r.Suspicious == "" {
		r.ToolCall = s.toolCallState(r.SessionID, r.ToolCallID)
	}
	r.Session = s.info(r.SessionID)
	return r
}

// modeOfConfigOptions returns the id and current value of the config
// option of category "mode" in a list of config options (strict JSON).
func modeOfConfigOptions(options []byte) (id, value string, ok bool) {
	if len(options) == 0 || jsontext.Check(options) != nil {
		return "", "", false
	}
	elems, err := jsontext.Elements(options)
	if err != nil {
		return "", "", false
	}
	for _, e := range elems {
		// v1 names the option "id", v2 "configId" (acp/v2.go); one that
		// names two different ids is not read.
		f, ok := fields(e, "id", "configId", "category", "currentValue")
		id, v := stringOf(f["id"]), stringOf(f["currentValue"])
		if c := stringOf(f["configId"]); id == "" {
			id = c
		} else if f["configId"] != nil && c != id {
			continue
		}
		if ok && stringOf(f["category"]) == "mode" && id != "" && v != "" {
			return id, v, true
		}
	}
	return "", "", false
}
