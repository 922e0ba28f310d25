package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/config"
)

// ReplayLine is one recorded ACP message and who sent it.
type ReplayLine struct {
	FromAgent bool
	Msg       []byte
}

// ReadRecording reads recorded ACP traffic: the transcript format of
// testdata/transcripts ({"seq","ts","dir","msg"} per line) or plain ACP lines,
// whose direction is inferred from the message (methods each side sends,
// responses matched to the other side's pending requests).
func ReadRecording(r io.Reader) ([]ReplayLine, error) {
	br := bufio.NewReader(r)
	var out []ReplayLine
	pending := map[string]string{} // pendingKey → method of the requests awaiting a response
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) > 0 {
			rl, perr := recordedLine(line, pending)
			if perr != nil {
				return nil, fmt.Errorf("line %d: %w", n, perr)
			}
			out = append(out, rl)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

type envelope struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

type rpcShape struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Params json.RawMessage `json:"params"`
	Error  json.RawMessage `json:"error"`
}

// clientMethods are the methods a client sends (ACP v1, v2, unstable and
// legacy). Any other method is taken as the agent's: agents extend the
// protocol with methods of their own (_auth/status_update,
// craft/drainMidTurnQueue, qwen/notify/...), the recorded clients do not.
var clientMethods = map[string]bool{
	"initialize": true, "authenticate": true, "logout": true, "session/new": true, "session/load": true,
	"session/list": true, "session/delete": true, "session/resume": true, "session/close": true,
	"session/set_mode": true, "session/set_config_option": true, "session/set_model": true,
	"session/prompt": true, "session/cancel": true, "session/fork": true,
	"providers/list": true, "providers/set": true, "providers/disable": true,
	"nes/start": true, "nes/suggest": true, "nes/close": true, "nes/accept": true, "nes/reject": true,
	"document/didOpen": true, "document/didChange": true, "document/didClose": true,
	"document/didSave": true, "document/didFocus": true,
	// ACP v2's new client requests.
	"tool_call/cancel": true, "terminal/cancel": true,
}

// resultKeys are members that only the result of that method carries; they
// tell apart two responses with the same id, one from each side.
var resultKeys = map[string]string{
	"session/prompt": `"stopReason"`, "session/request_permission": `"outcome"`,
	"fs/read_text_file": `"content"`, "terminal/create": `"terminalId"`, "terminal/output": `"output"`,
	"terminal/wait_for_exit": `"exitCode"`, "elicitation/create": `"action"`,
	"initialize": `"protocolVersion"`, "session/new": `"sessionId"`,
}

// answersMethod reports whether response m is recognisably the answer to a
// request of that method: its result carries the method's own member, or
// its error names the method ("Method not found: craft/...").
func answersMethod(m rpcShape, method string) bool {
	if key, ok := resultKeys[method]; ok && bytes.Contains(m.Result, []byte(key)) {
		return true
	}
	return m.Error != nil && bytes.Contains(m.Error, []byte(method))
}

// pendingKey names a request awaiting a response: its sender and raw id.
func pendingKey(fromAgent bool, id string) string {
	if fromAgent {
		return "agent:" + id
	}
	return "client:" + id
}

