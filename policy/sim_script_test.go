package policy_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// This file is the simulation's script: what one seed generates (sessions,
// the agent's and the editor's messages, the editor's answers, the
// plugins' verdicts, peer deaths) as data that prints as JSON and replays.

// simScript is one generated run. Everything the peers send is in it
// except what depends on the run: an answer's id is the one the editor was
// shown, a prompt carries the modes the editor had seen, "$own" becomes
// the last id of permhost's own the agent received.
type simScript struct {
	Seed     uint64       `json:"seed"`
	Config   simConfig    `json:"config"`
	Sessions []simSession `json:"sessions"`
	Steps    []simStep    `json:"steps"`
}

// simConfig is the engine's configuration and the transport's seed.
type simConfig struct {
	Strategy    string `json:"strategy"`    // sequential or race
	Modes       string `json:"modes"`       // govern or pass
	FS          string `json:"fs"`          // govern or pass
	AllowAlways string `json:"allowAlways"` // permhost or agent
	// Wire seeds the byte boundaries of the peers' writes.
	Wire uint64 `json:"wire"`
}

// simSession is the k-th session the agent creates.
type simSession struct {
	ID   string `json:"id"`
	Mode string `json:"mode"` // the mode session/new reports
	// RefuseSwitch: the agent refuses every switch of mode in it.
	RefuseSwitch bool `json:"refuseSwitch,omitempty"`
}

// Step ops.
const (
	opAgent      = "agent"      // the agent sends Msgs (a batch when more than one)
	opEditor     = "editor"     // the editor sends Msgs
	opNewSession = "newSession" // the editor sends Msgs[0], a session/new, and waits for its answer
	opPrompt     = "prompt"     // the editor prompts Session (request id ID)
	opSetMode    = "setMode"    // the editor asks to switch Session to Mode (request id ID)
	opModeUpdate = "modeUpdate" // the agent reports that Session is now in Mode
	opAnswer     = "answer"     // the editor answers permission request Req as How says
	opRelease    = "release"    // the plugin holding request Req decides
	opDie        = "die"        // Who (agent or editor) dies after Partial bytes of Msgs[0]
)

// Answer kinds (simStep.How of opAnswer).
const (
	howValid     = "valid"     // selects shown option Pick
	howInvalid   = "invalid"   // selects an option that was not shown
	howExtra     = "extra"     // valid, with an extra top-level key
	howDup       = "dup"       // the outcome has optionId twice
	howCancelled = "cancelled" // the cancelled outcome
	howError     = "error"     // a JSON-RPC error
	howAgain     = "again"     // valid, then a second (late) answer
	howBatch     = "batch"     // valid, in a batch after a notification
	howCancel    = "cancel"    // session/cancel of its session, then valid (late)
	howNone      = "none"      // left for the end of the run
)

// simStep is one step of the script.
type simStep struct {
	Op      string   `json:"op"`
	Msgs    []string `json:"msgs,omitempty"`
	Req     int      `json:"req,omitempty"`
	How     string   `json:"how,omitempty"`
	Pick    int      `json:"pick,omitempty"`
	Session string   `json:"session,omitempty"`
	Mode    string   `json:"mode,omitempty"`
	ID      int      `json:"id,omitempty"`
	Who     string   `json:"who,omitempty"`
	Partial int      `json:"partial,omitempty"`
	// After lists permission requests whose answers the agent must have
	// before this step runs (the agent reuses their ids).
	After []int `json:"after,omitempty"`
	// Hold and Reuse describe an agent step's permission request: the
	// plugin waits for opRelease; its id is reused as Reuse says.
	Hold  bool   `json:"hold,omitempty"`
	Reuse string `json:"reuse,omitempty"`
}

// Id reuse kinds of a permission request (simStep.Reuse).
const (
	reuseAnswered    = "answered"    // the id of a request the agent has its answer to
	reuseOutstanding = "outstanding" // the id of a request not answered yet
	reuseOwn         = "own"         // the last id of permhost's own the agent saw
	reuseEditor      = "editor"      // an id the editor's own requests use
)

// The modes of the simulated agent (claude-agent-acp's).
var (
	simModes     = []string{"default", "plan", "acceptEdits", "bypassPermissions"}
	simDeciding  = map[string]bool{"acceptEdits": true, "bypassPermissions": true, "auto": true, "dontAsk": true}
	simOptionSet = [][][2]string{ // optionId, kind
		{{"allow_always", "allow_always"}, {"allow", "allow_once"}, {"reject", "reject_once"}},
		{{"allow-once", "allow_once"}, {"allow-with-updates", "allow_always"}, {"reject", "reject_once"}},
		{{"acceptEdits", "allow_always"}, {"default", "allow_once"}, {"plan", "reject_once"}},
		{{"exit-plan-default", "allow_once"}, {"exit-plan-bypass", "allow_always"}, {"reject", "reject_once"}},
		{{"yes", "allow_once"}, {"no", "reject_once"}},
	}
	simVerdicts = []string{"allow", "reject", "ask", "abstain", "ask", "abstain"}
	simHows     = []string{howValid, howValid, howValid, howInvalid, howExtra, howDup, howCancelled, howError, howAgain, howBatch, howCancel, howNone}
)

