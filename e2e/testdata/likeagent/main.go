// Command likeagent is a scripted ACP agent that behaves as one of the
// recorded agents (testdata/transcripts, docs/agents.md) does: its
// initialize and session/new results, its modes and the mode it really
// starts in, the shape of its tool calls and permission requests, its
// option ids and names, and what its "always" options do afterwards (a
// session rule on the command root, a prefix rule, a switch to a mode
// that edits unasked). In a mode that decides by itself it runs a tool
// call without asking, as the real agent did.
//
//	likeagent -agent claude101|codex|gemini|qwen|deciding [-v2] [-start MODE] [-load MODE] [-fork MODE] [-undo N] [-burst N] [-refuse-switch] [-steering-events] [-events FILE] [-report FILE]
//
// -v2 serves ACP v2 (claude101 and codex) to a client that asks for it
// (v2.go); without it the agent answers version 1 whatever it is asked.
// -refuse-switch answers every session/set_mode and
// session/set_config_option with an error: an agent that will not leave
// the mode it starts in. -load is the mode session/load and
// session/resume find the session in, -fork the mode a session/fork
// starts in (the session's id gains "-fork"; later steps run in it). -undo
// N: the first N switches of mode the agent is asked for it undoes at
// once, reporting its mode back (current_mode_update) before answering
// success, as an agent switching itself back while permhost's switch is
// in flight. -burst N: before answering the first switch of mode, the
// agent sends N MiB of agent_message_chunk updates (event "burst: LINES").
//
// A prompt's text holds one step a line: "run: COMMAND", "write: PATH" or
// "read: PATH" (relative to the session's cwd), "plan: TEXT" (claude101's
// ExitPlanMode), "switch: MODE" (the agent changes its own mode, as Qwen
// Code's "Allow All Edits" did) or "approve: SERVER/TOOL" (an MCP tool-call
// approval, as codex-acp sends it as elicitation/create when the client
// advertises form elicitation) or "planreview: PLAN" (codex-acp 2.6's plan
// review "Implement this plan?", a question as recorded). Each step
// becomes one tool call; the agent
// writes a JSON line per step to the events file:
// {"step","asked","answer","ran","unoffered","fs","mode"}. An answer naming
// an option it did not offer is refused as the real agents do (an error;
// the call is not run). When the client advertises fs, Gemini CLI and Qwen
// Code read and write files through fs/read_text_file and
// fs/write_text_file as recorded (Gemini reads before asking; "fs" lists
// what each fs request got). Every line the agent reads goes to the report
// file. "deciding" is an agent with no profile whose every mode decides.
//
// Steps of a misbehaving agent, the same for every -agent: "terminal:
// JSON" creates a terminal with the members of JSON without asking;
// "runterm: DIR: COMMAND" asks to run COMMAND as "run" does, and once
// allowed runs it in a terminal whose cwd is DIR (relative to the
// session's); "askread: PATH" asks to read PATH, and once allowed reads
// and then writes it through the client; "reuse: COMMAND" asks to run
// COMMAND twice under one request id, the second once the client sends
// the request "_e2e/again", and waits for both answers ("answers" lists
// what each got). A client request "_e2e/collide" with params {"id": ID}
// makes the agent send a harmless permission request (options
// harmless-allow, harmless-reject) under ID, as an agent that learnt or
// guessed an id of permhost's own would; its answer is the event
// "collide". "rerun: COMMAND" runs COMMAND as "run" does, then again
// unasked under the same tool call id (event "rerun: COMMAND");
// "otherwrite: PATH" writes PATH unasked as claude's Write tool filed as
// kind "other" (event "otherwrite: PATH").
//
// claude101 and codex advertise _session/steering in initialize, as
// recorded; a steering request is answered "injected" while a prompt runs
// and "promptRequired" otherwise (the idleBehavior permhost asks for); with
// -steering-events it is an event {"step":"steering: TEXT","answer":OUTCOME}
// too. The others answer it -32601, as an agent without the extension does.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

type mode struct{ id, name, desc string }

type def struct {
	initialize string
	sessionID  string
	modes      []mode
	start      string // the mode a new session really starts in
	config     bool   // offers the mode as a config option too
	decides    map[string]string
}

