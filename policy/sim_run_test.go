package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

// This file runs a script: the proxy with a real Engine (its handler and
// governor) between the scripted agent and editor over pipes. The peers
// answer what the script cannot know in advance on their own (initialize,
// session/new, prompts, mode switches, fs/* and terminal/create); the
// driver runs the steps in order and waits only on what the run shows
// (a request reaching the editor, an answer reaching the agent), never on
// the clock.

// simStuck is how long a run may go without progress (no message
// received by a peer, no plugin called) while the driver waits: past it
// the run is reported stuck (a liveness failure). It bounds silence, not
// the run, so a loaded machine slows runs without making them stuck.
const simStuck = 2 * time.Second

// simMsg is one message's fields.
type simMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (m simMsg) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

func parseMsg(b []byte) (m simMsg) { _ = json.Unmarshal(b, &m); return m }

func idKeyOf(id []byte) string { return string(bytes.TrimSpace(id)) }

// simAgentReq is a request the agent sent.
type simAgentReq struct {
	n       int // the permission request's number; 0 for other methods
	sent    []byte
	id      string
	method  string
	tc      string
	options []string
	session string
	reuse   string
	// live says the reuse could matter: when the request was sent, an
	// earlier request of the agent's under its id was unanswered, or the
	// editor had a request under it it had not answered (permhost's own,
	// one forwarded, a permission request shown or withdrawn). Any other
	// reuse is a fresh id to permhost, which keeps no other record of it.
	live bool
	// reusedBy is the kind of a live reuse of this request's id sent
	// while it was unanswered.
	reusedBy string
	// ans is the answer the agent got to this request (nil until then):
	// answers under an id go to its requests in the order they were sent,
	// except permhost's refusal of an id in use, which answers the newest
	// request at once, ahead of the older one it collided with.
	ans []byte
}

// inUseMessage starts permhost's refusal of an agent request under an id
// the editor has outstanding (acp's agentIDFree).
const inUseMessage = "permhost: this request id is in use"

// simShown is a permission request as the editor got it.
type simShown struct {
	id      json.RawMessage
	tc      string
	session string
	shown   []string
}

// simAnswer is an answer the editor sent to a permission request.
type simAnswer struct {
	how     string
	session string
	// cancels is how many session/cancel of its session the editor had
	// sent before this answer.
	cancels  int
	outcome  string // selected, cancelled, error, or "" for an invalid one
	optionID string
}

// simRun is one run's state. mu guards everything the peers record.
type simRun struct {
	s    *simScript
	mu   sync.Mutex
	cond *sync.Cond
	ctx  context.Context // ends when the run is stuck
	// progress counts changes; the watchdog ends ctx when it stays put.
	progress uint64

	agentW, editorW *simWire
	agentInR        *io.PipeReader // what the agent reads
	clientOutR      *io.PipeReader // what the editor reads
	agentQ, editorQ chan []byte    // messages for the responders

	// The agent's side.
	aReqs    []*simAgentReq
	aAnswers map[string][][]byte // answers by id, in arrival order
	aGot     [][]byte            // every message received, in order
	mode     map[string]string
	epoch    map[string]int
	refused  map[string]bool // the agent refused permhost's switch in this session
	// modeBy says who put the session in its mode: start, agent (its own
	// update), editor or permhost (a set_mode the agent accepted).
	modeBy   map[string]string
	lastOwn  string
	sessionN int

	// The editor's side.
	eGot      [][]byte
	eOut      map[string]string      // outstanding requests to the editor, by id: method
	eShown    map[string]*simShown   // permission requests shown, by tool call id
	eAnswers  map[string][]simAnswer // by tool call id
	eReqs     map[string]int         // the editor's requests: responses received
	eReqOrder []string
	cancels   map[string]int // session/cancel sent, per session
	seen      map[string]int // the highest mode epoch the editor saw, per session

	// The plugin's holds, by tool call id.
	holds      map[string]chan struct{}
	holding    map[string]bool
	released   map[string]bool
	releaseAll bool

	agentDead, editorDead bool
	stuck                 []string
	violations            []simViolation
	log                   *logBuffer
}

