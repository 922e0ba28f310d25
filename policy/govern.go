package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/jsontext"
	"github.com/permhost/permhost/internal/profile"
)

// This file is the proxy's Governor ([session] in RATIONALE.md, "Governed
// sessions"): what permhost does about the decisions an agent would make
// by itself. Modes are here; the agent's file, terminal and elicitation
// requests in govern_fs.go and govern_elicit.go; the tool calls it runs
// unasked in govern_unasked.go.

// modeSwitchWait bounds how long permhost waits for the agent to accept a
// switch of mode; a switch not answered by then counts as refused.
const modeSwitchWait = 20 * time.Second

// maxGovernedSessions bounds the sessions the governor keeps. A session
// that started (SessionStart) is never forgotten: past the bound a new
// one is refused. A session seen only in updates makes way, oldest first.
const maxGovernedSessions = acp.DefaultMaxGovernedSessions

// maxSwitchTries bounds permhost's switches of one session in a row while
// the agent keeps reporting a mode that decides by itself.
const maxSwitchTries = 3

// Governor returns the proxy's acp.Governor for the engine's [session]
// settings: with modes = "govern" it keeps each session in a mode where
// the agent asks; with fs = "govern" the agent's file and terminal
// requests go through the plugins; an approval the agent sends as
// elicitation/create is decided like a permission request whatever they
// say; in a governed session (modes or fs govern) a tool call the agent
// runs without asking is logged and warned about.
func (e *Engine) Governor() acp.Governor { return e.gov }

// governor is the Engine's acp.Governor. A dry one (permhost replay)
// changes nothing and sends nothing: it reports what it would do.
type governor struct {
	e   *Engine
	dry func(ReplayNote) // set for a dry governor
	at  func() int       // a dry governor's position in the recording

	mu       sync.Mutex
	sessions map[string]*govSession
	order    []string // the kept sessions' ids, oldest first
	max      int      // maxGovernedSessions; tests lower it

	bg sync.WaitGroup // switches back under way; Engine.Close waits for them
}

// govSession is what the governor knows of one session.
type govSession struct {
	modes     profile.SessionModes
	options   json.RawMessage // the latest configOptions list seen
	started   bool            // SessionStart saw it: kept for good
	switching bool            // a switch of permhost's is under way
	again     bool            // the agent reported a deciding mode meanwhile
	unasked   unaskedState
	allowed   map[string]allowance // tool calls allowed and not finished, by id
}

func newGovernor(e *Engine, dry func(ReplayNote)) *governor {
	return &governor{e: e, dry: dry, sessions: map[string]*govSession{}, max: maxGovernedSessions}
}

func (g *governor) cfg() config.Session { return g.e.cfg.Session }

func (g *governor) governsModes() bool { return g.cfg().Modes == config.ModesGovern }

func (g *governor) governsFS() bool { return g.cfg().FS == config.FSGovern }

// governed reports whether sessions are governed at all: then what an
// agent runs unasked is logged.
func (g *governor) governed() bool { return g.governsModes() || g.governsFS() }

// sessionLocked returns the governor's record of a session, creating it;
// g.mu is held. Past the bound a session seen only in updates makes way;
// when every kept session started, the record returned is not kept.
func (g *governor) sessionLocked(id string) *govSession {
	if s, ok := g.sessions[id]; ok {
		return s
	}
	s := &govSession{allowed: map[string]allowance{}}
	if len(g.sessions) >= g.max {
		i := slices.IndexFunc(g.order, func(id string) bool { return !g.sessions[id].started })
		if i < 0 {
			return s
		}
		delete(g.sessions, g.order[i])
		g.order = slices.Delete(g.order, i, i+1)
	}
	g.sessions[id] = s
	g.order = append(g.order, id)
	return s
}

// agentProfile is the profile of the agent that sent agentInfo peer, with the
// configured deciding words for an agent permhost has no profile for.
func (e *Engine) agentProfile(peer acp.Peer) *profile.Profile {
	p := profile.Recognize(peer.Name, peer.Version)
	if p == profile.Generic && e.cfg.Session.DecidingWords != nil {
		p = p.WithDeciding(e.cfg.Session.DecidingWords)
	}
	return p
}