var defs = map[string]def{
	"claude101": {
		initialize: `{"protocolVersion":1,"agentCapabilities":{"_meta":{"claudeCode":{"promptQueueing":true},"authStatus":{}},"promptCapabilities":{"image":true,"embeddedContext":true},"mcpCapabilities":{"http":true,"sse":true},"auth":{"logout":{}},"providers":{},"loadSession":true,"sessionCapabilities":{"additionalDirectories":{},"close":{},"delete":{},"fork":{},"list":{},"resume":{},"systemPrompt":{"mode":{"override":{}}}}},"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","title":"Claude Agent","version":"0.101.0"},"_meta":{"steering":{"supported":true}}}`,
		sessionID:  "21db8843-b258-483d-b6e7-c2051beaf93a",
		modes: []mode{{"default", "Manual", "Always ask before making changes"}, {"acceptEdits", "Accept edits", "Automatically accept all file edits"},
			{"plan", "Plan", "Create a plan before making changes"}, {"auto", "Auto", "Claude handles permission decisions"}},
		start: "auto", config: true,
		decides: map[string]string{"auto": "all", "acceptEdits": "edits", "bypassPermissions": "all"},
	},
	"codex": {
		initialize: `{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/codex-acp","title":"Codex","version":"2.6.0"},"agentCapabilities":{"auth":{"logout":{}},"providers":{},"loadSession":true,"promptCapabilities":{"embeddedContext":true,"image":true},"sessionCapabilities":{"resume":{},"list":{},"close":{},"delete":{},"fork":{},"title":{},"additionalDirectories":{},"subagents":{},"systemPrompt":{}},"mcpCapabilities":{"acp":false,"http":true,"sse":false},"_meta":{"authStatus":{}}},"_meta":{"steering":{"supported":true}}}`,
		sessionID:  "01a23092-aa82-7173-b934-9bf200d61ad3",
		modes: []mode{{"read-only", "Read-only", "Requires approval to edit files and access the internet."},
			{"workspace-write", "Workspace access", "Edit workspace files; ask before writing outside the workspace or accessing the network."},
			{"agent", "Auto review", "Only ask for actions detected as potentially unsafe"},
			{"agent-full-access", "Full access", "Unrestricted access to the internet and any file on your computer"}},
		start: "agent", config: true,
		decides: map[string]string{"workspace-write": "edits", "agent": "all", "agent-full-access": "all"},
	},
	"gemini": {
		initialize: `{"protocolVersion":1,"agentInfo":{"name":"gemini-cli","title":"Gemini CLI","version":"0.61.0"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"audio":true,"embeddedContext":true},"mcpCapabilities":{"http":true,"sse":true}}}`,
		sessionID:  "b87f3724-f04e-4ac5-b55c-f7958199fa17",
		modes: []mode{{"default", "Default", "Prompts for approval"}, {"autoEdit", "Auto Edit", "Auto-approves edit tools"},
			{"yolo", "YOLO", "Auto-approves all tools"}, {"plan", "Plan", "Read-only mode"}},
		start:   "default",
		decides: map[string]string{"autoEdit": "edits", "yolo": "all"},
	},
	"qwen": {
		initialize: `{"protocolVersion":1,"agentInfo":{"name":"qwen-code","title":"Qwen Code","version":"0.24.4"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"audio":true,"embeddedContext":true},"sessionCapabilities":{"list":{},"resume":{}},"mcpCapabilities":{"sse":true,"http":true}}}`,
		sessionID:  "c47c74d5-18c0-468a-8ae0-07f0cebebb06",
		modes: []mode{{"plan", "Plan", "Analyze only, do not modify files or execute commands"}, {"default", "Default", "Require approval for file edits or shell commands"},
			{"auto-edit", "Auto Edit", "Automatically approve file edits"}, {"auto", "Auto", "LLM classifier auto-approves safe actions, blocks risky ones"},
			{"yolo", "YOLO", "Automatically approve all tools"}},
		start: "auto", config: true,
		decides: map[string]string{"auto-edit": "edits", "auto": "all", "yolo": "all"},
	},
	// kimi is Kimi Code CLI 0.38 as its source (MoonshotAI/kimi-code
	// packages/acp-adapter) answers: a mode config option that always
	// reads "default", whatever default_permission_mode makes the session
	// do. It never asks here: its steps run unasked, as under
	// default_permission_mode = "yolo".
	"kimi": {
		initialize: `{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"audio":false,"embeddedContext":true},"mcpCapabilities":{"http":true,"sse":true},"sessionCapabilities":{"list":{}}},"agentInfo":{"name":"Kimi Code CLI","version":"0.38.0"},"authMethods":[]}`,
		sessionID:  "kimi-session-1",
		modes: []mode{{"default", "Default", "Manual approvals; tools execute normally."}, {"plan", "Plan", "Read-only planning; no tool execution."},
			{"auto", "Auto", "Fully autonomous — agent decides everything without asking."}, {"yolo", "YOLO", "Auto-approve tool actions, but the agent may still ask questions."}},
		start: "default", config: true,
		decides: map[string]string{"default": "all", "auto": "all", "yolo": "all"},
	},
	"deciding": {
		initialize: `{"protocolVersion":1,"agentInfo":{"name":"deciding-agent","version":"1.0.0"},"agentCapabilities":{}}`,
		sessionID:  "deciding-1",
		modes:      []mode{{"yolo", "YOLO", "Runs everything"}, {"full-auto", "Full auto", "Decides by itself"}},
		start:      "yolo",
		decides:    map[string]string{"yolo": "all", "full-auto": "all"},
	},
}

// agent is one running agent.
type agent struct {
	name string
	def
	in     *bufio.Reader
	out    *bufio.Writer
	outMu  sync.Mutex
	report *os.File
	events *os.File

	cwd         string
	mode        string
	fsRead      bool // the client advertised fs.readTextFile
	fsWrite     bool
	elicit      bool // the client advertised elicitation.form
	refuse      bool // -refuse-switch
	load        string
	fork        string
	undo        int
	burst       int    // -burst: MiB of updates before the first switch's answer
	nextID      int    // the agent's own request ids, from 0
	collide     string // the id of the harmless request sent for _e2e/collide
	nextCal     int
	serveV2     bool // -v2
	v2          bool // the client asked for v2 and got it
	nextMsg     int
	prompting   bool     // a session/prompt is running
	steerEvents bool     // -steering-events
	roots       []string // session rules on a command root
	prefix      []string // codex prefix rules (whole commands)
}