func newSimRun(s *simScript) *simRun {
	r := &simRun{s: s,
		aAnswers: map[string][][]byte{}, mode: map[string]string{}, epoch: map[string]int{}, refused: map[string]bool{}, modeBy: map[string]string{},
		eOut: map[string]string{}, eShown: map[string]*simShown{}, eAnswers: map[string][]simAnswer{}, eReqs: map[string]int{}, seen: map[string]int{}, cancels: map[string]int{},
		holds: map[string]chan struct{}{}, holding: map[string]bool{}, released: map[string]bool{},
		agentQ: make(chan []byte, 1<<14), editorQ: make(chan []byte, 1<<14), log: &logBuffer{}}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// changed wakes the waits; mu is held.
func (r *simRun) changed() { r.progress++; r.cond.Broadcast() }

// watchdog ends the run's context once progress stays put for simStuck,
// waking the waits; it returns when done is closed.
func (r *simRun) watchdog(cancel context.CancelFunc, done <-chan struct{}) {
	tick := time.NewTicker(simStuck / 4)
	defer tick.Stop()
	last, still := uint64(0), 0
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		r.mu.Lock()
		p := r.progress
		r.mu.Unlock()
		if p != last {
			last, still = p, 0
			continue
		}
		if still++; still >= 4 {
			cancel()
			r.mu.Lock()
			r.cond.Broadcast()
			r.mu.Unlock()
			return
		}
	}
}

// waitUntil waits until ok (called with mu held) holds or a peer died; it
// reports false, recording what it waited for, when stuck.
func (r *simRun) waitUntil(what string, ok func() bool) bool {
	// Nothing waits while a peer holds bytes back: what it waits for may
	// need them.
	r.agentW.flush()
	r.editorW.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	for !ok() && !r.agentDead && !r.editorDead {
		if r.ctx.Err() != nil {
			r.stuck = append(r.stuck, what+" ("+r.missingLocked()+")")
			return false
		}
		r.cond.Wait()
	}
	return true
}

// plugin is the chain's one member: it decides what the tool call's
// rawInput.sim says, after the script releases it when it holds.
func (r *simRun) plugin() host.Member {
	p := decides(func(ctx context.Context, req abi.Request) host.Result {
		var in struct {
			Sim string `json:"sim"`
		}
		_ = json.Unmarshal(req.ToolCall.RawInput, &in)
		tc := req.ToolCall.ID
		r.mu.Lock()
		r.progress++
		ch, hold := r.holds[tc]
		if hold && !r.released[tc] && !r.releaseAll {
			r.holding[tc] = true
			r.changed()
			r.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return host.Result{Err: &host.Error{Kind: host.KindCancelled, Plugin: "sim", Err: ctx.Err()}}
			}
		} else {
			r.mu.Unlock()
		}
		d := abi.Decision{Outcome: abi.OutcomeAbstain}
		switch in.Sim {
		case "allow":
			d = abi.Decision{Outcome: abi.OutcomeAllow, Reason: "sim allows"}
		case "reject":
			d = abi.Decision{Outcome: abi.OutcomeReject, Reason: "sim rejects"}
		case "ask":
			d = abi.Decision{Outcome: abi.OutcomeAsk, Reason: "sim asks"}
		}
		return host.Result{Decision: d}
	})
	return host.Member{Name: "sim", Layer: host.LayerUser, Policy: host.FailClosed, Plugin: p, Version: "1.0.0", SHA256: strings.Repeat("ab", 32)}
}