// simAgentInfo is the initialize result's agentInfo: claude-agent-acp, so
// that the claude profile's modes apply.
const simAgentInfo = `{"name":"@zed-industries/claude-agent-acp","version":"0.23.1"}`

// generate makes the script of seed.
func generate(seed uint64) *simScript {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	s := &simScript{Seed: seed, Config: simConfig{
		Strategy:    pick("sequential", "sequential", "race"),
		Modes:       pick("govern", "govern", "pass"),
		FS:          pick("govern", "pass"),
		AllowAlways: pick("permhost", "agent"),
		Wire:        r.Uint64(),
	}}
	g := &simGen{r: r, s: s}
	g.editor(`{"jsonrpc":"2.0","id":` + g.editorID() + `,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}}`)
	nSessions := 1 + r.IntN(3)
	for i := range nSessions {
		ss := simSession{ID: fmt.Sprintf("s%d", i+1), Mode: simModes[r.IntN(len(simModes))], RefuseSwitch: r.IntN(8) == 0}
		s.Sessions = append(s.Sessions, ss)
	}
	steps := 10 + r.IntN(25)
	created := 0
	for range steps {
		if created < nSessions && (created == 0 || r.IntN(6) == 0) {
			s.Steps = append(s.Steps, simStep{Op: opNewSession, Msgs: []string{`{"jsonrpc":"2.0","id":` + g.editorID() + `,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}`}})
			created++
			continue
		}
		sid := s.Sessions[r.IntN(created)].ID
		switch n := r.IntN(100); {
		case n < 35:
			g.permission(sid)
		case n < 45:
			g.agentOther(sid)
		case n < 55:
			id, _ := strconv.Atoi(g.editorID())
			s.Steps = append(s.Steps, simStep{Op: opPrompt, Session: sid, ID: id})
		case n < 62:
			s.Steps = append(s.Steps, simStep{Op: opModeUpdate, Session: sid, Mode: simModes[r.IntN(len(simModes))]})
		case n < 68:
			id, _ := strconv.Atoi(g.editorID())
			s.Steps = append(s.Steps, simStep{Op: opSetMode, Session: sid, Mode: simModes[r.IntN(len(simModes))], ID: id})
		case n < 75:
			g.editor(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"_sim/ext","params":{"n":%d}}`, g.editorID(), g.seq()))
		default:
			g.answerSome()
		}
	}
	for len(g.open) > 0 {
		g.answerSome()
	}
	if r.IntN(10) == 0 {
		who := pick("agent", "editor")
		at := r.IntN(len(s.Steps) + 1)
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","method":"_sim/last","params":{"n":%d}}`, g.seq())
		die := simStep{Op: opDie, Who: who, Msgs: []string{msg}, Partial: r.IntN(len(msg))}
		s.Steps = append(s.Steps[:at], append([]simStep{die}, s.Steps[at:]...)...)
	}
	return s
}

// simGen is the generator's state.
type simGen struct {
	r         *rand.Rand
	s         *simScript
	n         int   // messages numbered so far
	editorIDs int   // the editor's request ids so far
	agentIDs  int   // the agent's fresh ids so far
	reqs      int   // permission requests so far
	open      []int // permission requests without an answer step
	ids       map[int]string
	answered  []int // permission requests with an answer step that answers
}

func (g *simGen) seq() int { g.n++; return g.n }

func (g *simGen) editorID() string { g.editorIDs++; return strconv.Itoa(g.editorIDs) }

func (g *simGen) editor(msgs ...string) {
	g.s.Steps = append(g.s.Steps, simStep{Op: opEditor, Msgs: msgs})
}

// agentID is a fresh id: numbers count from 1 like the editor's, so they
// collide with the editor's ids (legal: each side has its own).
func (g *simGen) agentID() string {
	g.agentIDs++
	if g.r.IntN(4) == 0 {
		return strconv.Quote("a-" + strconv.Itoa(g.agentIDs))
	}
	return strconv.Itoa(g.agentIDs)
}