func main() {
	name := flag.String("agent", "", "the agent to behave as: claude101, codex, gemini, qwen or deciding")
	start := flag.String("start", "", "the mode a new session starts in (default: the agent's own)")
	events := flag.String("events", "", "file for one JSON line per step")
	report := flag.String("report", "", "file for every line read")
	refuse := flag.Bool("refuse-switch", false, "answer every switch of mode with an error")
	load := flag.String("load", "", "the mode session/load and session/resume find the session in (default: the start mode)")
	fork := flag.String("fork", "", "the mode session/fork starts in (default: the start mode)")
	steerEvents := flag.Bool("steering-events", false, "write an event for each _session/steering request")
	undo := flag.Int("undo", 0, "undo the first N switches asked for, reporting the mode back before answering success")
	burst := flag.Int("burst", 0, "before answering the first switch of mode, send N MiB of session/update lines")
	serveV2 := flag.Bool("v2", false, "serve ACP v2 to a client that asks for it (claude101, codex)")
	flag.Parse()
	d, ok := defs[*name]
	if !ok {
		fmt.Fprintln(os.Stderr, "likeagent: unknown -agent", *name)
		os.Exit(2)
	}
	a := &agent{name: *name, def: d, in: bufio.NewReaderSize(os.Stdin, 1<<20), out: bufio.NewWriter(os.Stdout), mode: d.start, refuse: *refuse, steerEvents: *steerEvents}
	if *start != "" {
		a.mode = *start
	}
	a.load, a.fork, a.undo, a.burst = cmp.Or(*load, a.mode), cmp.Or(*fork, a.mode), *undo, *burst
	a.serveV2 = *serveV2 && (*name == "claude101" || *name == "codex")
	var err error
	if *report != "" {
		a.report, err = os.OpenFile(*report, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		check(err)
	}
	if *events != "" {
		a.events, err = os.OpenFile(*events, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		check(err)
	}
	for {
		m, ok := a.read()
		if !ok {
			return
		}
		a.handle(m)
	}
}

type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (a *agent) read() (msg, bool) {
	line, err := a.in.ReadBytes('\n')
	if len(line) > 0 && a.report != nil {
		a.report.Write(line)
	}
	if err != nil {
		return msg{}, false
	}
	var m msg
	if json.Unmarshal(line, &m) != nil {
		a.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
		return m, true
	}
	return m, true
}

func (a *agent) send(line string) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	a.out.WriteString(line + "\n")
	check(a.out.Flush())
}

func (a *agent) respond(id json.RawMessage, result string) {
	a.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
}

func (a *agent) update(u string) {
	u = a.v2Update(u)
	a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":` + q(a.sessionID) + `,"update":` + u + `}}`)
}

func (a *agent) handle(m msg) {
	switch m.Method {
	case "initialize":
		if a.v2Initialize(m) {
			return
		}
		var p struct {
			ClientCapabilities struct {
				FS struct {
					ReadTextFile  bool `json:"readTextFile"`
					WriteTextFile bool `json:"writeTextFile"`
				} `json:"fs"`
				Elicitation struct {
					Form *struct{} `json:"form"`
				} `json:"elicitation"`
			} `json:"clientCapabilities"`
		}
		json.Unmarshal(m.Params, &p)
		c := p.ClientCapabilities
		a.fsRead, a.fsWrite, a.elicit = c.FS.ReadTextFile, c.FS.WriteTextFile, c.Elicitation.Form != nil
		a.respond(m.ID, a.initialize)
	case "session/new":
		var p struct {
			Cwd string `json:"cwd"`
		}
		json.Unmarshal(m.Params, &p)
		a.cwd = p.Cwd
		a.respond(m.ID, a.sessionResult(true))
	case "session/load", "session/resume":
		a.mode = a.load
		a.respond(m.ID, a.sessionResult(false))
	case "session/fork":
		a.sessionID += "-fork"
		a.mode = a.fork
		a.respond(m.ID, a.sessionResult(true))
	case "session/set_mode":
		if a.v2 {
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`)
			return
		}
		var p struct {
			ModeID string `json:"modeId"`
		}
		json.Unmarshal(m.Params, &p)
		a.sendBurst()
		if a.undoSwitch(m.ID) {
			return
		}
		if a.refuse {
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"Internal error: the mode cannot be changed now"}}`)
			return
		}
		if !a.offers(p.ModeID) {
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32602,"message":"Invalid params: unknown mode"}}`)
			return
		}
		a.mode = p.ModeID
		a.respond(m.ID, `{}`)
		a.update(`{"sessionUpdate":"current_mode_update","currentModeId":` + q(a.mode) + `}`)
		a.modeEvent("set_mode")
	case "session/set_config_option":
		var p struct {
			ConfigID string `json:"configId"`
			Type     string `json:"type"`
			Value    string `json:"value"`
		}
		json.Unmarshal(m.Params, &p)
		if a.v2 && p.Type != "id" {
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32602,"message":"Invalid params: type must be \"id\""}}`)
			return
		}
		a.sendBurst()
		if a.undoSwitch(m.ID) {
			return
		}
		if a.refuse {
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"Internal error: the mode cannot be changed now"}}`)
			return
		}
		if !a.config || p.ConfigID != "mode" || !a.offers(p.Value) {
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32602,"message":"Invalid params: unknown config option or value"}}`)
			return
		}
		a.mode = p.Value
		a.respond(m.ID, `{"configOptions":`+a.configOptions()+`}`)
		a.modeEvent("set_config_option")
	case "session/prompt":
		var p struct {
			Prompt []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"prompt"`
		}
		json.Unmarshal(m.Params, &p)
		a.prompting = true
		if a.v2 && len(p.Prompt) > 0 {
			a.v2Prompt(m.ID, p.Prompt[0].Text, func() { a.steps(p.Prompt[0].Text) })
			return
		}
		for _, block := range p.Prompt {
			a.steps(block.Text)
		}
		a.prompting = false
		a.respond(m.ID, `{"stopReason":"end_turn"}`)
	case "_e2e/collide":
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(m.Params, &p)
		a.collide = string(p.ID)
		a.send(`{"jsonrpc":"2.0","id":` + a.collide + `,"method":"session/request_permission","params":{"sessionId":` + q(a.sessionID) +
			`,"toolCall":{"toolCallId":"harmless","title":"List the files","kind":"read","status":"pending"},"options":[{"optionId":"harmless-allow","name":"Allow","kind":"allow_once"},{"optionId":"harmless-reject","name":"Reject","kind":"reject_once"}]}}`)
		a.respond(m.ID, `{}`)
	case "_session/steering":
		if !strings.Contains(a.initialize, `"steering":{"supported":true}`) {
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`)
			return
		}
		var p struct {
			Prompt []struct {
				Text string `json:"text"`
			} `json:"prompt"`
		}
		json.Unmarshal(m.Params, &p)
		outcome := "promptRequired"
		if a.prompting {
			outcome = "injected"
		}
		for _, b := range p.Prompt {
			if a.steerEvents {
				a.emit(event{Step: "steering: " + b.Text, Answer: outcome, Mode: a.mode})
			}
		}
		a.respond(m.ID, `{"outcome":`+q(outcome)+`}`)
	case "":
		if a.collide != "" && string(m.ID) == a.collide {
			a.collide = ""
			got := answerOf(m)
			a.emit(event{Step: "collide", Answer: got, Mode: a.mode})
			a.update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":` + q("collide: "+got) + `}}`)
		}
		// Otherwise a response to nothing pending, or a notification: ignored.
	default:
		if m.ID != nil {
			a.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`)
		}
	}
}

// steps runs a prompt's steps, one a line.
func (a *agent) steps(text string) {
	for _, step := range strings.Split(text, "\n") {
		kind, arg, ok := strings.Cut(step, ": ")
		switch {
		case !ok:
		case kind == "run" || kind == "write":
			a.step(kind, strings.TrimSpace(arg), nil)
		case kind == "terminal":
			a.terminalStep(strings.TrimSpace(arg))
		case kind == "runterm":
			dir, cmd, _ := strings.Cut(strings.TrimSpace(arg), ": ")
			a.step("run", cmd, func(ev *event) bool {
				f := strings.Fields(cmd)
				args, _ := json.Marshal(f[1:])
				r := a.terminal(`"command":` + q(f[0]) + `,"args":` + string(args) + `,"cwd":` + q(filepath.Join(a.cwd, dir)))
				ev.FS = append(ev.FS, r)
				return strings.HasSuffix(r, ": ok")
			})
		case kind == "askread":
			a.askRead(strings.TrimSpace(arg))
		case kind == "rerun":
			a.rerun(strings.TrimSpace(arg))
		case kind == "otherwrite":
			a.otherWrite(strings.TrimSpace(arg))
		case kind == "reuse":
			a.reuse(strings.TrimSpace(arg))
		case kind == "read":
			a.read_(strings.TrimSpace(arg))
		case kind == "plan":
			a.plan(strings.TrimSpace(arg))
		case kind == "switch":
			a.switchSelf(strings.TrimSpace(arg))
		case kind == "approve":
			a.approve(strings.TrimSpace(arg))
		case kind == "planreview":
			a.planReview(strings.TrimSpace(arg))
		}
	}
}

// sendBurst sends -burst MiB of agent_message_chunk updates, once, as an
// agent streaming its output before it answers a switch of mode; the
// event "burst: N" counts the lines.
func (a *agent) sendBurst() {
	if a.burst == 0 {
		return
	}
	text := strings.Repeat("y", 1000)
	n := a.burst << 10
	a.burst = 0
	for range n {
		a.update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + text + `"}}`)
	}
	a.emit(event{Step: fmt.Sprintf("burst: %d", n), Ran: true, Mode: a.mode})
}

