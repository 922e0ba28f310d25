package acp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Bounds of the per-session state. A session's finished tool calls are
// dropped at once; beyond the caps the oldest entries go first.
const (
	DefaultMaxSessions          = 256
	DefaultMaxToolCallsPerSessn = 512
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
}

// toolCall is the merged state of one tool call: its fields in first-seen
// order.
type toolCall struct {
	keys   []string
	fields map[string]json.RawMessage
}

type session struct {
	id, cwd, mode string
	modeOption    string // id of the config option of category "mode"
	calls         map[string]*toolCall
	order         []string // tool call ids, oldest first; may hold dropped ids
}

// state is the proxy's knowledge of the connection. It is safe for
// concurrent use.
type state struct {
	mu           sync.Mutex
	maxSessions  int
	maxToolCalls int
	sessions     map[string]*session
	order        []string // session ids, oldest first; may hold dropped ids
	agent        Peer
	client       Peer
	version      int
}

func newState(maxSessions, maxToolCalls int) *state {
	return &state{maxSessions: maxSessions, maxToolCalls: maxToolCalls, sessions: map[string]*session{}}
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
func (s *state) setConfigOptions(sessionID string, options json.RawMessage) {
	var opts []struct {
		ID           string          `json:"id"`
		Category     string          `json:"category"`
		CurrentValue json.RawMessage `json:"currentValue"`
	}
	if sessionID == "" || len(options) == 0 || json.Unmarshal(options, &opts) != nil {
		return
	}
	for _, o := range opts {
		var v string
		if o.Category != "mode" || o.ID == "" || json.Unmarshal(o.CurrentValue, &v) != nil || v == "" {
			continue
		}
		s.mu.Lock()
		ss := s.sessionLocked(sessionID)
		ss.modeOption, ss.mode = o.ID, v
		s.mu.Unlock()
		return
	}
}

// setConfigOption records a successful session/set_config_option whose
// answer did not list the options: the mode changes when configID is the
// session's mode option.
func (s *state) setConfigOption(sessionID, configID string, value json.RawMessage) {
	var v string
	if sessionID == "" || json.Unmarshal(value, &v) != nil || v == "" {
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

func (s *state) info(id string) SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	si := SessionInfo{ID: id, Agent: s.agent, Client: s.client, ProtocolVersion: s.version}
	if ss, ok := s.sessions[id]; ok {
		si.Cwd, si.Mode = ss.cwd, ss.mode
	}
	return si
}

// updateToolCall merges update (a ToolCall or ToolCallUpdate object) into the
// session's state for its toolCallId and returns the merged object. A
// finished call (status completed or failed) is dropped after the merge.
func (s *state) updateToolCall(sessionID string, update json.RawMessage) (merged json.RawMessage, id string, ok bool) {
	members, ok := objectMembers(update)
	if !ok {
		return nil, "", false
	}
	rawID, ok := lookup(members, "toolCallId")
	if !ok || json.Unmarshal(rawID, &id) != nil || id == "" {
		return nil, "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessionLocked(sessionID)
	tc, ok := ss.calls[id]
	if !ok {
		tc = &toolCall{fields: map[string]json.RawMessage{}}
	}
	tc.merge(members)
	merged = tc.encode()
	if st, _ := tc.fields["status"]; isFinished(st) {
		delete(ss.calls, id)
		return merged, id, true
	}
	if !ok {
		for len(ss.calls) >= s.maxToolCalls && len(ss.order) > 0 {
			delete(ss.calls, ss.order[0])
			ss.order = ss.order[1:]
		}
		ss.calls[id] = tc
		ss.order = append(ss.order, id)
		if len(ss.order) > 2*s.maxToolCalls {
			ss.order = compactIDs(ss.order, func(id string) bool { _, ok := ss.calls[id]; return ok })
		}
	}
	return merged, id, true
}

func isFinished(status json.RawMessage) bool {
	s := string(bytes.TrimSpace(status))
	return s == `"completed"` || s == `"failed"`
}

// member is one member of a JSON object, verbatim.
type member struct {
	key   string
	value json.RawMessage
}

func lookup(ms []member, key string) (json.RawMessage, bool) {
	for i := len(ms) - 1; i >= 0; i-- { // the last duplicate wins, as in encoding/json
		if ms[i].key == key {
			return ms[i].value, true
		}
	}
	return nil, false
}

// objectMembers splits a JSON object into its members in order, with keys
// unescaped.
func objectMembers(obj []byte) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return nil, false
	}
	// Recover the order: walk the object's top level.
	var ms []member
	i := skipSpace(obj, 0) + 1
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			break
		}
		ke, ok := skipString(obj, i)
		if !ok {
			return nil, false
		}
		var key string
		if err := json.Unmarshal(obj[i:ke], &key); err != nil {
			return nil, false
		}
		i = skipSpace(obj, ke) + 1 // past ':'
		i = skipSpace(obj, i)
		ve, ok := skipValue(obj, i)
		if !ok {
			return nil, false
		}
		ms = append(ms, member{key: key, value: obj[i:ve:ve]})
		i = skipSpace(obj, ve)
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
	return ms, true
}

// merge applies the members of an update: absent or null leaves a field
// unchanged, anything else (lists included) replaces it.
func (tc *toolCall) merge(ms []member) {
	for _, m := range ms {
		if m.key == "sessionUpdate" || string(bytes.TrimSpace(m.value)) == "null" {
			continue
		}
		if _, ok := tc.fields[m.key]; !ok {
			tc.keys = append(tc.keys, m.key)
		}
		tc.fields[m.key] = m.value
	}
}

func (tc *toolCall) encode() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range tc.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(quote(k))
		b.WriteByte(':')
		if err := json.Compact(&b, tc.fields[k]); err != nil {
			b.Write(tc.fields[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// mergedToolCall returns the merged state of the request's toolCall over the
// session's earlier updates for the same id (the request winning), and
// records it.
func (s *state) mergedToolCall(sessionID string, toolCallObj json.RawMessage) (json.RawMessage, string) {
	merged, id, ok := s.updateToolCall(sessionID, toolCallObj)
	if !ok {
		return nil, ""
	}
	return merged, id
}

// permissionRequest builds a handler's view of an agent's permission
// request: its decoded params, the session's state and the merged tool
// call, and why it is suspicious when it is (params that do not decode,
// invalid UTF-8, a duplicate key).
func (s *state) permissionRequest(d decoded, body []byte) *PermissionRequest {
	req := &PermissionRequest{ID: d.msg.ID, Line: bytes.Clone(body), Params: d.msg.Params}
	var params struct {
		SessionID string             `json:"sessionId"`
		ToolCall  json.RawMessage    `json:"toolCall"`
		Options   []PermissionOption `json:"options"`
		Meta      json.RawMessage    `json:"_meta"`
	}
	if err := json.Unmarshal(d.msg.Params, &params); err != nil {
		req.Suspicious = "params do not decode: " + err.Error()
	}
	req.SessionID, req.Options, req.Meta = params.SessionID, params.Options, params.Meta
	switch {
	case req.Suspicious != "":
	case !utf8.Valid(body):
		req.Suspicious = "invalid UTF-8"
	default:
		if k := duplicateKey(body); k != "" {
			req.Suspicious = "duplicate key " + strconv.Quote(k)
		}
	}
	if len(params.ToolCall) > 0 && params.ToolCall[0] == '{' {
		req.ToolCall, req.ToolCallID = s.mergedToolCall(req.SessionID, params.ToolCall)
	}
	req.Session = s.info(req.SessionID)
	return req
}
