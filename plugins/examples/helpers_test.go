package examples_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/sandbox"
)

// pluginPath returns the wasm of the example plugin name: the one `make
// plugins` built into $PERMHOST_PLUGINS_DIR when present, else one this test
// binary builds once into a temporary directory.
func pluginPath(t *testing.T, name string) string {
	t.Helper()
	if dir := os.Getenv("PERMHOST_PLUGINS_DIR"); dir != "" {
		p := filepath.Join(dir, name+".wasm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	b := builds.get(name)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "permhost-examples-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name+".wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", b.path, ".")
		cmd.Dir = name
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

type build struct {
	once sync.Once
	path string
	err  error
}

var builds = buildSet{m: map[string]*build{}}

type buildSet struct {
	mu sync.Mutex
	m  map[string]*build
}

func (s *buildSet) get(name string) *build {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[name] == nil {
		s.m[name] = &build{}
	}
	return s.m[name]
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range builds.m {
		if b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
	}
	os.Exit(code)
}

// load loads an example plugin through the real host, with one pooled
// instance and a generous deadline. The tables test what the plugins
// decide, not how fast a cold instance starts: under -race on a loaded
// 2-core machine, a fresh Go instance's _initialize and first call measured
// 70-420 ms, past the default 100 ms deadline.
func load(t *testing.T, name string) *host.Plugin {
	t.Helper()
	ctx := context.Background()
	p, err := host.Load(ctx, host.Options{
		Path:     pluginPath(t, name),
		CacheDir: t.TempDir(),
		PoolSize: 1,
		Limits:   sandbox.Limits{Timeout: 10 * time.Second},
	})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	return p
}

// sharedDir is ../shared beside the repository, or $PERMHOST_SHARED_DIR.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PERMHOST_SHARED_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "transcripts")); err != nil {
		t.Fatalf("shared directory with transcripts/ not found (set PERMHOST_SHARED_DIR): %v", err)
	}
	return dir
}

// replayTranscript replays a recorded transcript the way permhost's
// context builder does — session cwd and mode, agent info, tool-call state
// merged over every session/update, option durability — and returns the
// Request of each session/request_permission, in order. Shell and Paths are
// left to the caller.
func replayTranscript(t *testing.T, file string) []abi.Request {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedDir(t), "transcripts", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type line struct {
		Dir string `json:"dir"`
		Msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		} `json:"msg"`
	}
	var (
		cwd, mode, sessionID string
		agent                *abi.Peer
		calls                = map[string]map[string]json.RawMessage{} // merged tool-call fields by id
		pendingNew           json.RawMessage                           // id of session/new
		out                  []abi.Request
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		m := l.Msg
		switch {
		case l.Dir == "client->agent" && m.Method == "session/new":
			var p struct{ Cwd string }
			json.Unmarshal(m.Params, &p)
			cwd, pendingNew = p.Cwd, m.ID
		case l.Dir == "client->agent" && m.Method == "session/set_mode":
			var p struct{ ModeID string }
			json.Unmarshal(m.Params, &p)
			mode = p.ModeID
		case l.Dir == "agent->client" && m.Result != nil && string(m.ID) == "0" && agent == nil:
			var r struct{ AgentInfo *abi.Peer }
			json.Unmarshal(m.Result, &r)
			agent = r.AgentInfo
		case l.Dir == "agent->client" && m.Result != nil && string(m.ID) == string(pendingNew):
			var r struct {
				SessionID string
				Modes     struct{ CurrentModeID string }
			}
			json.Unmarshal(m.Result, &r)
			sessionID, mode = r.SessionID, r.Modes.CurrentModeID
		case m.Method == "session/update":
			var p struct {
				Update map[string]json.RawMessage
			}
			json.Unmarshal(m.Params, &p)
			var kind, id string
			json.Unmarshal(p.Update["sessionUpdate"], &kind)
			json.Unmarshal(p.Update["toolCallId"], &id)
			switch kind {
			case "current_mode_update":
				json.Unmarshal(p.Update["currentModeId"], &mode)
			case "tool_call", "tool_call_update":
				merge(calls, id, p.Update)
			}
		case m.Method == "session/request_permission":
			var p struct {
				SessionID string
				ToolCall  map[string]json.RawMessage
				Options   []abi.Option
			}
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatal(err)
			}
			var id string
			json.Unmarshal(p.ToolCall["toolCallId"], &id)
			merge(calls, id, p.ToolCall)
			if sessionID == "" {
				sessionID = p.SessionID
			}
			out = append(out, abi.Request{
				ABI:        abi.Current,
				DecisionID: fmt.Sprintf("%s#%d", file, len(out)),
				Session:    abi.Session{ID: p.SessionID, Cwd: cwd, Mode: mode, Agent: agent},
				ToolCall:   toolCall(calls[id]),
				Options:    withDurability(p.Options, calls[id]),
				Raw:        m.Params,
			})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no permission request", file)
	}
	return out
}