// undoSwitch undoes a switch (-undo): the agent reports the mode it stays
// in, then answers success.
func (a *agent) undoSwitch(id json.RawMessage) bool {
	if a.undo == 0 {
		return false
	}
	a.undo--
	a.update(`{"sessionUpdate":"current_mode_update","currentModeId":` + q(a.mode) + `}`)
	a.respond(id, `{}`)
	a.emit(event{Step: "undo: " + a.mode, Mode: a.mode})
	return true
}

func (a *agent) offers(id string) bool {
	return slices.ContainsFunc(a.modes, func(m mode) bool { return m.id == id })
}

func (a *agent) sessionResult(withID bool) string {
	var b strings.Builder
	b.WriteString(`{`)
	if withID {
		b.WriteString(`"sessionId":` + q(a.sessionID) + `,`)
	}
	if a.v2 {
		b.WriteString(`"configOptions":` + a.configOptions() + `}`)
		return b.String()
	}
	b.WriteString(`"modes":{"currentModeId":` + q(a.mode) + `,"availableModes":[`)
	for i, m := range a.modes {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%s,"name":%s,"description":%s}`, q(m.id), q(m.name), q(m.desc))
	}
	b.WriteString(`]}`)
	if a.config {
		b.WriteString(`,"configOptions":` + a.configOptions())
	}
	b.WriteString(`}`)
	return b.String()
}

func (a *agent) configOptions() string {
	var b strings.Builder
	key := "id"
	if a.v2 {
		key = "configId"
	}
	fmt.Fprintf(&b, `[{%q:"mode","name":"Mode","description":"Session permission mode","category":"mode","type":"select","currentValue":%s,"options":[`, key, q(a.mode))
	for i, m := range a.modes {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"value":%s,"name":%s,"description":%s}`, q(m.id), q(m.name), q(m.desc))
	}
	b.WriteString(`]}]`)
	return b.String()
}

// event is one step's outcome.
type event struct {
	Step      string   `json:"step"`
	Asked     bool     `json:"asked"`
	Answer    string   `json:"answer,omitempty"`
	Ran       bool     `json:"ran"`
	Unoffered bool     `json:"unoffered,omitempty"`
	FS        []string `json:"fs,omitempty"`      // each fs request: "read PATH: content|error MSG", "write PATH: ok|error MSG", "terminal: ok|error MSG"
	Answers   []string `json:"answers,omitempty"` // reuse: what each request got
	Mode      string   `json:"mode"`
}

func (a *agent) emit(ev event) {
	if a.events != nil {
		b, _ := json.Marshal(ev)
		a.events.Write(append(b, '\n'))
	}
}

// modeEvent records a switch the client (or permhost) made.
func (a *agent) modeEvent(how string) { a.emit(event{Step: how + ": " + a.mode, Mode: a.mode}) }

type option struct{ id, name, kind string }

// step asks for a run or a write as the agent does (unless it decides by
// itself) and runs it; inCall, when not nil, is what the call does once
// allowed, before it completes (false: it failed).
func (a *agent) step(kind, arg string, inCall func(*event) bool) {
	a.nextCal++
	ev := event{Step: kind + ": " + arg, Mode: a.mode}
	defer func() { a.emit(ev) }()
	path := arg
	if kind == "write" && !filepath.IsAbs(path) {
		path = a.cwd + string(filepath.Separator) + arg // not cleaned: an agent sends k/../x as it is
	}
	id, preamble, request, opts := a.shape(kind, arg, path)
	for _, u := range preamble {
		a.update(u)
	}
	viaFS := kind == "write" && a.fsWrite && (a.name == "gemini" || a.name == "qwen")
	if viaFS && a.name == "gemini" && a.fsRead {
		// write_file reads the file first, to show a diff.
		ev.FS = append(ev.FS, a.fsCall("read", path, ""))
	}
	if a.unasked(kind, arg) {
		if len(preamble) == 0 {
			a.update(`{"sessionUpdate":"tool_call","toolCallId":` + q(id) + `,"status":"in_progress","title":` + q(arg) + `,"kind":` + q(kindOf(kind)) + `}`)
		} else {
			a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"in_progress"}`)
		}
		if viaFS {
			r := a.fsCall("write", path, "hello\n")
			ev.FS = append(ev.FS, r)
			if !strings.HasSuffix(r, ": ok") {
				a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
				return
			}
		}
		a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"completed"}`)
		ev.Ran = true
		return
	}
	ev.Asked = true
	reqID := a.nextID
	a.nextID++
	if a.v2 {
		request = a.v2Request(kind, request)
		a.update(`{"sessionUpdate":"state_update","state":"requires_action"}`)
	}
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":%s}`, reqID, request))
	chosen := a.await(reqID)
	if a.v2 {
		a.update(`{"sessionUpdate":"state_update","state":"running"}`)
	}
	ev.Answer = chosen
	i := slices.IndexFunc(opts, func(o option) bool { return o.id == chosen })
	if chosen != "" && i < 0 {
		ev.Unoffered = true
	}
	if i < 0 || strings.HasPrefix(opts[i].kind, "reject") {
		a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
		return
	}
	if opts[i].kind == "allow_always" {
		a.always(kind, arg, opts[i])
	}
	if inCall != nil && !inCall(&ev) {
		a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
		return
	}
	if viaFS {
		if a.name == "gemini" && a.fsRead {
			ev.FS = append(ev.FS, a.fsCall("read", path, ""))
		}
		r := a.fsCall("write", path, "hello\n")
		ev.FS = append(ev.FS, r)
		if !strings.HasSuffix(r, ": ok") {
			a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
			return
		}
	}
	a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"completed"}`)
	ev.Ran = true
}

// request sends the client a request of the agent's own and returns the
// response, handling what else comes meanwhile.
func (a *agent) request(method, params string) msg {
	id := a.nextID
	a.nextID++
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}`, id, q(method), params))
	want := fmt.Sprint(id)
	for {
		m, ok := a.read()
		if !ok {
			os.Exit(0)
		}
		if m.Method != "" || string(m.ID) != want {
			a.handle(m)
			continue
		}
		return m
	}
}

