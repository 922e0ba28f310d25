package examples_test

import (
	"bytes"
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
	"unicode"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/profile"
	"github.com/permhost/permhost/policy"
	"github.com/permhost/permhost/sandbox"
)

// exampleBuilds serialises make runs per plugin within this test binary.
var exampleBuilds sync.Map // name -> *exampleBuild

type exampleBuild struct {
	once sync.Once
	path string
	err  error
}

// exampleWasm returns the built module of the example plugin name, running
// plugins.mk for it (a no-op when it is up to date, and able to build the
// AssemblyScript plugin too) into $PERMHOST_PLUGINS_DIR, or
// <repo>/build/plugins when that is unset.
func exampleWasm(t testing.TB, name string) string {
	t.Helper()
	root := acptest.RepoRoot(t)
	out := os.Getenv("PERMHOST_PLUGINS_DIR")
	if out == "" {
		out = filepath.Join(root, "build", "plugins")
	}
	v, _ := exampleBuilds.LoadOrStore(name, &exampleBuild{})
	b := v.(*exampleBuild)
	b.once.Do(func() {
		b.path = filepath.Join(out, name+".wasm")
		cmd := exec.Command("make", "-s", "-f", filepath.Join(root, "plugins", "examples", "plugins.mk"), "OUT="+out, b.path)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Run(); err != nil {
			b.err = err
			b.path = stderr.String()
		}
	})
	if b.err != nil {
		t.Fatalf("building %s (make plugins): %v\n%s", name, b.err, b.path)
	}
	return b.path
}

// loadExample loads the example plugin name through the real host, and
// closes it when the test ends. It loads without a fixed config, so the
// host hands each request's own Config to the plugin: one compile serves
// every configuration a test tries. The deadline is generous because these
// tests check decisions, not speed, on a machine that may be busy (and
// under -race: a fresh Go instance's _initialize and first call measured
// 70-420 ms, past the default 100 ms deadline); the compile cache is shared
// by the runs of one user.
func loadExample(t testing.TB, name string) *host.Plugin {
	t.Helper()
	ctx := context.Background()
	cache := filepath.Join(os.TempDir(), fmt.Sprintf("permhost-examples-test-%d", os.Getuid()))
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := host.Load(ctx, host.Options{
		Path:     exampleWasm(t, name),
		CacheDir: cache,
		Limits:   sandbox.Limits{Timeout: 30 * time.Second},
	})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	return p
}