// modeEntry starts the decision-log entry of a mode action.
func (g *governor) modeEntry(s acp.SessionInfo, m LogMode, outcome, reason string) LogEntry {
	e := g.e
	prof := e.agentProfile(s.Agent)
	return LogEntry{DecisionID: newDecisionID(), Time: e.now().UTC(), Via: e.via, Session: s.ID, Cwd: LogCwd(s.Cwd),
		Agent:   &abi.Peer{Name: s.Agent.Name, Title: s.Agent.Title, Version: s.Agent.Version, Profile: prof.Name},
		Options: []LogOption{}, Plugins: []LogPlugin{}, Outcome: outcome, DecidedBy: ByModes, Reason: reason, Mode: &m}
}

// note reports an action: to the decision log and the diagnostics, or to
// the replay of a dry governor.
func (g *governor) note(entry LogEntry, n ReplayNote) {
	if g.dry != nil {
		g.dry(n)
		return
	}
	g.e.writeLog(entry)
}

// refusal is the JSON-RPC error of a refusal by [session] modes.
func refusal(msg string) *acp.RPCError {
	return &acp.RPCError{Code: acp.CodePolicyRefused, Message: "permhost: " + msg}
}

// modeName is the display name of an offered mode.
func modeName(m profile.SessionModes, id string) string {
	if i := slices.IndexFunc(m.Offered, func(o profile.Offered) bool { return o.ID == id }); i >= 0 {
		return m.Offered[i].Name
	}
	return ""
}

// decides says what a deciding mode decides, for people.
func decides(prof *profile.Profile, id string) string {
	if m, ok := prof.Mode(id); ok && m.Decides != "" {
		return m.Decides
	}
	return "the agent decides by itself"
}

// SessionStart moves a session that starts in a mode that decides by
// itself to the profile's asking mode, and shows the editor the result
// with that mode current. A session that cannot be moved, or whose agent
// refuses, is not governable: the editor gets an error naming the policy
// instead of a session the policy would not see.
func (g *governor) SessionStart(ctx context.Context, s *acp.SessionStart, c acp.Caller) (json.RawMessage, *acp.RPCError) {
	if !g.governsModes() {
		return nil, nil
	}
	prof := g.e.agentProfile(s.Session.Agent)
	if s.Suspicious != "" {
		why := "the agent's " + s.Method + " result cannot be read one way only (" + s.Suspicious + "): permhost cannot tell which mode the session is in"
		return nil, g.ungovernable(s.Session, s.Method, "", why)
	}
	m, err := profile.ReadSessionModes(s.Result)
	if err != nil {
		return nil, g.ungovernable(s.Session, s.Method, "", "the agent's "+s.Method+" result cannot be read: "+err.Error())
	}
	sid := s.Session.ID
	plan := prof.Plan(m)
	g.mu.Lock()
	gs := g.sessionLocked(sid)
	if g.sessions[sid] != gs {
		g.mu.Unlock()
		return nil, g.ungovernable(s.Session, s.Method, m.Current, fmt.Sprintf("permhost governs at most %d sessions on one connection and forgets none", g.max))
	}
	gs.started = true
	gs.modes = m
	if raw, ok := member1(s.Result, "configOptions"); ok {
		gs.options = raw
	}
	// An update the agent sends while permhost switches is seen by the
	// switch (confirmSwitch), not reversed on its own.
	if plan.Governable && !plan.CurrentAsks && g.dry == nil {
		gs.switching = true
	}
	g.mu.Unlock()
	switch {
	case plan.CurrentAsks:
		return nil, nil
	case !plan.Governable:
		return nil, g.ungovernable(s.Session, s.Method, m.Current, plan.Why)
	}
	by := switchMethod(plan.Switch)
	if g.dry != nil {
		g.dry(ReplayNote{Session: sid, What: fmt.Sprintf("%s: mode %s decides by itself; permhost would switch to %s (%s) before the editor sees the session", s.Method, m.Current, plan.Target, by)})
		return nil, nil
	}
	if err := g.confirmSwitch(ctx, c, sid, gs, plan.Target, plan.Switch); err != nil {
		entry := g.modeEntry(s.Session, LogMode{Action: ModeUngovernable, Trigger: s.Method, From: m.Current, To: plan.Target, By: by, Error: err.Error()},
			"refused", "the agent refused the switch to "+plan.Target)
		g.e.log.Error("the session is not governable: the agent refused permhost's switch to a mode that asks; the editor gets an error instead of the session",
			"session", sid, "from", m.Current, "to", plan.Target, "err", err)
		return nil, g.deliverModeRefusal(entry, refusal(fmt.Sprintf("the session starts in mode %s, which decides by itself (%s), and the agent refused the switch to %s (%v); [session] modes = \"govern\" does not hand the policy's decisions to the agent: set modes = \"pass\" to use this mode anyway",
			m.Current, decides(prof, m.Current), plan.Target, err)))
	}
	out, err := withCurrentMode(s.Result, plan.Target)
	if err != nil {
		// ReadSessionModes read it: cannot happen; fail closed all the same.
		entry := g.modeEntry(s.Session, LogMode{Action: ModeUngovernable, Trigger: s.Method, From: m.Current, To: plan.Target, By: by}, "refused", "internal error")
		return nil, g.deliverModeRefusal(entry, refusal("internal error rewriting the session's mode: "+err.Error()))
	}
	g.e.log.Info("session moved to a mode that asks before the editor sees it", "session", sid, "from", m.Current, "to", plan.Target, "by", by)
	return g.deliverSwitch(g.modeEntry(s.Session, LogMode{Action: ModeSwitch, Trigger: s.Method, From: m.Current, To: plan.Target, By: by}, "switched",
		"mode "+m.Current+" decides by itself: "+decides(prof, m.Current)), out), nil
}