func recordedLine(line []byte, pending map[string]string) (ReplayLine, error) {
	var env envelope
	if json.Unmarshal(line, &env) == nil && env.Dir != "" && len(env.Msg) > 0 {
		switch env.Dir {
		case "agent->client":
			return ReplayLine{FromAgent: true, Msg: env.Msg}, nil
		case "client->agent":
			return ReplayLine{Msg: env.Msg}, nil
		}
		return ReplayLine{}, fmt.Errorf("unknown dir %q", env.Dir)
	}
	var m rpcShape
	if err := json.Unmarshal(line, &m); err != nil {
		return ReplayLine{}, fmt.Errorf("neither a transcript line nor a JSON-RPC message: %v", err)
	}
	id := string(m.ID)
	switch {
	case m.Method == "$/cancel_request":
		// Either side sends it, naming a request of its own.
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		_, agentHas := pending[pendingKey(true, string(p.RequestID))]
		_, clientHas := pending[pendingKey(false, string(p.RequestID))]
		return ReplayLine{FromAgent: agentHas && !clientHas, Msg: line}, nil
	case m.Method != "":
		fromAgent := !clientMethods[m.Method]
		if m.ID != nil {
			pending[pendingKey(fromAgent, id)] = m.Method
		}
		return ReplayLine{FromAgent: fromAgent, Msg: line}, nil
	case m.Result != nil || m.Error != nil:
		// A response comes from the side that did not send the request.
		// When both sides have one pending with this id, the result's
		// members say whose method it answers.
		agentMethod, agentPending := pending[pendingKey(true, id)]
		clientMethod, clientPending := pending[pendingKey(false, id)]
		fromAgent := clientPending
		if agentPending && clientPending {
			fromAgent = answersMethod(m, clientMethod) || !answersMethod(m, agentMethod)
		}
		delete(pending, pendingKey(!fromAgent, id))
		return ReplayLine{FromAgent: fromAgent, Msg: line}, nil
	}
	return ReplayLine{}, errors.New("not a JSON-RPC request, notification or response")
}

// ReplayRow is one permission request of a recording, decided again.
type ReplayRow struct {
	Index      int    `json:"index"` // 1-based position among the recording's messages
	Session    string `json:"session"`
	ToolCallID string `json:"toolCallId"`
	Title      string `json:"title"`
	Kind       string `json:"kind"`
	// Today is what today's policy does: an option id, "cancelled", or
	// "ask" when it would put the request to the person.
	Today     string `json:"today"`
	DecidedBy string `json:"decidedBy,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Actual is what the recording answered: an option id, "cancelled",
	// "error" or "" when it holds no answer.
	Actual string `json:"actual"`
	// Differs is set when today's policy would answer by itself and not
	// as the recording did.
	Differs bool `json:"differs"`
}

// Kinds of ReplayNote.
const (
	// NoteMode is a mode action [session] modes = "govern" would take.
	NoteMode = "mode"
	// NoteUnasked is a tool call the agent ran with no permission request.
	NoteUnasked = "unasked"
	// NoteFile is a file or terminal request and what fs = "govern" would
	// do with it.
	NoteFile = "file"
)

// ReplayNote is something of a recording besides its permission requests
// that the governor acts on: a mode action it would take, a tool call the
// agent ran unasked, a file request it would decide.
type ReplayNote struct {
	Index   int    `json:"index"` // 1-based position among the recording's messages
	Type    string `json:"type"`  // NoteMode, NoteUnasked or NoteFile
	Session string `json:"session"`
	// ToolCallID, Kind and Title describe the tool call or request.
	ToolCallID string `json:"toolCallId,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Title      string `json:"title,omitempty"`
	// What says what happened or would happen, in a sentence.
	What string `json:"what"`
}