// merge lays the non-null fields of update over the state of call id; the
// toolName rides in _meta.claudeCode.
func merge(calls map[string]map[string]json.RawMessage, id string, update map[string]json.RawMessage) {
	c := calls[id]
	if c == nil {
		c = map[string]json.RawMessage{}
		calls[id] = c
	}
	for k, v := range update {
		if string(v) != "null" {
			c[k] = v
		}
	}
	var meta struct {
		ClaudeCode struct{ ToolName string } `json:"claudeCode"`
	}
	if json.Unmarshal(update["_meta"], &meta) == nil && meta.ClaudeCode.ToolName != "" {
		c["toolName"], _ = json.Marshal(meta.ClaudeCode.ToolName)
	}
}

func toolCall(c map[string]json.RawMessage) abi.ToolCall {
	var tc abi.ToolCall
	str := func(k string) string {
		var s string
		json.Unmarshal(c[k], &s)
		return s
	}
	tc.ID, tc.Title, tc.Kind, tc.Status, tc.ToolName = str("toolCallId"), str("title"), str("kind"), str("status"), str("toolName")
	tc.RawInput, tc.Content = c["rawInput"], c["content"]
	json.Unmarshal(c["locations"], &tc.Locations)
	return tc
}

func withDurability(options []abi.Option, call map[string]json.RawMessage) []abi.Option {
	var kind string
	json.Unmarshal(call["kind"], &kind)
	for i := range options {
		k := options[i].Kind
		options[i].Durable = kind == abi.KindSwitchMode || k == abi.OptionAllowAlways || k == abi.OptionRejectAlways
	}
	return options
}

// withWritePaths fills Paths from the locations of an edit, as the context
// builder does.
func withWritePaths(r abi.Request) abi.Request {
	for _, l := range r.ToolCall.Locations {
		inside := r.Session.Cwd != "" && strings.HasPrefix(l.Path, strings.TrimSuffix(r.Session.Cwd, "/")+"/")
		r.Paths = append(r.Paths, abi.Path{Path: l.Path, Access: abi.AccessWrite, InsideCwd: inside, Source: "location"})
	}
	return r
}