// ungovernable logs and returns the refusal of a session permhost cannot
// keep in a mode that asks.
func (g *governor) ungovernable(s acp.SessionInfo, method, from, why string) *acp.RPCError {
	if g.dry != nil {
		g.dry(ReplayNote{Session: s.ID, What: method + ": not governable (" + why + "); permhost would answer the editor with an error"})
		return nil
	}
	g.e.log.Error("the session is not governable; the editor gets an error instead of the session", "session", s.ID, "why", why)
	return g.deliverModeRefusal(g.modeEntry(s, LogMode{Action: ModeUngovernable, Trigger: method, From: from}, "refused", why),
		refusal("the session cannot be governed: "+why+"; [session] modes = \"govern\" keeps sessions in a mode where the agent asks (set modes = \"pass\" to use it anyway)"))
}

func switchMethod(s profile.Switch) string {
	if s == profile.SwitchConfigOption {
		return acp.MethodSessionSetConfigOption
	}
	return acp.MethodSessionSetMode
}

// switchMode asks the agent to move session sid to mode target, with a
// request of permhost's own.
func (g *governor) switchMode(ctx context.Context, c acp.Caller, sid string, m profile.SessionModes, target string, how profile.Switch) error {
	ctx, cancel := context.WithTimeout(ctx, modeSwitchWait)
	defer cancel()
	var params json.RawMessage
	if how == profile.SwitchConfigOption {
		params = configOptionParams(sid, m, target) // policy/govern_v2.go
	} else {
		params = marshal(map[string]string{"sessionId": sid, "modeId": target})
	}
	a, err := c.Agent(ctx, switchMethod(how), params)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within %v", modeSwitchWait)
	case err != nil:
		return err
	case a.Error != nil:
		return fmt.Errorf("error %d: %s", a.Error.Code, a.Error.Message)
	}
	return nil
}

// confirmSwitch switches session sid (record gs, whose switching the
// caller set) to target until the agent has confirmed it: a switch
// answered with success while the agent reported a mode that decides
// (gs.again) is not one, and is tried again. The mode permhost believes is
// the last one the agent reported: the success answering this switch,
// with nothing reported since it was sent, reports target.
func (g *governor) confirmSwitch(ctx context.Context, c acp.Caller, sid string, gs *govSession, target string, how profile.Switch) error {
	for try := 1; ; try++ {
		g.mu.Lock()
		m := gs.modes
		gs.again = false
		g.mu.Unlock()
		err := g.switchMode(ctx, c, sid, m, target, how)
		g.mu.Lock()
		if err == nil && !gs.again {
			gs.modes.Current = target
			if gs.options != nil {
				if o, err := withModeValue(gs.options, target); err == nil {
					gs.options = o
				}
			}
			gs.switching = false
			g.mu.Unlock()
			return nil
		}
		reported := gs.modes.Current
		if err != nil || try >= maxSwitchTries {
			gs.switching = false
			g.mu.Unlock()
			if err == nil {
				err = fmt.Errorf("the agent reported mode %s again after each of %d switches to %s", reported, maxSwitchTries, target)
			}
			return err
		}
		g.mu.Unlock()
	}
}