// release lets the plugin decide tool call tc.
func (r *simRun) release(tc string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released[tc] = true
	if ch, ok := r.holds[tc]; ok {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

// run runs the script and returns the decision log's lines.
func (r *simRun) run(grantsFile string) {
	cfg := &config.Config{Strategy: r.s.Config.Strategy, OnUndecided: config.UndecidedReject,
		Session: config.Session{Modes: r.s.Config.Modes, FS: r.s.Config.FS, AllowAlways: r.s.Config.AllowAlways}}
	dlog := policy.NewDecisionLog(r.log, nil)
	engine, err := policy.New(context.Background(), policy.Options{Config: cfg, Via: "proxy", Members: []host.Member{r.plugin()},
		Log: dlog, Home: "/home/dev", Grants: grantsFile, ReloadEvery: -1})
	if err != nil {
		r.violate("setup", 0, "policy.New: %v", err)
		return
	}
	proxy, err := acp.NewProxy(acp.Options{Handler: engine.Handler(), Governor: engine.Governor()})
	if err != nil {
		r.violate("setup", 0, "acp.NewProxy: %v", err)
		return
	}
	clientInR, clientInW := io.Pipe()
	clientOutR, clientOutW := io.Pipe()
	agentInR, agentInW := io.Pipe()
	agentOutR, agentOutW := io.Pipe()
	r.agentInR, r.clientOutR = agentInR, clientOutR
	r.agentW = newSimWire(agentOutW, r.s.Config.Wire)
	r.editorW = newSimWire(clientInW, r.s.Config.Wire^1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.ctx = ctx
	watched := make(chan struct{})
	defer close(watched)
	go r.watchdog(cancel, watched)

	var readers, responders sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); readLines(agentInR, r.agentReads) }()
	go func() { defer readers.Done(); readLines(clientOutR, r.editorReads) }()
	responders.Add(2)
	go func() { defer responders.Done(); r.agentResponds() }()
	go func() { defer responders.Done(); r.editorResponds() }()
	done := make(chan error, 1)
	go func() { done <- proxy.Run(context.Background(), clientInR, clientOutW, agentInW, agentOutR) }()

	for i := range r.s.Steps {
		r.step(&r.s.Steps[i])
	}
	r.finish()
	select {
	case <-done:
	case <-ctx.Done():
		r.mu.Lock()
		r.stuck = append(r.stuck, "Proxy.Run to return after the agent's output ended")
		r.mu.Unlock()
		agentOutW.CloseWithError(io.ErrClosedPipe)
		clientInW.Close()
		<-done
	}
	clientOutW.Close()
	agentInW.Close()
	readers.Wait()
	close(r.agentQ)
	close(r.editorQ)
	responders.Wait()
	engine.Close(context.Background())
	dlog.Close()
}

// finish answers what the script left open, then ends both peers.
func (r *simRun) finish() {
	r.agentW.flush()
	r.editorW.flush()
	r.mu.Lock()
	r.releaseAll = true
	for tc := range r.holds {
		r.mu.Unlock()
		r.release(tc)
		r.mu.Lock()
	}
	r.mu.Unlock()
	for {
		var open []*simShown
		ok := r.waitUntil("every request answered", func() bool {
			open = r.unansweredShownLocked()
			return len(open) > 0 || r.allAnsweredLocked()
		})
		r.mu.Lock()
		dead := r.agentDead || r.editorDead
		r.mu.Unlock()
		if !ok || len(open) == 0 || dead {
			break
		}
		for _, sh := range open {
			r.editorAnswer(sh, &simStep{How: howValid})
		}
	}
	// What the editor sent last (an answer the agent no longer waits for,
	// in a batch with a notification) may still be on its way through the
	// proxy: ending the agent now would cut it off. A last notification,
	// forwarded in order, says it arrived.
	const end = `{"jsonrpc":"2.0","method":"_sim/end","params":{}}`
	r.mu.Lock()
	live := !r.agentDead && !r.editorDead && len(r.stuck) == 0
	r.mu.Unlock()
	if live {
		r.editorW.send(func() []byte { return []byte(end) }, false)
		r.waitUntil("the editor's last message at the agent", func() bool {
			return slices.ContainsFunc(r.aGot, func(e []byte) bool { return string(e) == end })
		})
	}
	r.agentW.close()
	r.editorW.close()
}

// unansweredShownLocked are the permission requests shown to the editor
// that it has not answered and the agent has no answer to. (Not what is
// outstanding by id: with an id the agent reused, the editor may hold two
// requests under it.)
func (r *simRun) unansweredShownLocked() []*simShown {
	var out []*simShown
	for _, sh := range r.eShown {
		if len(r.eAnswers[sh.tc]) > 0 {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(sh.tc, "tc-%d", &n); err == nil && r.answeredLocked(n) {
			continue
		}
		if n == 0 && r.eOut[idKeyOf(sh.id)] != acp.MethodRequestPermission {
			continue // permhost's own (an approval), withdrawn or answered
		}
		out = append(out, sh)
	}
	return out
}

// allAnsweredLocked: every request of either peer has its answer.
func (r *simRun) allAnsweredLocked() bool {
	count := map[string]int{}
	for _, q := range r.aReqs {
		count[q.id]++
	}
	for id, n := range count {
		if len(r.aAnswers[id]) < n {
			return false
		}
	}
	for _, n := range r.eReqs {
		if n == 0 {
			return false
		}
	}
	return true
}

// missingLocked lists the requests without their answers.
func (r *simRun) missingLocked() string {
	count := map[string]int{}
	for _, q := range r.aReqs {
		count[q.id]++
	}
	var out []string
	for _, q := range r.aReqs {
		if n := len(r.aAnswers[q.id]); n < count[q.id] {
			out = append(out, fmt.Sprintf("agent %s %s %s: %d of %d answers", q.method, q.id, q.tc, n, count[q.id]))
			count[q.id] = -1
		}
	}
	for _, id := range r.eReqOrder {
		if r.eReqs[id] == 0 {
			out = append(out, "editor request "+id+" unanswered")
		}
	}
	return strings.Join(out, "; ")
}

// answeredLocked reports whether the agent has the answer to permission
// request n.
func (r *simRun) answeredLocked(n int) bool {
	for _, q := range r.aReqs {
		if q.n == n {
			return q.ans != nil
		}
	}
	return false
}

func (r *simRun) step(st *simStep) {
	switch st.Op {
	case opAgent:
		for _, n := range st.After {
			// The answer waited for may need the plugin the script holds
			// (the race strategy waits for the plugins' verdict on a
			// durable answer): the agent has it only once released.
			r.release(fmt.Sprintf("tc-%d", n))
			r.agentW.flush()
			r.waitUntil(fmt.Sprintf("the agent's answer to request %d", n), func() bool { return r.answeredLocked(n) })
		}
		if st.Hold && st.Req > 0 {
			r.mu.Lock()
			r.holds[fmt.Sprintf("tc-%d", st.Req)] = make(chan struct{})
			r.mu.Unlock()
		}
		r.agentW.send(func() []byte { return r.agentSends(st) }, true)
	case opEditor, opNewSession:
		r.editorW.send(func() []byte { return r.editorSends(joinBatch(st.Msgs)) }, true)
		if st.Op == opNewSession {
			id := idKeyOf(parseMsg([]byte(st.Msgs[0])).ID)
			r.editorW.flush()
			r.waitUntil("the answer to session/new "+id, func() bool { return r.eReqs[id] > 0 })
		}
	case opPrompt:
		r.editorW.send(func() []byte {
			r.mu.Lock()
			seen, ok := r.seen[st.Session]
			r.mu.Unlock()
			if !ok {
				seen = -1
			}
			return r.editorSends(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"go"}],"_meta":{"simSeen":%d}}}`, st.ID, st.Session, seen))
		}, true)
	case opSetMode:
		r.editorW.send(func() []byte {
			return r.editorSends(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/set_mode","params":{"sessionId":%q,"modeId":%q}}`, st.ID, st.Session, st.Mode))
		}, true)
	case opModeUpdate:
		r.agentW.send(func() []byte {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.epoch[st.Session]++
			r.mode[st.Session], r.modeBy[st.Session] = st.Mode, "agent"
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"current_mode_update","currentModeId":%q},"_meta":{"simMode":{"session":%q,"epoch":%d}}}}`,
				st.Session, st.Mode, st.Session, r.epoch[st.Session])
		}, true)
	case opRelease:
		r.release(fmt.Sprintf("tc-%d", st.Req))
	case opAnswer:
		if st.How == howNone {
			return
		}
		r.agentW.flush()
		r.editorW.flush()
		tc := fmt.Sprintf("tc-%d", st.Req)
		var sh *simShown
		for {
			held := false
			r.waitUntil("permission request "+tc+" at the editor or answered", func() bool {
				sh = r.eShown[tc]
				held = r.holding[tc] && !r.released[tc]
				return sh != nil || r.answeredLocked(st.Req) || held
			})
			if !held || sh != nil {
				break
			}
			r.release(tc) // the plugin holds it: it decides first
		}
		if sh != nil {
			r.editorAnswer(sh, st)
			if r.s.Config.Strategy == config.StrategyRace {
				// The race strategy waits for the plugins' verdict on a
				// durable answer, and the editor's later lines wait behind
				// that answer for as long as the run's stuck bound: a
				// plugin still held decides now.
				r.release(tc)
			}
		}
	case opDie:
		if st.Who == "agent" {
			r.agentW.die([]byte(st.Msgs[0]), st.Partial)
			r.agentInR.CloseWithError(io.ErrClosedPipe)
		} else {
			r.editorW.die([]byte(st.Msgs[0]), st.Partial)
			r.clientOutR.CloseWithError(io.ErrClosedPipe)
		}
		r.mu.Lock()
		if st.Who == "agent" {
			r.agentDead = true
		} else {
			r.editorDead = true
		}
		r.changed()
		r.mu.Unlock()
	}
}

func joinBatch(msgs []string) string {
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// agentSends builds an agent step's line and records its requests; the
// wire's lock is held.
func (r *simRun) agentSends(st *simStep) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	own := r.lastOwn
	if own == "" {
		own = `"permhost-000000000000-1"`
	}
	line := []byte(strings.ReplaceAll(joinBatch(st.Msgs), `"$own"`, own))
	for _, e := range elements(line) {
		m := parseMsg(e)
		if !m.hasID() || m.Method == "" {
			continue
		}
		q := &simAgentReq{id: idKeyOf(m.ID), method: m.Method, reuse: st.Reuse, sent: e}
		r.markLiveLocked(q)
		var p struct {
			SessionID string `json:"sessionId"`
			ToolCall  struct {
				ToolCallID string `json:"toolCallId"`
			} `json:"toolCall"`
			Options []struct {
				OptionID string `json:"optionId"`
			} `json:"options"`
		}
		_ = json.Unmarshal(m.Params, &p)
		q.session, q.tc = p.SessionID, p.ToolCall.ToolCallID
		for _, o := range p.Options {
			q.options = append(q.options, o.OptionID)
		}
		if m.Method == acp.MethodRequestPermission {
			q.n = st.Req
		}
		r.aReqs = append(r.aReqs, q)
	}
	return line
}

// markLiveLocked sets q.live when q's id is in use (see simAgentReq.live),
// and reusedBy of the unanswered requests under it; mu is held. A fresh id
// may be in use too: the agent's ids count from 1 like the editor's, so an
// earlier request that took the editor's id n (reuse "editor") collides
// with the agent's own n later; the kind is then that earlier reuse's.
func (r *simRun) markLiveLocked(q *simAgentReq) {
	kind := q.reuse
	var open []*simAgentReq
	for _, o := range r.aReqs {
		if o.id != q.id {
			continue
		}
		if kind == "" {
			kind = o.reuse
		}
		if o.ans == nil {
			open = append(open, o)
		}
	}
	live := len(open) > 0
	if _, ok := r.eOut[q.id]; ok {
		live = true
	}
	for tc, sh := range r.eShown {
		if idKeyOf(sh.id) == q.id && len(r.eAnswers[tc]) == 0 {
			live = true
		}
	}
	if !live || kind == "" {
		return
	}
	if q.reuse == "" {
		q.reuse = kind
	}
	q.live = true
	for _, o := range open {
		o.reusedBy = kind
	}
}

// assignLocked gives answer e under id to the request it answers (see
// simAgentReq.ans); mu is held.
func (r *simRun) assignLocked(id string, e []byte) {
	var open []*simAgentReq
	for _, q := range r.aReqs {
		if q.id == id && q.ans == nil {
			open = append(open, q)
		}
	}
	if len(open) == 0 {
		return // more answers than requests: (d) counts them
	}
	q := open[0]
	if m := parseMsg(e); bytes.Contains(m.Error, []byte(inUseMessage)) {
		q = open[len(open)-1]
	}
	q.ans = e
}

// editorSends records the editor's requests in line; the wire's lock is
// held.
func (r *simRun) editorSends(line string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range elements([]byte(line)) {
		if m := parseMsg(e); m.hasID() && m.Method != "" {
			id := idKeyOf(m.ID)
			if _, ok := r.eReqs[id]; !ok {
				r.eReqOrder = append(r.eReqOrder, id)
			}
			r.eReqs[id] = 0
		}
	}
	return []byte(line)
}

// agentReads records what the agent receives and hands the requests to
// its responder.
func (r *simRun) agentReads(line []byte) {
	for _, e := range elements(line) {
		m := parseMsg(e)
		r.mu.Lock()
		r.aGot = append(r.aGot, e)
		if m.Method == "" && m.hasID() {
			r.aAnswers[idKeyOf(m.ID)] = append(r.aAnswers[idKeyOf(m.ID)], e)
			r.assignLocked(idKeyOf(m.ID), e)
		}
		if m.Method != "" && m.hasID() && bytes.HasPrefix(m.ID, []byte(`"permhost-`)) {
			r.lastOwn = idKeyOf(m.ID)
		}
		if m.Method == acp.MethodSessionPrompt {
			r.checkPromptLocked(m)
		}
		r.changed()
		r.mu.Unlock()
		if m.Method != "" && m.hasID() {
			r.agentQ <- e
		}
	}
}

