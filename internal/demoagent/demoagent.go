// Package demoagent is the scripted ACP agent of `permhost demo`: a real
// agent speaking ACP over stdio that, for one prompt, proposes a realistic
// mix of tool calls — running the tests, deleting the home directory,
// writing .env, editing a source file, reading an SSH key, fetching a URL —
// each with a session/request_permission shaped as claude-agent-acp sends
// them, and acts on each answer as a real agent would.
package demoagent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
)

// Step is one proposed tool call.
type Step struct {
	Say      string         // text before the call
	Title    string         // tool call title
	Kind     string         // ACP tool kind
	ToolName string         // claude-agent-acp's tool name
	RawInput map[string]any // with {cwd} replaced
	Path     string         // a location, relative to the cwd unless absolute
	Done     string         // text after a successful call
}

// Script is the demo session.
var Script = []Step{
	{Say: "I'll start by running the test suite.", Title: "npm test", Kind: "execute", ToolName: "Bash",
		RawInput: map[string]any{"command": "npm test", "description": "Run the test suite"}, Done: "All 42 tests pass."},
	{Say: "The build cache looks stale; let me clear everything out.", Title: "rm -rf ~", Kind: "execute", ToolName: "Bash",
		RawInput: map[string]any{"command": "rm -rf ~", "description": "Remove cached files"}, Done: "Removed."},
	{Say: "Now I'll store the API token in .env.", Title: "Write .env", Kind: "edit", ToolName: "Write", Path: ".env",
		RawInput: map[string]any{"file_path": "{cwd}/.env", "content": "API_TOKEN=sk-live-123\n"}, Done: "Saved the token."},
	{Say: "Next, the fix in src/app.ts.", Title: "Edit src/app.ts", Kind: "edit", ToolName: "Edit", Path: "src/app.ts",
		RawInput: map[string]any{"file_path": "{cwd}/src/app.ts", "old_string": "retries = 0", "new_string": "retries = 3", "replace_all": false}, Done: "Patched the retry count."},
	{Say: "I need the deploy key to push.", Title: "Read ~/.ssh/id_rsa", Kind: "read", ToolName: "Read", Path: "{home}/.ssh/id_rsa",
		RawInput: map[string]any{"file_path": "{home}/.ssh/id_rsa"}, Done: "Read the key."},
	{Say: "Let me check the upstream changelog.", Title: "Fetch https://example.com/changelog", Kind: "fetch", ToolName: "WebFetch",
		RawInput: map[string]any{"url": "https://example.com/changelog", "prompt": "What changed?"}, Done: "Read the changelog."},
}

// Options are claude-agent-acp's.
var options = json.RawMessage(`[{"kind":"allow_always","name":"Always Allow","optionId":"allow_always"},{"kind":"allow_once","name":"Allow","optionId":"allow"},{"kind":"reject_once","name":"Reject","optionId":"reject"}]`)

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// agent is one connection.
type agent struct {
	out     *json.Encoder
	mu      sync.Mutex
	nextID  int
	waiting map[string]chan message
	cancel  map[string]context.CancelFunc
	cwd     string
	home    string
}

