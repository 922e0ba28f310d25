package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/fspath"
	"github.com/permhost/permhost/internal/jsontext"
	"github.com/permhost/permhost/internal/profile"
	"github.com/permhost/permhost/internal/shell"
)

// This file is [session] fs = "govern": the agent's fs/read_text_file,
// fs/write_text_file and terminal/create requests go through the plugins
// as requests permhost makes up (family read, edit or shell; paths and
// the command filled, a terminal's command with no args as the command
// line it is; one-time options "allow" and "reject"), and reach the editor
// only when allowed (RATIONALE.md, "Files and terminals").

// The options of a request permhost makes up.
const (
	fsAllow  = "allow"
	fsReject = "reject"
)

// ByProjectRead is the decidedBy of a read inside the session's directory
// that no plugin decided: it goes to the editor as it would without
// permhost, since every agent reads there unasked.
const ByProjectRead = "project-read"

// allowance is a tool call the session's permission request allowed,
// until the call finishes: what its own file and terminal requests are not
// asked again for. Each request must match one allowance on every key: a
// read of a file the call reads, a write of a file it writes, or a
// terminal running exactly its command in its directory. Reading is not
// writing, a file named by a command is not a file the tool names, and a
// command run elsewhere is another command.
type allowance struct {
	decision      string
	reads, writes []string // the files the tool names, clean, by access
	command, cwd  string   // a shell call's script (trimmed) and where it runs
}

// allowanceOf is what a decision allowing req's tool call allows: for a
// call that runs a command, that command in its directory; for any other,
// the files it names, each with its access.
func allowanceOf(req abi.Request, decisionID string) allowance {
	a := allowance{decision: decisionID}
	if req.Action != nil && (req.Action.Command != "" || req.Action.Family == abi.FamilyShell) || req.Shell != nil {
		if req.Action != nil && req.Action.Family == abi.FamilyShell && filepath.IsAbs(req.Action.Cwd) {
			a.command, a.cwd = strings.TrimSpace(req.Action.Command), filepath.Clean(req.Action.Cwd)
		}
		return a
	}
	for _, p := range req.Paths {
		if !filepath.IsAbs(p.Path) {
			continue
		}
		if p.Resolved == "" {
			continue // a file that could not be resolved covers nothing
		}
		switch p.Access {
		case abi.AccessRead:
			a.reads = append(a.reads, p.Resolved)
		case abi.AccessWrite:
			a.writes = append(a.writes, p.Resolved)
		}
	}
	return a
}

// covers reports whether a allows the file or terminal request c, whose
// session's working directory is sessionCwd.
func (a allowance) covers(c fsCall, sessionCwd string) bool {
	switch c.method {
	case acp.MethodReadTextFile:
		return c.resolved != "" && slices.Contains(a.reads, c.resolved)
	case acp.MethodWriteTextFile:
		return c.resolved != "" && slices.Contains(a.writes, c.resolved)
	case acp.MethodTerminalCreate:
		cwd := c.cwd
		if cwd == "" && filepath.IsAbs(sessionCwd) {
			// The editor runs a terminal without a cwd in the session's.
			cwd = filepath.Clean(sessionCwd)
		}
		return a.command != "" && c.command == a.command && cwd != "" && cwd == a.cwd
	}
	return false
}

// allow records that a decision allowed req's tool call.
func (g *governor) allow(sessionID, toolCallID string, req abi.Request, decisionID string) {
	if toolCallID == "" {
		return
	}
	a := allowanceOf(req, decisionID)
	g.mu.Lock()
	defer g.mu.Unlock()
	gs := g.sessionLocked(sessionID)
	if len(gs.allowed) >= maxUnaskedTracked {
		clear(gs.allowed)
	}
	gs.allowed[toolCallID] = a
}

// allowedFor returns the decision that allowed a running call covering the
// file or terminal request c.
func (g *governor) allowedFor(sessionID string, c fsCall, sessionCwd string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gs, ok := g.sessions[sessionID]
	if !ok {
		return "", false
	}
	for _, a := range gs.allowed {
		if a.covers(c, sessionCwd) {
			return a.decision, true
		}
	}
	return "", false
}

// Intercepts takes the agent's file and terminal requests when fs is
// governed, and its elicitations that are approvals.
func (g *governor) Intercepts(r *acp.AgentRequest) bool {
	switch r.Method {
	case acp.MethodReadTextFile, acp.MethodWriteTextFile, acp.MethodTerminalCreate:
		if !g.governsFS() {
			return false
		}
		if g.dry != nil {
			g.dryFS(r)
			return false
		}
		return true
	case acp.MethodElicitationCreate:
		return g.isApproval(r) && g.dry == nil
	}
	return false
}