// permission adds a permission request of the agent, with a tool_call
// update before it sometimes, alone or in a batch.
func (g *simGen) permission(sid string) {
	r := g.r
	if g.ids == nil {
		g.ids = map[int]string{}
	}
	g.reqs++
	n := g.reqs
	step := simStep{Op: opAgent, Req: n, Hold: r.IntN(5) == 0}
	id := g.agentID()
	switch k := r.IntN(100); {
	case k < 8 && len(g.answered) > 0:
		old := g.answered[r.IntN(len(g.answered))]
		id, step.Reuse, step.After = g.ids[old], reuseAnswered, []int{old}
	case k < 12 && len(g.open) > 0:
		id, step.Reuse = g.ids[g.open[r.IntN(len(g.open))]], reuseOutstanding
	case k < 15:
		id, step.Reuse = `"$own"`, reuseOwn
	case k < 20 && g.editorIDs > 0:
		id, step.Reuse = strconv.Itoa(1+r.IntN(g.editorIDs)), reuseEditor
	}
	g.ids[n] = id
	opts := simOptionSet[r.IntN(len(simOptionSet))]
	var ob []string
	for _, o := range opts {
		ob = append(ob, fmt.Sprintf(`{"optionId":%q,"name":%q,"kind":%q}`, o[0], strings.ToUpper(o[0][:1])+o[0][1:], o[1]))
	}
	kind, title := "execute", fmt.Sprintf("echo %d", n)
	if opts[0][0] == "acceptEdits" || opts[0][0] == "exit-plan-default" {
		kind, title = "switch_mode", "Ready to code?"
	}
	tc := fmt.Sprintf(`"toolCallId":"tc-%d","title":%q,"kind":%q,"rawInput":{"command":%q,"sim":%q}`, n, title, kind, title, simVerdicts[r.IntN(len(simVerdicts))])
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/request_permission","params":{"sessionId":%q,"toolCall":{%s},"options":[%s]}}`, id, sid, tc, strings.Join(ob, ","))
	var msgs []string
	if r.IntN(3) == 0 {
		msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"tool_call",%s,"status":"pending"},"_meta":{"sim":%d}}}`, sid, tc, g.seq()))
	}
	msgs = append(msgs, req)
	if len(msgs) > 1 && r.IntN(2) == 0 {
		step.Msgs = msgs // a batch
		g.s.Steps = append(g.s.Steps, step)
	} else {
		for i, m := range msgs {
			st := step
			if i < len(msgs)-1 {
				st = simStep{Op: opAgent}
			}
			st.Msgs = []string{m}
			g.s.Steps = append(g.s.Steps, st)
		}
	}
	g.open = append(g.open, n)
}

// agentOther adds an fs/*, terminal/create request or a notification of
// the agent's.
func (g *simGen) agentOther(sid string) {
	var m string
	switch g.r.IntN(4) {
	case 0:
		m = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"fs/read_text_file","params":{"sessionId":%q,"path":"/p/f%d.txt"}}`, g.agentID(), sid, g.seq())
	case 1:
		m = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"fs/write_text_file","params":{"sessionId":%q,"path":"/p/f%d.txt","content":"x"}}`, g.agentID(), sid, g.seq())
	case 2:
		m = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"terminal/create","params":{"sessionId":%q,"command":"echo","args":["%d"]}}`, g.agentID(), sid, g.seq())
	default:
		m = fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"m%d"}}}}`, sid, g.seq())
	}
	g.s.Steps = append(g.s.Steps, simStep{Op: opAgent, Msgs: []string{m}})
}

// answerSome answers or releases one of the open permission requests.
func (g *simGen) answerSome() {
	if len(g.open) == 0 {
		return
	}
	r := g.r
	i := r.IntN(len(g.open))
	n := g.open[i]
	if r.IntN(6) == 0 {
		g.s.Steps = append(g.s.Steps, simStep{Op: opRelease, Req: n})
	}
	how := simHows[r.IntN(len(simHows))]
	g.s.Steps = append(g.s.Steps, simStep{Op: opAnswer, Req: n, How: how, Pick: r.IntN(3)})
	g.open = append(g.open[:i], g.open[i+1:]...)
	if how != howNone {
		g.answered = append(g.answered, n)
	}
}

// String is the script as JSON, one step a line.
func (s *simScript) String() string {
	var b strings.Builder
	head, _ := json.Marshal(struct {
		Seed     uint64       `json:"seed"`
		Config   simConfig    `json:"config"`
		Sessions []simSession `json:"sessions"`
	}{s.Seed, s.Config, s.Sessions})
	b.Write(head[:len(head)-1])
	b.WriteString(`,"steps":[`)
	for i, st := range s.Steps {
		if i > 0 {
			b.WriteString(",")
		}
		j, _ := json.Marshal(st)
		b.WriteString("\n")
		b.Write(j)
	}
	b.WriteString("]}\n")
	return b.String()
}