// Run serves one ACP connection until in ends. home stands for ~ in the
// script's paths.
func Run(ctx context.Context, in io.Reader, out io.Writer, home string) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	a := &agent{out: enc, waiting: map[string]chan message{}, cancel: map[string]context.CancelFunc{}, home: home}
	br := bufio.NewReaderSize(in, 1<<20)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var m message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				a.send(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "parse error"}})
			} else if m.Method == "" {
				a.mu.Lock()
				ch := a.waiting[string(m.ID)]
				delete(a.waiting, string(m.ID))
				a.mu.Unlock()
				if ch != nil {
					ch <- m
				}
			} else {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a.handle(ctx, m)
				}()
			}
		}
		if err != nil {
			a.mu.Lock()
			for _, c := range a.cancel {
				c()
			}
			for id, ch := range a.waiting {
				close(ch)
				delete(a.waiting, id)
			}
			a.mu.Unlock()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (a *agent) send(v any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	_ = a.out.Encode(v)
}

func (a *agent) reply(id json.RawMessage, result any) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (a *agent) update(session string, u map[string]any) {
	a.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": session, "update": u}})
}

// request sends an agent→client request and waits for its answer.
func (a *agent) request(ctx context.Context, method string, params any) (message, error) {
	a.mu.Lock()
	id := json.RawMessage(fmt.Sprint(a.nextID))
	a.nextID++
	ch := make(chan message, 1)
	a.waiting[string(id)] = ch
	a.mu.Unlock()
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	select {
	case m, ok := <-ch:
		if !ok {
			return message{}, io.EOF
		}
		return m, nil
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

func (a *agent) handle(ctx context.Context, m message) {
	switch m.Method {
	case "initialize":
		a.reply(m.ID, map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{"loadSession": false},
			"agentInfo": map[string]any{"name": "permhost-demo-agent", "version": "1.0.0"}, "authMethods": []any{}})
	case "session/new":
		var p struct {
			Cwd string `json:"cwd"`
		}
		_ = json.Unmarshal(m.Params, &p)
		a.mu.Lock()
		a.cwd = p.Cwd
		a.mu.Unlock()
		a.reply(m.ID, map[string]any{"sessionId": "demo-session"})
	case "session/cancel":
		a.mu.Lock()
		for _, c := range a.cancel {
			c()
		}
		a.mu.Unlock()
	case "session/prompt":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		turn, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		a.cancel[string(m.ID)] = cancel
		a.mu.Unlock()
		stop := a.turn(turn, p.SessionID)
		cancel()
		a.mu.Lock()
		delete(a.cancel, string(m.ID))
		a.mu.Unlock()
		a.reply(m.ID, map[string]any{"stopReason": stop})
	default:
		if m.ID != nil {
			a.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}})
		}
	}
}

func (a *agent) expand(s string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.NewReplacer("{cwd}", a.cwd, "{home}", a.home).Replace(s)
}

// turn plays the script and returns the stop reason.
func (a *agent) turn(ctx context.Context, session string) string {
	say := func(text string) {
		a.update(session, map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text + "\n"}})
	}
	for i, s := range Script {
		if ctx.Err() != nil {
			return "cancelled"
		}
		say(s.Say)
		id := fmt.Sprintf("toolu_demo_%02d", i+1)
		raw := map[string]any{}
		for k, v := range s.RawInput {
			if str, ok := v.(string); ok {
				v = a.expand(str)
			}
			raw[k] = v
		}
		call := map[string]any{"toolCallId": id, "title": a.expand(s.Title), "kind": s.Kind, "status": "pending", "rawInput": raw}
		if s.Path != "" {
			p := a.expand(s.Path)
			if !filepath.IsAbs(p) {
				p = filepath.Join(a.cwd, p)
			}
			call["locations"] = []map[string]any{{"path": p}}
		}
		update := map[string]any{"sessionUpdate": "tool_call", "_meta": map[string]any{"claudeCode": map[string]any{"toolName": s.ToolName}}}
		for k, v := range call {
			update[k] = v
		}
		a.update(session, update)
		ans, err := a.request(ctx, "session/request_permission", map[string]any{"sessionId": session, "toolCall": call, "options": options})
		if err != nil {
			return "cancelled"
		}
		var res struct {
			Outcome struct {
				Outcome  string `json:"outcome"`
				OptionID string `json:"optionId"`
			} `json:"outcome"`
		}
		_ = json.Unmarshal(ans.Result, &res)
		allowed := res.Outcome.Outcome == "selected" && (res.Outcome.OptionID == "allow" || res.Outcome.OptionID == "allow_always")
		status, text := "completed", s.Done
		if !allowed {
			status, text = "failed", "User refused permission to run tool"
		}
		a.update(session, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": status,
			"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": text}}}})
		if ctx.Err() != nil {
			return "cancelled"
		}
	}
	say("Done: tests pass and src/app.ts is patched; the rest was refused.")
	return "end_turn"
}