// fsCall reads or writes a file through the client, as Gemini CLI and
// Qwen Code do, and says what it got.
func (a *agent) fsCall(op, path, content string) string {
	var m msg
	if op == "read" {
		m = a.request("fs/read_text_file", `{"path":`+q(path)+`,"sessionId":`+q(a.sessionID)+`}`)
	} else {
		m = a.request("fs/write_text_file", `{"path":`+q(path)+`,"content":`+q(content)+`,"sessionId":`+q(a.sessionID)+`}`)
	}
	rel, _ := filepath.Rel(a.cwd, path)
	if m.Error != nil {
		var e struct{ Message string }
		json.Unmarshal(m.Error, &e)
		return op + " " + rel + ": error " + e.Message
	}
	if op == "read" {
		return op + " " + rel + ": content"
	}
	return op + " " + rel + ": ok"
}

// terminal creates a terminal through the client with the params members
// (and the session's id) and says what it got.
func (a *agent) terminal(members string) string {
	m := a.request("terminal/create", `{"sessionId":`+q(a.sessionID)+`,`+members+`}`)
	if m.Error != nil {
		var e struct{ Message string }
		json.Unmarshal(m.Error, &e)
		return "terminal: error " + e.Message
	}
	return "terminal: ok"
}

// terminalStep creates a terminal without asking.
func (a *agent) terminalStep(obj string) {
	ev := event{Step: "terminal: " + obj, Mode: a.mode}
	r := a.terminal(strings.TrimSuffix(strings.TrimPrefix(obj, "{"), "}"))
	ev.FS, ev.Ran = []string{r}, strings.HasSuffix(r, ": ok")
	a.emit(ev)
}

// askRead asks to read path; allowed, it reads and then writes it.
func (a *agent) askRead(arg string) {
	a.nextCal++
	ev := event{Step: "askread: " + arg, Mode: a.mode, Asked: true}
	defer func() { a.emit(ev) }()
	path := a.cwd + string(filepath.Separator) + arg
	id := fmt.Sprintf("read_file_%d", a.nextCal)
	opts := []option{{"proceed_once", "Allow", "allow_once"}, {"cancel", "Reject", "reject_once"}}
	reqID := a.nextID
	a.nextID++
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":%s,"options":%s,"toolCall":{"toolCallId":%s,"status":"pending","title":%s,"locations":[{"path":%s}],"kind":"read"}}}`,
		reqID, q(a.sessionID), optionsJSON(opts), q(id), q("Read "+arg), q(path)))
	ev.Answer = a.await(reqID)
	if ev.Answer != "proceed_once" {
		a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
		return
	}
	ev.FS = append(ev.FS, a.fsCall("read", path, ""), a.fsCall("write", path, "hello\n"))
	a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"completed"}`)
	ev.Ran = strings.HasSuffix(ev.FS[1], ": ok")
}

// rerun runs cmd as "run" does, then, once that call has completed, runs
// it again unasked under the same tool call id (a new tool_call), as an
// agent that reuses its ids would.
func (a *agent) rerun(cmd string) {
	a.step("run", cmd, nil)
	id, _, _, _ := a.shape("run", cmd, "") // nextCal unchanged: the same id
	a.update(`{"sessionUpdate":"tool_call","toolCallId":` + q(id) + `,"status":"in_progress","title":` + q(cmd) + `,"kind":"execute","rawInput":{"command":` + q(cmd) + `}}`)
	a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"completed"}`)
	a.emit(event{Step: "rerun: " + cmd, Ran: true, Mode: a.mode})
}

// otherWrite writes path unasked with claude's Write tool filed as kind
// "other" (the kind claude-agent-acp gives the tools it does not map).
func (a *agent) otherWrite(arg string) {
	a.nextCal++
	path := a.cwd + string(filepath.Separator) + arg
	id := fmt.Sprintf("toolu_fake_%04d", 40+a.nextCal)
	a.update(`{"_meta":{"claudeCode":{"toolName":"Write"}},"toolCallId":` + q(id) + `,"sessionUpdate":"tool_call","name":"Write","rawInput":{"file_path":` + q(path) + `,"content":"hello\n"},"status":"pending","title":` + q("Write "+arg) + `,"kind":"other","content":[],"locations":[]}`)
	a.update(`{"_meta":{"claudeCode":{"toolName":"Write"}},"toolCallId":` + q(id) + `,"sessionUpdate":"tool_call_update","status":"in_progress"}`)
	a.update(`{"_meta":{"claudeCode":{"toolName":"Write"}},"toolCallId":` + q(id) + `,"sessionUpdate":"tool_call_update","status":"completed"}`)
	a.emit(event{Step: "otherwrite: " + arg, Ran: true, Mode: a.mode})
}

// reuse asks to run cmd twice, two tool calls under one request id, and
// waits for both answers.
func (a *agent) reuse(cmd string) {
	ev := event{Step: "reuse: " + cmd, Mode: a.mode, Asked: true}
	defer func() { a.emit(ev) }()
	reqID := a.nextID
	a.nextID++
	for i := range 2 {
		if i == 1 {
			a.waitRequest("_e2e/again")
		}
		a.nextCal++
		_, pre, request, _ := a.shape("run", cmd, "")
		for _, u := range pre {
			a.update(u)
		}
		a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":%s}`, reqID, request))
	}
	for range 2 {
		ev.Answers = append(ev.Answers, a.await(reqID))
	}
}