// unreadSwitch ends the refusal of a switch whose ids are not strings.
const unreadSwitch = `; [session] modes = "govern" refuses a switch it cannot read`

// ClientRequest refuses the editor's switch into a mode that decides by
// itself, and a switch whose mode is not a string.
func (g *governor) ClientRequest(r *acp.ClientRequest) *acp.RPCError {
	if !g.governsModes() {
		return nil
	}
	if r.Suspicious != "" {
		return refusal(r.Method + " cannot be read one way only (" + r.Suspicious + "): permhost cannot tell which mode it asks for")
	}
	sid := r.Session.ID
	g.mu.Lock()
	m := profile.SessionModes{}
	if gs, ok := g.sessions[sid]; ok {
		m = gs.modes
	}
	g.mu.Unlock()
	// The mode the session is in is the last the agent reported, as the
	// governor followed it (a switch back included).
	from := first(m.Current, r.Session.Mode)
	var mode string
	switch r.Method {
	case acp.MethodSessionSetMode:
		f, err := jsontext.Lookup(r.Params, "modeId")
		if err != nil {
			return refusal(r.Method + ": params cannot be read: " + err.Error())
		}
		if mode, err = jsontext.String(f["modeId"]); err != nil || mode == "" {
			return refusal(r.Method + ": modeId is not a mode id (a non-empty string): permhost cannot tell which mode it asks for" + unreadSwitch)
		}
	case acp.MethodSessionSetConfigOption:
		f, err := jsontext.Lookup(r.Params, "configId", "value")
		if err != nil {
			return refusal(r.Method + ": params cannot be read: " + err.Error())
		}
		id, err := jsontext.String(f["configId"])
		if err != nil || id == "" {
			return refusal(r.Method + ": configId is not an option id (a non-empty string): permhost cannot tell which option it sets" + unreadSwitch)
		}
		if (m.ConfigOption != "" && id != m.ConfigOption) || (m.ConfigOption == "" && id != "mode") {
			return nil // another option: the model, a reasoning level...
		}
		if mode, err = jsontext.String(f["value"]); err != nil || mode == "" {
			return refusal(r.Method + ": the mode option's value is not a mode id (a non-empty string): permhost cannot tell which mode it asks for" + unreadSwitch)
		}
	}
	prof := g.e.agentProfile(r.Session.Agent)
	if prof.Asks(mode, modeName(m, mode)) {
		return nil
	}
	if g.dry != nil {
		g.dry(ReplayNote{Session: sid, What: fmt.Sprintf("%s to %s: permhost would refuse it (%s)", r.Method, mode, decides(prof, mode))})
		return nil
	}
	g.e.log.Warn("refused the editor's switch into a mode that decides by itself", "session", sid, "mode", mode)
	return g.deliverModeRefusal(g.modeEntry(r.Session, LogMode{Action: ModeRefuse, Trigger: r.Method, From: from, To: mode}, "refused",
		"mode "+mode+" decides by itself: "+decides(prof, mode)),
		refusal(fmt.Sprintf("mode %s decides by itself (%s); [session] modes = \"govern\" keeps this session in a mode where the agent asks", mode, decides(prof, mode))))
}

// Update watches mode changes (modeUpdate) and tool calls (unasked). What
// an agent replays of a session it loads is history: the session's start
// decides about its mode, and its old tool calls ran before permhost.
func (g *governor) Update(u *acp.Update, c acp.Caller) {
	if u.Loading {
		return
	}
	switch u.Kind {
	case "current_mode_update", "config_option_update":
		g.modeUpdate(u, c)
	case "tool_call", "tool_call_update":
		g.toolCallUpdate(u, c)
	}
}