// transcriptRequests returns the Request of each
// session/request_permission of a shared transcript, in order, as permhost's
// proxy builds it (policy.RecordedRequests). Shell and Paths are left to the
// caller (see withLocationPaths): the shell analysis is not this package's,
// and some tests want a request without paths.
func transcriptRequests(t testing.TB, file string) []abi.Request {
	t.Helper()
	f, err := os.Open(filepath.Join(acptest.TranscriptDir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := policy.ReadRecording(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	reqs, err := policy.RecordedRequests(context.Background(), lines, "")
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(reqs) == 0 {
		t.Fatalf("%s: no permission request", file)
	}
	for i := range reqs {
		reqs[i].Shell, reqs[i].Paths = nil, nil
	}
	return reqs
}

// built is the request permhost builds for a session/request_permission
// with these params from the agent that sent agentInfo name and version:
// the real path (policy.BuildRequest: profile, shell analysis, paths,
// grants), without earlier tool-call updates.
func built(t testing.TB, name, version, params string) abi.Request {
	t.Helper()
	var p struct {
		SessionID string                 `json:"sessionId"`
		ToolCall  json.RawMessage        `json:"toolCall"`
		Options   []acp.PermissionOption `json:"options"`
	}
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	var tc struct {
		ToolCallID string `json:"toolCallId"`
	}
	_ = json.Unmarshal(p.ToolCall, &tc)
	pr := &acp.PermissionRequest{
		ID: json.RawMessage("0"), Params: json.RawMessage(params), SessionID: p.SessionID,
		ToolCallID: tc.ToolCallID, ToolCall: p.ToolCall, Options: p.Options,
		Session: acp.SessionInfo{ID: p.SessionID, Cwd: cwd, Mode: "default", Agent: acp.Peer{Name: name, Version: version}},
	}
	req, err := policy.BuildRequest(pr, "built", home)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// withLocationPaths fills Paths from the tool call's locations, as the
// context builder does: read access for a read or search, write otherwise.
// (transcriptRequests leaves Paths empty; the action keeps the files.)
func withLocationPaths(r abi.Request) abi.Request {
	access := abi.AccessWrite
	if r.ToolCall.Kind == abi.KindRead || r.ToolCall.Kind == abi.KindSearch {
		access = abi.AccessRead
	}
	for _, l := range r.ToolCall.Locations {
		inside := r.Session.Cwd != "" && strings.HasPrefix(l.Path, strings.TrimSuffix(r.Session.Cwd, "/")+"/")
		r.Paths = append(r.Paths, abi.Path{Path: l.Path, Access: access, InsideCwd: inside, Source: "location"})
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
	codexPatchOptions = []abi.Option{
		{OptionID: "approved", Name: "Yes", Kind: abi.OptionAllowOnce},
		{OptionID: "abort", Name: "No, and tell Codex what to do differently", Kind: abi.OptionRejectOnce},
	}
)

const (
	cwd  = "/home/dev/project"
	home = "/home/dev"
)

// familyOf is the family a claude-agent-acp call of kind and toolName has,
// as its profile reads it.
func familyOf(kind, toolName string) string {
	tc, _ := json.Marshal(map[string]string{"toolCallId": "t", "kind": kind, "name": toolName})
	f, err := profile.ByName("claude-agent-acp").Read(tc, cwd, home)
	if err != nil {
		panic(err)
	}
	return f.Action.Family
}

// claudeBash is a claude-agent-acp Bash request for script; shell is the
// analysis, or nil for a request without one.
func claudeBash(script, description string, shell *abi.Shell) abi.Request {
	raw, _ := json.Marshal(map[string]string{"command": script, "description": description})
	content, _ := json.Marshal([]any{map[string]any{"type": "content", "content": map[string]string{"type": "text", "text": description}}})
	return abi.Request{
		ABI: abi.Current, DecisionID: "bash",
		Session:  abi.Session{ID: "2a178532", Cwd: cwd, Mode: "default", Home: home, Agent: &abi.Peer{Name: "@zed-industries/claude-agent-acp", Version: "0.23.1", Profile: "claude-agent-acp"}},
		ToolCall: abi.ToolCall{ID: "toolu_fake_0100", Title: script, Kind: abi.KindExecute, RawInput: raw, Content: content, ToolName: "Bash"},
		Action:   &abi.Action{Family: abi.FamilyShell, Command: script, Cwd: cwd},
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
		Session:  abi.Session{ID: "2a178532", Cwd: cwd, Mode: "default", Home: home},
		ToolCall: abi.ToolCall{ID: "toolu_fake_0101", Title: tool + " " + filepath.Base(path), Kind: kind, RawInput: raw, Content: content, Locations: []abi.Location{{Path: path}}, ToolName: tool},
		Action:   &abi.Action{Family: kind, Paths: []string{path}},
		Options:  claudeOptions,
		Paths:    []abi.Path{{Path: path, Access: access, InsideCwd: strings.HasPrefix(path, cwd+"/"), Source: "location"}},
	}
}

// codexExec is a codex-acp 0.16.0 exec request as described in
// docs/acp-reference.md §9 (no codex transcript is recorded): the script
// runs under /bin/bash -lc, and the options are approved (allow_once),
// approved-execpolicy-amendment (allow_always) and abort (reject_once).
// shell is the analysis, or nil for a request without one.
func codexExec(script string, shell *abi.Shell) abi.Request {
	raw, _ := json.Marshal(map[string]any{
		"call_id": "call_x", "turn_id": "1", "command": []string{"/bin/bash", "-lc", script},
		"cwd": cwd, "reason": "The build directory is stale", "proposed_execpolicy_amendment": strings.Fields(script),
	})
	return abi.Request{
		ABI: abi.Current, DecisionID: "codex-exec",
		Session:  abi.Session{ID: "0199a1b2-codex", Cwd: cwd, Home: home, Agent: &abi.Peer{Name: "codex-acp", Version: "0.16.0", Profile: "codex-acp"}},
		ToolCall: abi.ToolCall{ID: "call_x", Title: script, Kind: abi.KindExecute, Status: "pending", RawInput: raw},
		Action:   &abi.Action{Family: abi.FamilyShell, Command: script, Cwd: cwd},
		Options: []abi.Option{
			{OptionID: "approved", Name: "Yes, proceed", Kind: abi.OptionAllowOnce},
			{OptionID: "approved-execpolicy-amendment", Name: "Yes, and don't ask again for commands that start with `" + script + "`", Kind: abi.OptionAllowAlways, Durable: true},
			{OptionID: "abort", Name: "No, and tell Codex what to do differently", Kind: abi.OptionRejectOnce},
		},
		Shell: shell,
	}
}

// codexPatch is a codex-acp patch adding path.
func codexPatch(path string) abi.Request {
	raw, _ := json.Marshal(map[string]any{"call_id": "call_y", "changes": map[string]any{path: map[string]string{"type": "add", "content": "x\n"}}})
	content, _ := json.Marshal([]any{map[string]any{"type": "diff", "path": path, "newText": "x\n"}})
	return abi.Request{
		ABI: abi.Current, DecisionID: "codex-patch",
		Session:  abi.Session{ID: "0199a1b2-codex", Cwd: cwd, Home: home},
		ToolCall: abi.ToolCall{ID: "call_y", Title: "Edit " + path, Kind: abi.KindEdit, RawInput: raw, Content: content, Locations: []abi.Location{{Path: path}}},
		Action:   &abi.Action{Family: abi.FamilyEdit, Paths: []string{path}},
		Options:  codexPatchOptions,
		Paths:    []abi.Path{{Path: path, Access: abi.AccessWrite, InsideCwd: strings.HasPrefix(path, cwd+"/"), Source: "diff"}},
	}
}

// parsedShell is what the shell analysis gives for a script of plain
// commands; tests write the commands by hand.
func parsedShell(source string, cmds ...abi.Command) *abi.Shell {
	return &abi.Shell{Source: source, Parsed: true, Commands: cmds}
}

func argv(words ...string) abi.Command { return abi.Command{Argv: words} }

func withConfig(r abi.Request, config string) abi.Request {
	r.Config = json.RawMessage(config)
	return r
}

// withKind makes r a call of another kind and tool, with the action's
// family a claude-agent-acp profile would give it.
func withKind(r abi.Request, kind, toolName string) abi.Request {
	r.ToolCall.Kind, r.ToolCall.ToolName = kind, toolName
	a := abi.Action{Family: familyOf(kind, toolName)}
	if r.Action != nil {
		a.Paths = r.Action.Paths
	}
	r.Action = &a
	return r
}

func withHome(r abi.Request, home string) abi.Request {
	r.Session.Home = home
	return r
}

// chosen is the option id the host answers the agent with for d.
func chosen(d abi.Decision, options []abi.Option) string {
	o, _ := d.Option(options)
	return o.OptionID
}

type pluginCase struct {
	name string
	req  abi.Request
	// want is the outcome; optionID the option the host then answers with
	// ("" for none); reason a substring of the reason.
	want     abi.Outcome
	optionID string
	reason   string
	// failure, when set, is the failure kind expected instead of a decision.
	failure host.Kind
}

// runCases decides each case with p. Besides the case's own expectations,
// every reason must be fit to show a person (no control characters, at
// most 600 bytes) and no answer may pick a durable option.
// A standard plugin with a Go reference implementation must also answer
// each case exactly as the reference does (differential_test.go).
func runCases(t *testing.T, p *host.Plugin, cases []pluginCase) {
	t.Helper()
	ref := referenceOf(t, p)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if ref != nil {
				sameAnswer(t, "case", p, ref, tc.req)
			}
			d, err := p.Decide(context.Background(), tc.req)
			if tc.failure != "" {
				if host.KindOf(err) != tc.failure {
					t.Fatalf("decision %+v, err %v; want a %s failure", d, err, tc.failure)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.want {
				t.Fatalf("outcome %q (reason %q), want %q", d.Outcome, d.Reason, tc.want)
			}
			if got := chosen(d, tc.req.Options); got != tc.optionID {
				t.Errorf("answers option %q, want %q", got, tc.optionID)
			}
			if !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", d.Reason, tc.reason)
			}
			if strings.ContainsFunc(d.Reason, unicode.IsControl) || len(d.Reason) > 600 {
				t.Errorf("reason unfit to show: %q", d.Reason)
			}
			if o, ok := d.Option(tc.req.Options); ok && o.Durable {
				t.Errorf("picked the durable option %q", o.OptionID)
			}
		})
	}
}