// waitRequest reads until the client's request method, which it answers,
// handling what else comes.
func (a *agent) waitRequest(method string) {
	for {
		m, ok := a.read()
		if !ok {
			os.Exit(0)
		}
		if m.Method == method {
			a.respond(m.ID, `{}`)
			return
		}
		a.handle(m)
	}
}

// answerOf is the option a permission request's answer chose, "" for
// cancelled, or "error MSG".
func answerOf(m msg) string {
	if m.Error != nil {
		var e struct{ Message string }
		json.Unmarshal(m.Error, &e)
		return "error " + e.Message
	}
	var r struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	json.Unmarshal(m.Result, &r)
	return r.Outcome.OptionID
}

// read_ is a read_file step: Qwen Code reads through fs/read_text_file and
// never asks; the others read the disk themselves (not seen).
func (a *agent) read_(arg string) {
	a.nextCal++
	ev := event{Step: "read: " + arg, Mode: a.mode}
	defer func() { a.emit(ev) }()
	path := arg
	if !filepath.IsAbs(path) {
		path = a.cwd + string(filepath.Separator) + arg // not cleaned: an agent sends k/../x as it is
	}
	id := fmt.Sprintf("call_fake_%d", 5+a.nextCal)
	a.update(`{"sessionUpdate":"tool_call","toolCallId":` + q(id) + `,"status":"pending","title":"ReadFile","content":[],"locations":[],"kind":"read","rawInput":{},"_meta":{"toolName":"read_file","provenance":"builtin","phase":"preparing"}}`)
	if a.name == "qwen" && a.fsRead {
		r := a.fsCall("read", path, "")
		ev.FS = append(ev.FS, r)
		if !strings.HasSuffix(r, ": content") {
			a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
			return
		}
	}
	a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"completed","locations":[{"path":` + q(path) + `}]}`)
	ev.Ran = true
}

// plan is claude101's ExitPlanMode: "Approve Plan" with the options that
// say which mode the session goes to.
func (a *agent) plan(text string) {
	a.nextCal++
	ev := event{Step: "plan: " + text, Mode: a.mode, Asked: true}
	defer func() { a.emit(ev) }()
	id := fmt.Sprintf("toolu_fake_%04d", 20+a.nextCal)
	a.update(`{"_meta":{"claudeCode":{"toolName":"ExitPlanMode"}},"toolCallId":` + q(id) + `,"sessionUpdate":"tool_call","name":"ExitPlanMode","rawInput":{},"status":"pending","title":"Approve Plan","kind":"switch_mode","content":[]}`)
	a.update(`{"_meta":{"claudeCode":{"toolName":"ExitPlanMode"}},"toolCallId":` + q(id) + `,"sessionUpdate":"tool_call_update","rawInput":{"plan":` + q(text) + `},"content":[{"type":"content","content":{"type":"text","text":` + q(text) + `}}]}`)
	opts := []option{{"exit-plan-default", "Yes, manually approve edits", "allow_once"}, {"exit-plan-auto", "Yes, and use auto mode", "allow_always"}, {"reject", "No, keep planning", "reject_once"}}
	reqID := a.nextID
	a.nextID++
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"toolCall":{"toolCallId":%s,"name":"ExitPlanMode","status":"pending","rawInput":{},"title":"Approve Plan","kind":"switch_mode","content":[]},"options":%s,"sessionId":%s}}`,
		reqID, q(id), optionsJSON(opts), q(a.sessionID)))
	chosen := a.await(reqID)
	ev.Answer = chosen
	switch chosen {
	case "exit-plan-default":
		a.mode = "default"
	case "exit-plan-auto":
		a.mode = "auto"
	case "reject", "":
		a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
		return
	default:
		ev.Unoffered = true
		return
	}
	a.update(`{"sessionUpdate":"current_mode_update","currentModeId":` + q(a.mode) + `}`)
	a.update(`{"sessionUpdate":"config_option_update","configOptions":` + a.configOptions() + `}`)
	a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"completed","title":"Exited Plan Mode"}`)
	ev.Ran, ev.Mode = true, a.mode
}

// planReview is codex-acp 2.6's plan review, as recorded
// (transcripts/v2/codexts-v2-plan-mode.jsonl, in ACP v1's shape): a question
// put as a permission request of kind switch_mode.
func (a *agent) planReview(plan string) {
	a.nextCal++
	ev := event{Step: "planreview: " + plan, Mode: a.mode, Asked: true}
	defer func() { a.emit(ev) }()
	id := "plan-review:" + a.sessionID + "-plan"
	opts := []option{{"implement_plan", "Yes, implement this plan", "allow_once"}, {"revise_plan", "No, and tell Codex what to do differently", "reject_once"}}
	reqID := a.nextID
	a.nextID++
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":%s,"toolCall":{"toolCallId":%s,"kind":"switch_mode","status":"pending","rawInput":{"plan":%s}},"options":%s}}`,
		reqID, q(a.sessionID), q(id), q(plan), optionsJSON(opts)))
	ev.Answer = a.await(reqID)
	ev.Ran = ev.Answer == "implement_plan"
	ev.Unoffered = ev.Answer != "" && !slices.ContainsFunc(opts, func(o option) bool { return o.id == ev.Answer })
}

// switchSelf is the agent changing its own mode and saying so.
func (a *agent) switchSelf(mode string) {
	a.mode = mode
	a.update(`{"sessionUpdate":"current_mode_update","currentModeId":` + q(mode) + `}`)
	if a.name == "qwen" {
		a.send(`{"jsonrpc":"2.0","method":"qwen/notify/session/mode-update","params":{"v":1,"sessionId":` + q(a.sessionID) + `,"currentModeId":` + q(mode) + `,"legacyFrameSent":true}}`)
	}
	a.emit(event{Step: "switch: " + mode, Ran: true, Mode: mode})
}