// modeUpdate reverses the agent's own switch into a mode that decides by
// itself: the editor's messages for the session wait (Caller.Hold) while
// permhost switches it back to the asking mode, then the editor, which saw
// the agent's update, is told the mode the session is in. A session that
// cannot be switched back is refused from then on.
func (g *governor) modeUpdate(u *acp.Update, c acp.Caller) {
	if !g.governsModes() || u.ModeID == "" {
		return
	}
	sid := u.SessionID
	prof := g.e.agentProfile(u.Session.Agent)
	g.mu.Lock()
	gs := g.sessionLocked(sid)
	if u.Kind == "config_option_update" && len(u.ConfigOptions) > 0 {
		gs.options = append(json.RawMessage(nil), u.ConfigOptions...)
		if m, err := profile.ReadSessionModes(marshalConfigOptions(u.ConfigOptions)); err == nil && len(m.Offered) > 0 {
			m.SetMode = m.SetMode || gs.modes.SetMode
			gs.modes.Offered, gs.modes.ConfigOption, gs.modes.ConfigIDType = m.Offered, m.ConfigOption, m.ConfigIDType
		}
	}
	from := gs.modes.Current
	gs.modes.Current = u.ModeID
	m := gs.modes
	if prof.Asks(u.ModeID, modeName(m, u.ModeID)) {
		g.mu.Unlock()
		return
	}
	if gs.switching {
		// permhost's switch under way is not confirmed by its answer now.
		gs.again = true
		g.mu.Unlock()
		return
	}
	target, ok := prof.AskingModeOf(m.Offered)
	if !ok {
		target = prof.AskingMode
	}
	how, ok := howToSwitch(prof, m)
	if target == "" || !ok {
		g.mu.Unlock()
		if g.dry != nil {
			g.dry(ReplayNote{Session: sid, What: u.Kind + " to " + u.ModeID + ": the agent switched by itself; permhost knows no way back"})
			return
		}
		g.e.log.Error("the agent switched into a mode that decides by itself and permhost cannot switch it back: the session is refused from now on", "session", sid, "mode", u.ModeID)
		refuse := g.deliverModeRefusal(g.modeEntry(u.Session, LogMode{Action: ModeReverse, Trigger: u.Kind, From: from, To: u.ModeID}, "failed",
			"the agent switched to "+u.ModeID+" by itself and permhost knows no way back"),
			refusal(fmt.Sprintf("the agent switched the session to mode %s, which decides by itself (%s), and permhost knows no way back; [session] modes = \"govern\" refuses the session from now on (set modes = \"pass\" to use it anyway)",
				u.ModeID, decides(prof, u.ModeID))))
		if c != nil {
			c.Hold(sid)(refuse)
		}
		return
	}
	if g.dry != nil {
		g.mu.Unlock()
		g.dry(ReplayNote{Session: sid, What: fmt.Sprintf("%s to %s (%s): the agent switched by itself; permhost would switch back to %s (%s)", u.Kind, u.ModeID, decides(prof, u.ModeID), target, switchMethod(how))})
		return
	}
	gs.switching = true
	g.mu.Unlock()
	release := c.Hold(sid)
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		err := g.confirmSwitch(context.Background(), c, sid, gs, target, how)
		g.mu.Lock()
		var options json.RawMessage
		if err == nil {
			options = gs.options
		}
		setMode := gs.modes.SetMode
		g.mu.Unlock()
		m := LogMode{Action: ModeReverse, Trigger: u.Kind, From: u.ModeID, To: target, By: switchMethod(how)}
		if err != nil {
			m.Error = err.Error()
			g.e.log.Error("the agent switched into a mode that decides by itself and refused permhost's switch back: the session is refused from now on", "session", sid, "mode", u.ModeID, "err", err)
			release(g.deliverModeRefusal(g.modeEntry(u.Session, m, "failed", "the agent switched to "+u.ModeID+" by itself and refused the switch back"),
				refusal(fmt.Sprintf("the agent switched the session to mode %s, which decides by itself (%s), and refused the switch back to %s (%v); [session] modes = \"govern\" refuses the session from now on (set modes = \"pass\" to use it anyway)",
					u.ModeID, decides(prof, u.ModeID), target, err))))
			return
		}
		defer release(nil)
		g.e.log.Warn("the agent switched into a mode that decides by itself; permhost switched it back", "session", sid, "mode", u.ModeID, "to", target)
		// The editor saw the agent's update: it is told where the session
		// is now (deliverReverse).
		g.deliverReverse(g.modeEntry(u.Session, m, "reversed", "the agent switched to "+u.ModeID+" by itself: "+decides(prof, u.ModeID)), c, sid, target, setMode, options)
	}()
}