// Replay rebuilds session and tool-call state from a recording, exactly as
// the proxy would, and runs every permission request through today's chain.
// Beside the requests it returns, in order, what the proxy's governor
// would do with the rest ([session]): the mode actions it would take, the
// tool calls the agent ran unasked, and its file requests.
func (e *Engine) Replay(ctx context.Context, lines []ReplayLine) ([]ReplayRow, []ReplayNote, error) {
	var (
		mu    sync.Mutex
		notes []ReplayNote
	)
	var g *governor
	g = newGovernor(e, func(n ReplayNote) {
		if n.Type == "" {
			n.Type = NoteMode
		}
		mu.Lock()
		n.Index = g.at()
		notes = append(notes, n)
		mu.Unlock()
	})
	recorded, err := interceptRecording(ctx, lines, e.home, g)
	if err != nil {
		return nil, nil, err
	}
	var rows []ReplayRow
	actualFor := recordedAnswers(lines)
	for _, r := range recorded {
		row := ReplayRow{Index: r.index, Session: r.pr.SessionID, ToolCallID: r.pr.ToolCallID}
		// An ACP v2 request without a tool call title has its own.
		row.Title, row.Kind = first(r.req.ToolCall.Title, r.req.Title), r.req.ToolCall.Kind
		row.Actual = actualFor(r.index, string(r.pr.ID))
		if r.err != nil {
			row.Today, row.Reason = "ask", "fallback: "+r.err.Error()
		} else {
			// The plugins see what they would see live; stored grants,
			// this machine's state, are not applied.
			v := e.Run(ctx, e.pluginView(r.req))
			row.Today, row.DecidedBy, row.Reason = todayOf(v), v.DecidedBy, v.Reason
			if v.Fallback != "" && row.Reason == "" {
				row.Reason = "fallback: " + v.Fallback
			}
		}
		row.Differs = row.Today != "ask" && row.Actual != "" && row.Today != row.Actual
		rows = append(rows, row)
		if r.err == nil && e.cfg.Session.Modes == config.ModesGovern {
			prof := e.reqProfile(r.req)
			for _, o := range decidingSwitches(r.req.Options, prof) {
				notes = append(notes, ReplayNote{Index: r.index, Type: NoteMode, Session: row.Session, ToolCallID: row.ToolCallID, Kind: row.Kind, Title: row.Title,
					What: fmt.Sprintf("option %s (switches to %s, which decides by itself) removed", o.OptionID, o.Grants.Mode)})
			}
		}
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Index < notes[j].Index })
	return rows, notes, nil
}

// RecordedRequests returns the plugins' request for each permission request
// of a recording, in order, built as the proxy builds them: the session's
// cwd, mode and peers, the tool call merged over its earlier updates, the
// options, and the shell and path analysis (home is the home directory for
// ~, "" when unknown). Each DecisionID is "replay-N", N being the request's
// 1-based position among the recording's messages, so that a recording
// always gives the same requests. It fails on a request the proxy would not
// show to plugins (malformed, or not understood).
func RecordedRequests(ctx context.Context, lines []ReplayLine, home string) ([]abi.Request, error) {
	recorded, err := interceptRecording(ctx, lines, home, nil)
	if err != nil {
		return nil, err
	}
	reqs := make([]abi.Request, 0, len(recorded))
	for _, r := range recorded {
		if r.err != nil {
			return nil, fmt.Errorf("message %d: %w", r.index, r.err)
		}
		reqs = append(reqs, r.req)
	}
	return reqs, nil
}

// recordedPermission is one permission request of a recording, as the proxy
// intercepted it, and the plugins' request built from it.
type recordedPermission struct {
	pr    *acp.PermissionRequest
	index int // 1-based position among the recording's messages
	req   abi.Request
	// err says why the proxy would hand req to the person without asking
	// the plugins.
	err error
}