// approve is an MCP tool call codex-acp asks about as elicitation/create
// (form mode, the persist choices of the tool approval).
func (a *agent) approve(what string) {
	a.nextCal++
	ev := event{Step: "approve: " + what, Mode: a.mode, Asked: true}
	defer func() { a.emit(ev) }()
	server, tool, _ := strings.Cut(what, "/")
	id := fmt.Sprintf("call_fake_%d", 40+a.nextCal)
	a.update(`{"sessionUpdate":"tool_call","toolCallId":` + q(id) + `,"kind":"execute","title":` + q("mcp."+server+"."+tool) + `,"status":"in_progress","rawInput":{"server":` + q(server) + `,"tool":` + q(tool) + `,"arguments":{}},"_meta":{"is_mcp_tool_call":true}}`)
	if !a.elicit {
		ev.Asked = false
		a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
		return
	}
	m := a.request("elicitation/create", `{"sessionId":`+q(a.sessionID)+`,"toolCallId":`+q(id)+`,"message":`+q("Allow the "+server+" MCP server to run tool \""+tool+"\"?")+
		`,"_meta":{"codex_approval_kind":"mcp_tool_call","persist":["session","always"],"tool_params":{}},"mode":"form","requestedSchema":{"type":"object","properties":{"persist":{"type":"string","title":"Approval scope","oneOf":[{"const":"once","title":"Allow once"},{"const":"session","title":"Allow for this session"},{"const":"always","title":"Allow and don't ask again"}],"default":"once"}},"required":["persist"]}}`)
	var r struct {
		Action  string `json:"action"`
		Content struct {
			Persist string `json:"persist"`
		} `json:"content"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil {
		ev.Answer = "error"
		a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
		return
	}
	ev.Answer = r.Action
	if r.Content.Persist != "" {
		ev.Answer += " " + r.Content.Persist
	}
	if r.Action != "accept" || !(r.Content.Persist == "" || r.Content.Persist == "once" || r.Content.Persist == "session" || r.Content.Persist == "always") {
		a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"failed"}`)
		return
	}
	a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"in_progress"}`)
	a.update(`{"sessionUpdate":"tool_call_update","toolCallId":` + q(id) + `,"status":"completed"}`)
	ev.Ran = true
}

// await reads until the response to request id, handling what else comes;
// it returns the option chosen, "" for cancelled or an error.
func (a *agent) await(id int) string {
	want := fmt.Sprint(id)
	for {
		m, ok := a.read()
		if !ok {
			os.Exit(0)
		}
		if m.Method != "" || string(m.ID) != want {
			a.handle(m)
			continue
		}
		var r struct {
			Outcome struct {
				Outcome  string `json:"outcome"`
				OptionID string `json:"optionId"`
			} `json:"outcome"`
		}
		if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || r.Outcome.Outcome != "selected" {
			return ""
		}
		return r.Outcome.OptionID
	}
}

func kindOf(step string) string {
	if step == "run" {
		return "execute"
	}
	return "edit"
}

func root(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	return filepath.Base(f[0])
}

// unasked reports whether the agent runs the step without asking: its mode
// decides, or an earlier "always" covers it.
func (a *agent) unasked(kind, arg string) bool {
	switch a.decides[a.mode] {
	case "all":
		return true
	case "edits":
		// claude's acceptEdits also ran touch unasked.
		if kind == "write" || (a.name == "claude101" && root(arg) == "touch") {
			return true
		}
	}
	if kind == "run" {
		return slices.Contains(a.roots, root(arg)) || slices.ContainsFunc(a.prefix, func(p string) bool { return arg == p || strings.HasPrefix(arg, p+" ") })
	}
	return false
}

// always does what the agent's "always" option did in the recordings.
func (a *agent) always(kind, arg string, o option) {
	switch {
	case a.name == "gemini" && kind == "run":
		a.roots = append(a.roots, root(arg))
	case a.name == "gemini":
		a.mode = "autoEdit"
		a.update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"[MODE_UPDATE] autoEdit"}}`)
	case a.name == "qwen" && kind == "run":
		a.roots = append(a.roots, root(arg))
	case a.name == "qwen":
		a.mode = "auto-edit"
		a.update(`{"sessionUpdate":"current_mode_update","currentModeId":"auto-edit"}`)
	case a.name == "codex" && kind == "run":
		a.prefix = append(a.prefix, arg)
	case a.name == "claude101" && kind == "write":
		a.mode = "acceptEdits" // silently: no current_mode_update
	case a.name == "claude101":
		a.roots = append(a.roots, root(arg))
	}
}