// howToSwitch is the first of the profile's ways to switch that the
// session offers; a session permhost never saw start is switched as the
// profile prefers.
func howToSwitch(prof *profile.Profile, m profile.SessionModes) (profile.Switch, bool) {
	for _, s := range prof.ModeSwitch {
		if (s == profile.SwitchConfigOption && m.ConfigOption != "") || (s == profile.SwitchSetMode && m.SetMode) {
			return s, true
		}
	}
	if len(m.Offered) == 0 && slices.Contains(prof.ModeSwitch, profile.SwitchSetMode) {
		return profile.SwitchSetMode, true
	}
	return "", false
}

func marshalConfigOptions(options json.RawMessage) json.RawMessage {
	return joinObject([]member{{"configOptions", options}})
}

// member1 returns the value of a member of a strict JSON object.
func member1(obj []byte, key string) (json.RawMessage, bool) {
	f, err := jsontext.Lookup(obj, key)
	if err != nil || f[key] == nil {
		return nil, false
	}
	return json.RawMessage(f[key]), true
}

// edit replaces n bytes at at.
type edit struct {
	at, n int
	with  []byte
}

// offsetIn is where sub, a subslice of buf, starts in it.
func offsetIn(buf, sub []byte) int { return cap(buf) - cap(sub) }

// apply returns buf with the edits made, everything else byte for byte.
func apply(buf []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].at < edits[j].at })
	out := make([]byte, 0, len(buf)+16)
	last := 0
	for _, e := range edits {
		out = append(out, buf[last:e.at]...)
		out = append(out, e.with...)
		last = e.at + e.n
	}
	return append(out, buf[last:]...)
}

// withCurrentMode returns a session/new|load|resume result with mode
// current: modes.currentModeId and the currentValue of the config option
// of category "mode" set to it, every other byte the agent's. It reads
// strictly.
func withCurrentMode(result []byte, mode string) ([]byte, error) {
	ms, err := jsontext.Object(result)
	if err != nil {
		return nil, err
	}
	q := jsontext.Quote(mode)
	var edits []edit
	for _, m := range ms {
		switch m.Key {
		case "modes":
			mm, err := jsontext.Object(m.Value)
			if err != nil {
				continue
			}
			for _, x := range mm {
				if x.Key == "currentModeId" {
					edits = append(edits, edit{offsetIn(result, x.Value), len(x.Value), q})
				}
			}
		case "configOptions":
			e, err := modeValueEdits(result, m.Value, q)
			if err != nil {
				return nil, err
			}
			edits = append(edits, e...)
		}
	}
	return apply(result, edits), nil
}

// withModeValue returns a configOptions list with the mode option's
// currentValue set to mode.
func withModeValue(options []byte, mode string) ([]byte, error) {
	e, err := modeValueEdits(options, options, jsontext.Quote(mode))
	if err != nil {
		return nil, err
	}
	return apply(options, e), nil
}

// modeValueEdits are the edits that set the currentValue of the config
// option of category "mode" in list (a subslice of buf) to q.
func modeValueEdits(buf, list, q []byte) ([]edit, error) {
	elems, err := jsontext.Elements(list)
	if err != nil {
		return nil, err
	}
	var edits []edit
	for _, e := range elems {
		o, err := jsontext.Object(e)
		if err != nil {
			continue
		}
		cat, cur := "", []byte(nil)
		for _, x := range o {
			switch x.Key {
			case "category":
				cat, _ = jsontext.String(x.Value)
			case "currentValue":
				cur = x.Value
			}
		}
		if cat == "mode" && cur != nil {
			edits = append(edits, edit{offsetIn(buf, cur), len(cur), q})
			break
		}
	}
	return edits, nil
}

// joinWords joins ids for a sentence.
func joinWords(ids []string) string { return strings.Join(ids, ", ") }