// agentResponds answers the requests the agent receives, in order.
func (r *simRun) agentResponds() {
	for e := range r.agentQ {
		m := parseMsg(e)
		var p struct {
			SessionID string `json:"sessionId"`
			ModeID    string `json:"modeId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		id := idKeyOf(m.ID)
		r.agentW.send(func() []byte {
			r.mu.Lock()
			defer r.mu.Unlock()
			result := `{}`
			switch m.Method {
			case "initialize":
				result = `{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"agentInfo":` + simAgentInfo + `}`
			case acp.MethodSessionNew:
				if r.sessionN >= len(r.s.Sessions) {
					return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"sim: no more sessions"}}`, id)
				}
				ss := r.s.Sessions[r.sessionN]
				r.sessionN++
				r.mode[ss.ID], r.epoch[ss.ID], r.modeBy[ss.ID] = ss.Mode, 0, "start"
				var avail []string
				for _, md := range simModes {
					avail = append(avail, fmt.Sprintf(`{"id":%q,"name":%q}`, md, md))
				}
				result = fmt.Sprintf(`{"sessionId":%q,"modes":{"currentModeId":%q,"availableModes":[%s]},"_meta":{"simMode":{"session":%q,"epoch":0}}}`,
					ss.ID, ss.Mode, strings.Join(avail, ","), ss.ID)
			case acp.MethodSessionSetMode:
				if r.refuses(p.SessionID) {
					if strings.HasPrefix(id, `"permhost-`) {
						r.refused[p.SessionID] = true
					}
					return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"sim: the agent refuses"}}`, id)
				}
				r.epoch[p.SessionID]++
				r.mode[p.SessionID], r.modeBy[p.SessionID] = p.ModeID, "editor"
				if strings.HasPrefix(id, `"permhost-`) {
					r.modeBy[p.SessionID] = "permhost"
				}
				result = fmt.Sprintf(`{"_meta":{"simMode":{"session":%q,"epoch":%d}}}`, p.SessionID, r.epoch[p.SessionID])
			case acp.MethodSessionPrompt:
				result = `{"stopReason":"end_turn"}`
			}
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
		}, false)
	}
}