// shape returns the tool call id, the updates before the request, the
// request's params and its options, as the agent sends them.
func (a *agent) shape(kind, arg, path string) (string, []string, string, []option) {
	s, n := a.sessionID, a.nextCal
	switch a.name {
	case "gemini":
		if kind == "run" {
			id := fmt.Sprintf("run_shell_command__run_shell_command_%d_0", 1796111368683+n)
			opts := []option{{"proceed_always", "Allow for this session", "allow_always"}, {"proceed_once", "Allow", "allow_once"}, {"cancel", "Reject", "reject_once"}}
			return id, nil, fmt.Sprintf(`{"sessionId":%s,"options":%s,"toolCall":{"toolCallId":%s,"status":"pending","title":%s,"content":[{"type":"content","content":{"type":"text","text":%s}}],"locations":[],"kind":"execute"}}`,
				q(s), optionsJSON(opts), q(id), q(arg), q("[current working directory "+a.cwd+"]")), opts
		}
		id := fmt.Sprintf("write_file__write_file_%d_0", 1796111369490+n)
		opts := []option{{"proceed_always", "Allow for this session", "allow_always"}, {"proceed_once", "Allow", "allow_once"}, {"cancel", "Reject", "reject_once"}}
		return id, nil, fmt.Sprintf(`{"sessionId":%s,"options":%s,"toolCall":{"toolCallId":%s,"status":"pending","title":%s,"content":[{"type":"diff","path":%s,"oldText":"","newText":"hello\n","_meta":{"kind":"add"}}],"locations":[{"path":%s}],"kind":"edit"}}`,
			q(s), optionsJSON(opts), q(id), q("Writing to "+filepath.Base(path)), q(path), q(path)), opts
	case "qwen":
		id := fmt.Sprintf("call_fake_%d", 5+n)
		if kind == "run" {
			pre := []string{`{"sessionUpdate":"tool_call","toolCallId":` + q(id) + `,"status":"pending","title":"Shell","content":[],"locations":[],"kind":"execute","rawInput":{},"_meta":{"toolName":"run_shell_command","provenance":"builtin","phase":"preparing"}}`}
			r := root(arg)
			opts := []option{{"proceed_always_project", "Always Allow in project: " + r + " *", "allow_always"}, {"proceed_always_user", "Always Allow for user: " + r + " *", "allow_always"}, {"proceed_once", "Allow", "allow_once"}, {"cancel", "Reject", "reject_once"}}
			return id, pre, fmt.Sprintf(`{"sessionId":%s,"options":%s,"toolCall":{"toolCallId":%s,"status":"pending","title":%s,"content":[],"locations":[],"kind":"execute","rawInput":{"command":%s},"_meta":{"toolName":"run_shell_command"}}}`,
				q(s), optionsJSON(opts), q(id), q(arg), q(arg)), opts
		}
		pre := []string{`{"sessionUpdate":"tool_call","toolCallId":` + q(id) + `,"status":"pending","title":"WriteFile","content":[],"locations":[],"kind":"edit","rawInput":{},"_meta":{"toolName":"write_file","provenance":"builtin","phase":"preparing"}}`}
		opts := []option{{"proceed_always", "Allow All Edits", "allow_always"}, {"proceed_once", "Allow", "allow_once"}, {"cancel", "Reject", "reject_once"}}
		return id, pre, fmt.Sprintf(`{"sessionId":%s,"options":%s,"toolCall":{"toolCallId":%s,"status":"pending","title":%s,"content":[{"type":"diff","path":%s,"oldText":"","newText":"hello\n"}],"locations":[{"path":%s}],"kind":"edit","rawInput":{"file_path":%s,"content":"hello\n"},"_meta":{"toolName":"write_file"}}}`,
			q(s), optionsJSON(opts), q(id), q("Writing to "+filepath.Base(path)), q(path), q(path), q(path)), opts
	case "codex":
		id := fmt.Sprintf("call_fake_%d", 4+n)
		if kind == "run" {
			pre := []string{`{"sessionUpdate":"tool_call","toolCallId":` + q(id) + `,"kind":"execute","title":` + q(arg) + `,"status":"in_progress","content":[{"type":"terminal","terminalId":` + q(id) + `}],"rawInput":{"command":` + q(arg) + `,"cwd":` + q(a.cwd) + `}}`}
			opts := []option{{"allow_once", "Yes, proceed", "allow_once"}, {"accept_execpolicy_amendment", "Yes, and don't ask again for commands that start with `" + arg + "`", "allow_always"}, {"cancel", "No, and tell Codex what to do differently", "reject_once"}}
			return id, pre, fmt.Sprintf(`{"sessionId":%s,"toolCall":{"toolCallId":%s,"title":%s,"rawInput":{"command":%s,"cwd":%s},"kind":"execute","status":"pending"},"options":%s}`,
				q(s), q(id), q(arg), q(arg), q(a.cwd), optionsJSON(opts)), opts
		}
		pre := []string{`{"sessionUpdate":"tool_call","toolCallId":` + q(id) + `,"kind":"edit","title":"Edit files","status":"in_progress","content":[{"type":"diff","path":` + q(path) + `,"oldText":null,"newText":"hello\n"}],"locations":[{"path":` + q(path) + `}]}`}
		opts := []option{{"allow_once", "Yes, proceed", "allow_once"}, {"allow_for_session", "Yes, and don't ask again for these files", "allow_always"}, {"cancel", "No, and tell Codex what to do differently", "reject_once"}}
		return id, pre, fmt.Sprintf(`{"sessionId":%s,"toolCall":{"toolCallId":%s,"title":"Edit files","locations":[{"path":%s}],"kind":"edit","status":"pending"},"options":%s}`,
			q(s), q(id), q(path), optionsJSON(opts)), opts
	case "claude101":
		id := fmt.Sprintf("toolu_fake_%04d", 4+n)
		if kind == "run" {
			pre := []string{
				`{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":` + q(id) + `,"sessionUpdate":"tool_call","name":"Bash","rawInput":{},"status":"pending","title":"Terminal","kind":"execute","content":[]}`,
				`{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":` + q(id) + `,"sessionUpdate":"tool_call_update","rawInput":{"command":` + q(arg) + `,"description":"step"},"title":` + q(arg) + `,"content":[{"type":"content","content":{"type":"text","text":"step"}}]}`,
			}
			opts := []option{{"allow-once", "Yes", "allow_once"}}
			if r := root(arg); r != "rm" && r != "touch" {
				opts = append(opts, option{"allow-with-updates", "Yes, and allow " + r + " * commands", "allow_always"})
			}
			opts = append(opts, option{"reject", "No", "reject_once"})
			return id, pre, fmt.Sprintf(`{"toolCall":{"toolCallId":%s,"name":"Bash","status":"pending","rawInput":{"command":%s,"description":"step"},"title":%s,"kind":"execute","content":[{"type":"content","content":{"type":"text","text":"step"}}],"locations":[]},"options":%s,"sessionId":%s}`,
				q(id), q(arg), q(arg), optionsJSON(opts), q(s)), opts
		}
		pre := []string{
			`{"_meta":{"claudeCode":{"toolName":"Write"}},"toolCallId":` + q(id) + `,"sessionUpdate":"tool_call","name":"Write","rawInput":{},"status":"pending","title":"Preparing file…","kind":"edit","content":[],"locations":[]}`,
		}
		opts := []option{{"allow-once", "Yes", "allow_once"}, {"allow-with-updates", "Yes, allow all edits during this session", "allow_always"}, {"reject", "No", "reject_once"}}
		return id, pre, fmt.Sprintf(`{"toolCall":{"toolCallId":%s,"name":"Write","status":"pending","rawInput":{"file_path":%s,"content":"hello\n"},"title":%s,"kind":"edit","content":[{"type":"diff","path":%s,"oldText":null,"newText":"hello\n"}],"locations":[{"path":%s}]},"options":%s,"sessionId":%s}`,
			q(id), q(path), q("Write "+filepath.Base(path)), q(path), q(path), optionsJSON(opts), q(s)), opts
	}
	// deciding: never asks, but has a shape for completeness.
	id := fmt.Sprintf("t%d", n)
	opts := []option{{"allow", "Allow", "allow_once"}, {"reject", "Reject", "reject_once"}}
	return id, nil, fmt.Sprintf(`{"sessionId":%s,"toolCall":{"toolCallId":%s,"title":%s,"kind":%s},"options":%s}`, q(s), q(id), q(arg), q(kindOf(kind)), optionsJSON(opts)), opts
}

func optionsJSON(opts []option) string {
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = fmt.Sprintf(`{"optionId":%s,"name":%s,"kind":%s}`, q(o.id), q(o.name), q(o.kind))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "likeagent:", err)
		os.Exit(1)
	}
}