// interceptRecording feeds a recording through an in-process proxy and
// returns every permission request it intercepts, in order, each answered
// as the recording answered it. g, when set, is the proxy's Governor (a
// dry one: the recording's messages still pass as they were); it learns
// the position of the message being fed, and which tool calls the
// recording allowed.
func interceptRecording(ctx context.Context, lines []ReplayLine, home string, g *governor) ([]recordedPermission, error) {
	type seen struct {
		pr    *acp.PermissionRequest
		index int
	}
	reqs := make(chan seen, len(lines)+1)
	var index atomic.Int64 // the message being fed
	handler := acp.HandlerFunc(func(ctx context.Context, pr *acp.PermissionRequest, c acp.Client) (acp.Response, error) {
		at := int(index.Load())
		reqs <- seen{pr, at}
		a, err := c.Ask(ctx, nil)
		if err != nil {
			return acp.Response{}, err
		}
		if g != nil {
			// Read as the live handler reads an answer (readAnswer): the
			// proxy relays it only when it reads the same way.
			g.allowRecorded(pr, readAnswer(a, nil), home, at)
		}
		return acp.Response{Line: a.Line}, nil
	})
	opts := acp.Options{Handler: handler, MaxLineBytes: 1 << 30}
	if g != nil {
		g.at = func() int { return int(index.Load()) }
		opts.Governor = g
	}
	proxy, err := acp.NewProxy(opts)
	if err != nil {
		return nil, err
	}
	clientInR, clientInW := io.Pipe()
	clientOutR, clientOutW := io.Pipe()
	agentInR, agentInW := io.Pipe()
	agentOutR, agentOutW := io.Pipe()
	toClient, toAgent := lineChan(clientOutR), lineChan(agentInR)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- proxy.Run(runCtx, clientInR, clientOutW, agentInW, agentOutR) }()
	// Ending both inputs ends the proxy; closing its outputs after it has
	// returned ends the line readers, on every return.
	stop := sync.OnceFunc(func() {
		clientInW.Close()
		agentOutW.Close()
		<-done
		clientOutW.Close()
		agentInW.Close()
	})
	defer stop()

	// Feed one message at a time and wait for it to come out on the other
	// side, so that state follows the recorded order across directions.
	for i, l := range lines {
		index.Store(int64(i + 1))
		w, out := clientInW, toAgent
		if l.FromAgent {
			w, out = agentOutW, toClient
		}
		if _, err := w.Write(append(bytes.Clone(l.Msg), '\n')); err != nil {
			return nil, err
		}
		select {
		case <-out:
		case <-time.After(3 * time.Second):
			// Not every message is relayed (a request the proxy answered
			// itself); go on.
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	stop()
	close(reqs)

	var recorded []recordedPermission
	for s := range reqs {
		r := recordedPermission{pr: s.pr, index: s.index}
		r.req, r.err = BuildRequest(s.pr, fmt.Sprintf("replay-%d", s.index), home)
		if s.pr.Suspicious != "" {
			// The proxy checks this first, as other parsers may read the
			// request differently.
			r.err = errors.New("request is malformed: " + s.pr.Suspicious)
		}
		recorded = append(recorded, r)
	}
	return recorded, nil
}

func todayOf(v host.Verdict) string {
	switch {
	case v.Outcome == abi.OutcomeCancel:
		return "cancelled"
	case v.Decided():
		return v.OptionID
	}
	return "ask"
}

func answerOf(m rpcShape) string {
	if m.Error != nil {
		return "error"
	}
	r, err := answer.DecodeResult(m.Result)
	switch {
	case err != nil:
		return ""
	case r.Selects():
		return r.OptionID
	}
	return r.Outcome
}

// recordedAnswers returns a function giving, for the permission request at
// index with id, the client's response that followed it.
func recordedAnswers(lines []ReplayLine) func(index int, id string) string {
	return func(index int, id string) string {
		for _, l := range lines[index:] {
			if l.FromAgent {
				continue
			}
			var m rpcShape
			if json.Unmarshal(l.Msg, &m) == nil && m.Method == "" && string(m.ID) == id {
				return answerOf(m)
			}
		}
		return ""
	}
}

// lineChan delivers the lines read from r.
func lineChan(r io.Reader) <-chan []byte {
	ch := make(chan []byte, 1024)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				ch <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// allowRecorded records, in a replay, the tool call a recorded answer
// allowed, as the live proxy does for a decision.
func (g *governor) allowRecorded(pr *acp.PermissionRequest, a editorAnswer, home string, at int) {
	optionID, ok := a.selected()
	if !ok {
		return
	}
	for _, o := range pr.Options {
		if o.OptionID == optionID && (o.Kind == abi.OptionAllowOnce || o.Kind == abi.OptionAllowAlways) {
			id := fmt.Sprintf("replay-%d", at)
			if req, err := BuildRequest(pr, id, home); err == nil {
				g.allow(pr.SessionID, pr.ToolCallID, req, id)
			}
			return
		}
	}
}