// Agent-specific option sets, as the agents send them.
var (
	claudeOptions = []abi.Option{
		{OptionID: "allow_always", Name: "Always Allow", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
		{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
	}
	codexExecOptions = []abi.Option{
		{OptionID: "approved", Name: "Yes, proceed", Kind: abi.OptionAllowOnce},
		{OptionID: "approved-execpolicy-amendment", Name: "Yes, and don't ask again for commands that start with `rm -rf build`", Kind: abi.OptionAllowAlways, Durable: true},
		{OptionID: "abort", Name: "No, and tell Codex what to do differently", Kind: abi.OptionRejectOnce},
	}
	codexPatchOptions = []abi.Option{
		{OptionID: "approved", Name: "Yes", Kind: abi.OptionAllowOnce},
		{OptionID: "abort", Name: "No, and tell Codex what to do differently", Kind: abi.OptionRejectOnce},
	}
)

const cwd = "/home/dev/project"

// claudeBash is a claude-agent-acp Bash request for script; shell is the
// analysis, or nil for a request without one.
func claudeBash(script, description string, shell *abi.Shell) abi.Request {
	raw, _ := json.Marshal(map[string]string{"command": script, "description": description})
	content, _ := json.Marshal([]any{map[string]any{"type": "content", "content": map[string]string{"type": "text", "text": description}}})
	return abi.Request{
		ABI: abi.Current, DecisionID: "bash",
		Session:  abi.Session{ID: "2a178532", Cwd: cwd, Mode: "default", Agent: &abi.Peer{Name: "@zed-industries/claude-agent-acp", Version: "0.23.1"}},
		ToolCall: abi.ToolCall{ID: "toolu_fake_0100", Title: script, Kind: abi.KindExecute, RawInput: raw, Content: content, ToolName: "Bash"},
		Options:  claudeOptions,
		Shell:    shell,
	}
}

// claudeFile is a claude-agent-acp Read or Write of path.
func claudeFile(tool, path string) abi.Request {
	kind, access := abi.KindRead, abi.AccessRead
	rawInput := map[string]any{"file_path": path}
	var content json.RawMessage
	if tool == "Write" {
		kind, access = abi.KindEdit, abi.AccessWrite
		rawInput["content"] = "SECRET=1\n"
		content, _ = json.Marshal([]any{map[string]any{"type": "diff", "path": path, "oldText": nil, "newText": "SECRET=1\n"}})
	}
	raw, _ := json.Marshal(rawInput)
	return abi.Request{
		ABI: abi.Current, DecisionID: strings.ToLower(tool),
		Session:  abi.Session{ID: "2a178532", Cwd: cwd, Mode: "default"},
		ToolCall: abi.ToolCall{ID: "toolu_fake_0101", Title: tool + " " + filepath.Base(path), Kind: kind, RawInput: raw, Content: content, Locations: []abi.Location{{Path: path}}, ToolName: tool},
		Options:  claudeOptions,
		Paths:    []abi.Path{{Path: path, Access: access, InsideCwd: strings.HasPrefix(path, cwd+"/"), Source: "location"}},
	}
}

// codexExec is a codex-acp exec request: rawInput.command is an argv.
func codexExecReq(script string, shell *abi.Shell) abi.Request {
	raw, _ := json.Marshal(map[string]any{
		"call_id": "call_x", "turn_id": "1", "command": []string{"/bin/bash", "-lc", script},
		"cwd": cwd, "reason": "The build directory is stale", "proposed_execpolicy_amendment": strings.Fields(script),
	})
	return abi.Request{
		ABI: abi.Current, DecisionID: "codex-exec",
		Session:  abi.Session{ID: "0199a1b2-codex", Cwd: cwd, Agent: &abi.Peer{Name: "codex-acp", Version: "0.16.0"}},
		ToolCall: abi.ToolCall{ID: "call_x", Title: script, Kind: abi.KindExecute, RawInput: raw},
		Options:  codexExecOptions,
		Shell:    shell,
	}
}

// codexPatch is a codex-acp patch adding path.
func codexPatch(path string) abi.Request {
	raw, _ := json.Marshal(map[string]any{"call_id": "call_y", "changes": map[string]any{path: map[string]string{"type": "add", "content": "x\n"}}})
	content, _ := json.Marshal([]any{map[string]any{"type": "diff", "path": path, "newText": "x\n"}})
	return abi.Request{
		ABI: abi.Current, DecisionID: "codex-patch",
		Session:  abi.Session{ID: "0199a1b2-codex", Cwd: cwd},
		ToolCall: abi.ToolCall{ID: "call_y", Title: "Edit " + path, Kind: abi.KindEdit, RawInput: raw, Content: content, Locations: []abi.Location{{Path: path}}},
		Options:  codexPatchOptions,
		Paths:    []abi.Path{{Path: path, Access: abi.AccessWrite, InsideCwd: strings.HasPrefix(path, cwd+"/"), Source: "diff"}},
	}
}

// parsed is a shell analysis of simple commands, one per argv.
func parsed(source string, argvs ...[]string) *abi.Shell {
	s := &abi.Shell{Source: source, Parsed: true}
	for _, a := range argvs {
		s.Commands = append(s.Commands, abi.Command{Argv: a})
	}
	return s
}

func withConfig(r abi.Request, config string) abi.Request {
	r.Config = json.RawMessage(config)
	return r
}

func withKind(r abi.Request, kind, toolName string) abi.Request {
	r.ToolCall.Kind, r.ToolCall.ToolName = kind, toolName
	return r
}

// chosen is the option id the host answers the agent with for d.
func chosen(d abi.Decision, options []abi.Option) string {
	o, _ := d.Option(options)
	return o.OptionID
}