func (r *simRun) refuses(sid string) bool {
	for _, ss := range r.s.Sessions {
		if ss.ID == sid {
			return ss.RefuseSwitch
		}
	}
	return false
}

// checkPromptLocked is invariant (b): a governed session's prompt never
// reaches the agent while the mode it last reported, and the editor saw
// before prompting, decides by itself.
func (r *simRun) checkPromptLocked(m simMsg) {
	var p struct {
		SessionID string `json:"sessionId"`
		Meta      struct {
			SimSeen int `json:"simSeen"`
		} `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil || r.s.Config.Modes != config.ModesGovern || r.refused[p.SessionID] || r.refuses(p.SessionID) {
		return
	}
	mode, ok := r.mode[p.SessionID]
	if ok && simDeciding[mode] && p.Meta.SimSeen >= r.epoch[p.SessionID] {
		r.violations = append(r.violations, simViolation{Invariant: "b", Behaviour: "mode-by-" + r.modeBy[p.SessionID],
			What: fmt.Sprintf("session/prompt %s of session %s reached the agent in mode %s (set by %s; epoch %d, which the editor had seen)", m.ID, p.SessionID, mode, r.modeBy[p.SessionID], r.epoch[p.SessionID])})
	}
}

// editorReads records what the editor receives, checks (e), and hands
// the requests other than permission requests to its responder.
func (r *simRun) editorReads(line []byte) {
	for _, e := range elements(line) {
		m := parseMsg(e)
		r.mu.Lock()
		r.eGot = append(r.eGot, e)
		r.noteModes(m)
		switch {
		case m.Method != "" && m.hasID():
			id := idKeyOf(m.ID)
			if old, ok := r.eOut[id]; ok {
				r.violations = append(r.violations, simViolation{Invariant: "e", id: id,
					What: fmt.Sprintf("the editor got %s with id %s while %s with that id was outstanding", m.Method, id, old)})
			}
			r.eOut[id] = m.Method
			if m.Method == acp.MethodRequestPermission {
				var p struct {
					SessionID string `json:"sessionId"`
					ToolCall  struct {
						ToolCallID string `json:"toolCallId"`
					} `json:"toolCall"`
					Options []struct {
						OptionID string `json:"optionId"`
					} `json:"options"`
				}
				_ = json.Unmarshal(m.Params, &p)
				sh := &simShown{id: bytes.Clone(m.ID), tc: p.ToolCall.ToolCallID, session: p.SessionID}
				for _, o := range p.Options {
					sh.shown = append(sh.shown, o.OptionID)
				}
				r.eShown[sh.tc] = sh
			}
		case m.Method == acp.MethodCancelRequest:
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			delete(r.eOut, idKeyOf(p.RequestID))
		case m.Method == "" && m.hasID():
			if n, ok := r.eReqs[idKeyOf(m.ID)]; ok {
				r.eReqs[idKeyOf(m.ID)] = n + 1
			}
		}
		r.changed()
		r.mu.Unlock()
		if m.Method != "" && m.hasID() && m.Method != acp.MethodRequestPermission {
			r.editorQ <- e
		}
	}
}

// noteModes records the mode epochs a message reports to the editor; mu
// is held.
func (r *simRun) noteModes(m simMsg) {
	for _, raw := range []json.RawMessage{m.Params, m.Result} {
		var v struct {
			Meta struct {
				SimMode *struct {
					Session string `json:"session"`
					Epoch   int    `json:"epoch"`
				} `json:"simMode"`
			} `json:"_meta"`
		}
		if json.Unmarshal(raw, &v) == nil && v.Meta.SimMode != nil {
			sm := v.Meta.SimMode
			if old, ok := r.seen[sm.Session]; !ok || sm.Epoch > old {
				r.seen[sm.Session] = sm.Epoch
			}
		}
	}
}

// editorResponds answers the editor's requests other than permission
// requests.
func (r *simRun) editorResponds() {
	for e := range r.editorQ {
		m := parseMsg(e)
		id := idKeyOf(m.ID)
		result := `{}`
		switch m.Method {
		case "fs/read_text_file":
			result = `{"content":"sim"}`
		case "fs/write_text_file":
			result = `null`
		case acp.MethodTerminalCreate:
			result = `{"terminalId":"t-sim"}`
		}
		r.editorW.send(func() []byte {
			r.mu.Lock()
			defer r.mu.Unlock()
			delete(r.eOut, id)
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
		}, false)
	}
}

// editorAnswer sends the editor's answer to a permission request shown to
// it, as st.How says.
func (r *simRun) editorAnswer(sh *simShown, st *simStep) {
	id := string(sh.id)
	opt := "none"
	if len(sh.shown) > 0 {
		opt = sh.shown[st.Pick%len(sh.shown)]
	}
	selected := func(o string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":%q}}}`, id, o)
	}
	send := func(line string, a simAnswer) {
		r.editorW.send(func() []byte {
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.eAnswers[sh.tc]) == 0 {
				delete(r.eOut, id)
			}
			a.session, a.cancels = sh.session, r.cancels[sh.session]
			r.eAnswers[sh.tc] = append(r.eAnswers[sh.tc], a)
			return []byte(line)
		}, true)
	}
	valid := simAnswer{how: st.How, outcome: "selected", optionID: opt}
	switch st.How {
	case howValid:
		send(selected(opt), valid)
	case howInvalid:
		send(selected("not-offered"), simAnswer{how: st.How})
	case howExtra:
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":%q}},"extra":true}`, id, opt), valid)
	case howDup:
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":%q,"optionId":"not-offered"}}}`, id, opt), simAnswer{how: st.How})
	case howCancelled:
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"cancelled"}}}`, id), simAnswer{how: st.How, outcome: "cancelled"})
	case howError:
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"sim: the editor failed"}}`, id), simAnswer{how: st.How, outcome: "error"})
	case howAgain:
		send(selected(opt), valid)
		other := opt
		if len(sh.shown) > 0 {
			other = sh.shown[(st.Pick+1)%len(sh.shown)]
		}
		send(selected(other), simAnswer{how: "late", outcome: "selected", optionID: other})
	case howBatch:
		send(fmt.Sprintf(`[{"jsonrpc":"2.0","method":"_sim/note","params":{"tc":%q}},%s]`, sh.tc, selected(opt)), valid)
	case howCancel:
		r.editorW.send(func() []byte {
			r.mu.Lock()
			r.cancels[sh.session]++
			r.mu.Unlock()
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sh.session)
		}, true)
		send(selected(opt), valid)
	}
}

func (r *simRun) violate(inv string, n int, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, simViolation{Invariant: inv, Req: n, What: fmt.Sprintf(format, args...)})
}