// AgentRequest decides a request Intercepts took.
func (g *governor) AgentRequest(ctx context.Context, r *acp.AgentRequest, c acp.Client, p acp.Caller) (acp.Reply, error) {
	if r.Method == acp.MethodElicitationCreate {
		return g.elicitation(ctx, r, c)
	}
	return g.fsRequest(ctx, r, c, p)
}

// fsCall is a file or terminal request as permhost reads it.
type fsCall struct {
	// path is the file as asked (absolute, not cleaned: its ".." apply
	// after the symlinks before them); resolved is the file the OS opens,
	// set from the request the plugins decide on.
	method, path, resolved string
	// command is the script a terminal runs; cwd where, when it says
	// (absolute, clean).
	command, cwd string
	params       json.RawMessage
}

// readFSCall reads the request's params strictly.
func readFSCall(r *acp.AgentRequest) (fsCall, error) {
	c := fsCall{method: r.Method}
	if r.Suspicious != "" {
		return c, fmt.Errorf("the request cannot be read one way only (%s)", r.Suspicious)
	}
	switch r.Method {
	case acp.MethodReadTextFile, acp.MethodWriteTextFile:
		f, err := jsontext.Lookup(r.Params, "path", "content")
		if err != nil {
			return c, fmt.Errorf("params: %w", err)
		}
		p, err := jsontext.String(f["path"])
		if err != nil || !filepath.IsAbs(p) {
			return c, fmt.Errorf("no absolute path")
		}
		c.path = p
		raw := map[string]any{"path": c.path}
		if r.Method == acp.MethodWriteTextFile {
			content, err := jsontext.String(f["content"])
			if err != nil {
				return c, fmt.Errorf("no content")
			}
			raw["content"] = content
		}
		c.params = marshal(raw)
	case acp.MethodTerminalCreate:
		var t struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
			Env     []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"env"`
			Cwd string `json:"cwd"`
		}
		if err := json.Unmarshal(r.Params, &t); err != nil || strings.TrimSpace(t.Command) == "" {
			return c, fmt.Errorf("no command")
		}
		var words []string
		for _, e := range t.Env {
			if !validName(e.Name) {
				return c, fmt.Errorf("an environment variable named %q", e.Name)
			}
			words = append(words, e.Name+"="+shellQuote(e.Value))
		}
		switch {
		case len(t.Args) > 0:
			// A program and its argv, as exec runs them.
			words = append(words, shellQuote(t.Command))
			for _, a := range t.Args {
				words = append(words, shellQuote(a))
			}
		case len(words) == 0:
			// A command with no args is a command line: an editor may
			// run it through a shell, so it is analysed as one
			// ("rm -rf /x" is rm with its args, not a program of that
			// name).
			words = append(words, strings.TrimSpace(t.Command))
		default:
			// Its environment is the shell's, for every command of it.
			words = append(words, "bash", "-c", shellQuote(strings.TrimSpace(t.Command)))
		}
		c.command = strings.Join(words, " ")
		raw := map[string]any{"command": c.command}
		if t.Cwd != "" {
			if !filepath.IsAbs(t.Cwd) {
				return c, fmt.Errorf("cwd %q is not absolute", t.Cwd)
			}
			c.cwd = filepath.Clean(t.Cwd)
			raw["cwd"] = c.cwd
		}
		c.params = marshal(raw)
	}
	return c, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// shellQuote quotes a word for bash when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r == '=' || r == '+' || r == ',' || r == '@' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// permissionOf makes up the session/request_permission a file or terminal
// request stands for: its tool call (kind read, edit or execute; the path
// in locations and rawInput, the command in rawInput) and the one-time
// options.
func permissionOf(r *acp.AgentRequest, c fsCall, decisionID string) *acp.PermissionRequest {
	tc := []member{{"toolCallId", marshal("permhost-" + decisionID)}}
	switch c.method {
	case acp.MethodReadTextFile:
		tc = append(tc, member{"title", marshal("Read " + c.path)})
	case acp.MethodWriteTextFile:
		tc = append(tc, member{"title", marshal("Write " + c.path)})
	default:
		tc = append(tc, member{"title", marshal(c.command)})
	}
	tc = append(tc, member{"kind", marshal(kindOfFS(c.method))})
	tc = append(tc, member{"status", marshal("pending")})
	if c.path != "" {
		tc = append(tc, member{"locations", marshal([]map[string]string{{"path": c.path}})})
	}
	tc = append(tc, member{"rawInput", c.params})
	toolCall := joinObject(tc)
	opts := []acp.PermissionOption{{OptionID: fsAllow, Name: "Allow", Kind: abi.OptionAllowOnce}, {OptionID: fsReject, Name: "Reject", Kind: abi.OptionRejectOnce}}
	params := joinObject([]member{{"sessionId", marshal(r.SessionID)}, {"toolCall", toolCall}, {"options", marshal(opts)},
		{"_meta", marshal(map[string]any{"permhost": map[string]string{"request": c.method}})}})
	return &acp.PermissionRequest{ID: json.RawMessage(`"permhost-` + decisionID + `"`), Params: params, SessionID: r.SessionID,
		ToolCallID: "permhost-" + decisionID, ToolCall: toolCall, Options: opts, Session: r.Session}
}

// fsRequest decides a file or terminal request: one a running call's
// allowance covers (the same access to the same file, or the same command
// in the same directory) passes; otherwise
// the plugins decide on the request permhost makes up; a read inside the
// session's directory no plugin decided passes; anything else undecided
// goes to the person as a permission request of permhost's own. Allowed,
// the request is forwarded to the editor; refused, the agent gets an error
// naming who refused, and the editor never sees it.
func (g *governor) fsRequest(ctx context.Context, r *acp.AgentRequest, c acp.Client, p acp.Caller) (acp.Reply, error) {
	e := g.e
	start := e.now()
	call, err := readFSCall(r)
	if err != nil {
		e.log.Warn("refused a file or terminal request permhost cannot read", "method", r.Method, "err", err)
		return acp.Reply{Error: refusal(fmt.Sprintf("%s refused: %v ([session] fs = \"govern\")", r.Method, err))}, nil
	}
	id := newDecisionID()
	pr := permissionOf(r, call, id)
	req, err := buildRequest(pr, id, e.home, profile.Generic)
	if err != nil {
		return acp.Reply{Error: refusal(fmt.Sprintf("%s refused: %v ([session] fs = \"govern\")", r.Method, err))}, nil
	}
	if call.path != "" {
		if call.resolved, err = resolvedOf(req, call.path); err != nil {
			e.log.Warn("refused a file request whose path cannot be resolved", "method", r.Method, "path", call.path)
			return acp.Reply{Error: refusal(fmt.Sprintf("%s refused: %v ([session] fs = \"govern\")", r.Method, err))}, nil
		}
	}
	entry := entryFor(req, e.via, e.cfg.Strategy, start)
	entry.Request = r.Method
	// What is forwarded names the file decided on (readFSCall read the
	// params strictly, so they split).
	params, err := call.forwarded(r.Params)
	if err != nil {
		return acp.Reply{Error: refusal(fmt.Sprintf("%s refused: %v ([session] fs = \"govern\")", r.Method, err))}, nil
	}
	out := fsDelivery{e: e, ctx: ctx, r: r, c: c, call: call, params: params, start: start}
	forward, refuse := out.forward, out.refuse
	if dec, ok := g.allowedFor(r.SessionID, call, r.Session.Cwd); ok {
		entry.DecidedBy, entry.Reason = ByAllowedCall+dec, "the session's permission request for the call allowed it"
		return forward(entry)
	}
	v := e.decide(ctx, req)
	if ctx.Err() != nil {
		return acp.Reply{}, ctx.Err()
	}
	entry.recordVerdict(v)
	switch {
	case v.Decided() && v.Outcome != abi.OutcomeReject && v.Outcome != abi.OutcomeCancel && v.OptionID == fsAllow:
		entry.OptionID, entry.OptionKind = fsAllow, abi.OptionAllowOnce
		return forward(entry)
	case v.Decided():
		entry.OptionID = v.OptionID
		return refuse(entry)
	case call.method == acp.MethodReadTextFile && v.Outcome == abi.OutcomeAbstain && v.Fallback == "" && insideProject(call.path, call.resolved, r.Session.Cwd):
		entry.DecidedBy, entry.Reason = ByProjectRead, "no plugin decided a read inside the project"
		return forward(entry)
	}
	d := proxyHandler{e}.person(ctx, pr, req, v, fsClient{p: p, params: pr.Params}, entry)
	if ctx.Err() != nil {
		return acp.Reply{}, ctx.Err()
	}
	// What the person chose, read back as a permission answer would
	// reach an agent: only an offered allow forwards.
	e.settle(ctx, pr, req, &d)
	d.entry.Request = r.Method
	if d.entry.Outcome == "selected" && strings.HasPrefix(d.entry.OptionKind, "allow") {
		return forward(d.entry)
	}
	if d.entry.Reason == "" {
		d.entry.Reason = "not allowed"
	}
	return refuse(d.entry)
}

func kindOfFS(method string) string {
	switch method {
	case acp.MethodReadTextFile:
		return abi.KindRead
	case acp.MethodWriteTextFile:
		return abi.KindEdit
	}
	return abi.KindExecute
}

// what names a file or terminal request in a sentence.
func (c fsCall) what() string {
	if c.path != "" {
		return c.path
	}
	return "`" + c.command + "`"
}

// insideProject reports whether path (as asked) is inside the session's
// directory, both as written (cleaned) and as the OS opens it (resolved,
// the file the plugins were shown) inside the directory's own resolution.
func insideProject(path, resolved, cwd string) bool {
	if !filepath.IsAbs(cwd) || resolved == "" {
		return false
	}
	cwd = filepath.Clean(cwd)
	if !shell.Inside(filepath.Clean(path), cwd) {
		return false
	}
	realCwd, err := fspath.Resolve(cwd)
	return err == nil && shell.Inside(resolved, realCwd)
}

// resolvedOf is the file the OS opens for a file request's path, as the
// plugins were shown it in req: what every later check and the forwarded
// request use, so that what is opened is what was decided on.
func resolvedOf(req abi.Request, path string) (string, error) {
	for _, p := range req.Paths {
		if p.Asked == path || p.Asked == "" && p.Path == path {
			if p.Resolved == "" {
				return "", fmt.Errorf("%s cannot be resolved", path)
			}
			return p.Resolved, nil
		}
	}
	return "", fmt.Errorf("%s is not among the request's paths", path)
}

// forwarded is the params of a file request as forwarded to the editor:
// the path replaced by the file the plugins decided on (resolved, so that
// no symlink swapped in after the decision is followed by a client that
// opens it without following symlinks, as permhost run does), every other
// member as the agent sent it. nil (the original line) for a terminal.
func (c fsCall) forwarded(params json.RawMessage) (json.RawMessage, error) {
	if c.path == "" || c.resolved == c.path {
		return nil, nil
	}
	ms, err := splitObject(params)
	if err != nil {
		return nil, err
	}
	return joinObject(setMember(ms, "path", marshal(c.resolved))), nil
}

// fsClient is the Client of a permission request permhost makes up: Ask
// sends it to the editor as a request of permhost's own.
type fsClient struct {
	p      acp.Caller
	params json.RawMessage
}

func (c fsClient) Ask(ctx context.Context, params json.RawMessage) (acp.Answer, error) {
	if params == nil {
		params = c.params
	}
	return c.p.Client(ctx, acp.MethodRequestPermission, params)
}

// errNoDelivery: fsClient's prompt has no agent waiting on its answer.
var errNoDelivery = errors.New("policy: permhost's own prompt is not delivered to the agent")

// Deliver is never called: the person's choice on this prompt is settled
// by fsRequest, and the agent's answer is the file request's reply.
func (c fsClient) Deliver(acp.Response, func([]byte)) error {
	return errNoDelivery
}

func (c fsClient) Notify(method string, params json.RawMessage) error {
	return c.p.Notify(method, params)
}

// dryFS shows in a replay what fs = "govern" would do with a file or
// terminal request (the recording's own answer is what follows).
func (g *governor) dryFS(r *acp.AgentRequest) {
	call, err := readFSCall(r)
	if err != nil {
		g.dry(ReplayNote{Session: r.SessionID, Type: NoteFile, Title: r.Method, What: "refused: " + err.Error()})
		return
	}
	title := r.Method + " " + call.what()
	if call.path != "" && filepath.IsAbs(r.Session.Cwd) {
		if rel, err := filepath.Rel(filepath.Clean(r.Session.Cwd), filepath.Clean(call.path)); err == nil && !strings.HasPrefix(rel, "..") {
			title = r.Method + " " + rel
		}
	}
	note := ReplayNote{Session: r.SessionID, Type: NoteFile, Title: title, Kind: kindOfFS(call.method)}
	id := newDecisionID()
	pr := permissionOf(r, call, id)
	req, err := buildRequest(pr, id, g.e.home, profile.Generic)
	if err != nil {
		return
	}
	if call.path != "" {
		if call.resolved, err = resolvedOf(req, call.path); err != nil {
			note.What = "refused: " + err.Error()
			g.dry(note)
			return
		}
	}
	if dec, ok := g.allowedFor(r.SessionID, call, r.Session.Cwd); ok {
		note.What = "forwarded: the permission request of its tool call allowed it (" + dec + ")"
		g.dry(note)
		return
	}
	v := g.e.Run(context.Background(), g.e.pluginView(req))
	switch {
	case v.Decided() && v.Outcome != abi.OutcomeReject && v.Outcome != abi.OutcomeCancel && v.OptionID == fsAllow:
		note.What = "forwarded: allowed by " + v.DecidedBy
	case v.Decided():
		note.What = "refused by " + v.DecidedBy
		if v.Reason != "" {
			note.What += ": " + v.Reason
		}
	case call.method == acp.MethodReadTextFile && v.Outcome == abi.OutcomeAbstain && v.Fallback == "" && insideProject(call.path, call.resolved, r.Session.Cwd):
		note.What = "forwarded: a read inside the project no plugin decided"
	default:
		note.What = "asked: no permission request allowed it and no plugin decided"
	}
	g.dry(note)
}

var _ acp.Client = fsClient{}
