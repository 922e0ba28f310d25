package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
)

// ErrTestFile is wrapped by errors in a test file.
var ErrTestFile = errors.New("policy: bad test file")

// TestFileError is a mistake in a test file, printed as a configuration's
// are: file, line, key, and what is wrong with a suggestion.
type TestFileError struct {
	File string
	Line int    // 0 when unknown
	Key  string // "case[1].comand"; empty for the file as a whole
	Msg  string
}

func (e *TestFileError) Error() string {
	return (&config.Error{File: e.File, Line: e.Line, Key: e.Key, Msg: e.Msg}).Error()
}

func (e *TestFileError) Unwrap() error { return ErrTestFile }

// tomlKeys are the keys a struct's toml tags declare.
func tomlKeys(v any) []string {
	t := reflect.TypeOf(v)
	var keys []string
	for i := range t.NumField() {
		if k := t.Field(i).Tag.Get("toml"); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// undecodedError words a key the test file's format does not have, found
// at its first line in the file (md.Undecoded drops the case's index).
func undecodedError(path string, lines map[string]int, k toml.Key) *TestFileError {
	plain := k.String()
	e := &TestFileError{File: path, Key: plain}
	for key, n := range lines {
		if stripIndexes(key) == plain && (e.Line == 0 || n < e.Line) {
			e.Line, e.Key = n, key
		}
	}
	var known []string
	what := "the keys of a test file"
	switch {
	case len(k) == 1:
		known = tomlKeys(TestFile{})
	case k[0] == "case":
		known, what = tomlKeys(TestCase{}), "the keys of a [[case]]"
	case k[0] == "defaults":
		known, what = tomlKeys(CaseDefaults{}), "the keys of [defaults]"
	}
	e.Msg = "unknown key" + config.DidYouMean(k[len(k)-1], known, what)
	return e
}

// stripIndexes drops the "[N]" of each array element from a key path.
func stripIndexes(key string) string {
	var b strings.Builder
	skip := false
	for _, r := range key {
		switch {
		case r == '[':
			skip = true
		case r == ']':
			skip = false
		case !skip:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestFile is a file of test cases for a plugin or a bundle (TOML):
//
//	plugin = "plan-mode.wasm"   # relative to this file; absent in a bundle's tests
//	[config]                    # the plugin's [plugin.config]
//	[defaults]                  # options = "claude" | "codex" | "sdk"; cwd; home; mode; timeout
//	[[case]]
//	name = "rm -rf is rejected"
//	kind = "execute"            # shorthand: a tool kind and a command or a path
//	command = "rm -rf ~"
//	expect = "reject"           # allow, reject, cancel, ask, abstain, select, fallback
//	expect_option = "reject"    # and/or the option id answered
//
// A case may instead give request = "file.json" (an ACP
// session/request_permission message or its params) or an inline
// [case.request] table holding the params.
type TestFile struct {
	Path     string
	Plugin   string         `toml:"plugin"`
	Config   map[string]any `toml:"config"`
	Defaults CaseDefaults   `toml:"defaults"`
	Cases    []TestCase     `toml:"case"`
}

// CaseDefaults apply to every case that does not say.
type CaseDefaults struct {
	Options string `toml:"options"`
	Cwd     string `toml:"cwd"`
	// Home is the session's home directory (session.home), so that a test
	// of "~" does not depend on who runs it; default: the runner's.
	Home string `toml:"home"`
	// Agent is the agentInfo of the session, "name@version"
	// ("gemini-cli@0.61.0"): the agent whose profile reads the request.
	// Default: none, read with the generic profile.
	Agent   string `toml:"agent"`
	Mode    string `toml:"mode"`
	Timeout string `toml:"timeout"`
}

// TestCase is one case.
type TestCase struct {
	Name         string `toml:"name"`
	Kind         string `toml:"kind"`
	Command      string `toml:"command"`
	Path         string `toml:"path"`
	Title        string `toml:"title"`
	URL          string `toml:"url"`
	Options      string `toml:"options"`
	Cwd          string `toml:"cwd"`
	Home         string `toml:"home"`
	Agent        string `toml:"agent"`
	Mode         string `toml:"mode"`
	Timeout      string `toml:"timeout"`
	Request      any    `toml:"request"`
	Expect       string `toml:"expect"`
	ExpectOption string `toml:"expect_option"`
}

// LoadTestFile reads and checks a test file.
func LoadTestFile(path string) (*TestFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tf := &TestFile{Path: path}
	md, err := toml.Decode(string(data), tf)
	if err != nil {
		e := &TestFileError{File: path, Msg: err.Error()}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			e.Line, e.Msg = pe.Position.Line, pe.Message
		}
		return nil, e
	}
	lines := config.KeyLines(data)
	var errs []error
	for _, k := range md.Undecoded() {
		// Free-form tables: a request's params and a plugin's config.
		if len(k) > 2 && k[0] == "case" && k[1] == "request" || len(k) > 1 && k[0] == "config" {
			continue
		}
		errs = append(errs, undecodedError(path, lines, k))
	}
	if len(tf.Cases) == 0 && len(errs) == 0 {
		errs = append(errs, &TestFileError{File: path, Msg: "no [[case]]"})
	}
	for i, c := range tf.Cases {
		key := fmt.Sprintf("case[%d]", i)
		caseErr := func(k, format string, args ...any) {
			line := lines[key+"."+k]
			if line == 0 {
				line, k = lines[key], ""
			}
			full := key
			if k != "" {
				full += "." + k
			}
			msg := fmt.Sprintf(format, args...)
			if c.Name != "" {
				msg = fmt.Sprintf("(%q) %s", c.Name, msg)
			}
			errs = append(errs, &TestFileError{File: path, Line: line, Key: full, Msg: msg})
		}
		if c.Expect == "" && c.ExpectOption == "" {
			caseErr("", "give expect or expect_option")
		}
		switch c.Expect {
		case "", "allow", "reject", "cancel", "ask", "abstain", "select", "fallback":
		default:
			outcomes := []string{"allow", "reject", "cancel", "ask", "abstain", "select", "fallback"}
			caseErr("expect", "%q is not an outcome%s", c.Expect, config.DidYouMean(c.Expect, outcomes, "outcomes"))
		}
		if c.Request == nil && c.Kind == "" {
			caseErr("", "give kind (with command, path or url) or request")
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return tf, nil
}

// optionPresets are the option sets real agents offer.
var optionPresets = map[string]string{
	"claude": `[{"optionId":"allow_always","name":"Always Allow","kind":"allow_always"},{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]`,
	"codex":  `[{"optionId":"approved","name":"Yes, proceed","kind":"allow_once"},{"optionId":"approved-execpolicy-amendment","name":"Yes, and don't ask again for these commands","kind":"allow_always"},{"optionId":"abort","name":"No, and tell Codex what to do differently","kind":"reject_once"}]`,
	"sdk":    `[{"optionId":"allow","name":"Allow this change","kind":"allow_once"},{"optionId":"reject","name":"Skip this change","kind":"reject_once"}]`,
}

// Shorthand describes a synthetic permission request: a tool kind with a
// command, a path or a URL, and an agent's option set.
type Shorthand struct {
	Kind, Command, Path, URL, Title string
	Options                         string // claude (default), codex or sdk
	SessionID, Cwd, Mode            string
}

// Request builds the ACP permission request the shorthand describes, shaped
// as claude-agent-acp sends it (codex-acp's argv form for codex).
func (s Shorthand) Request() (*acp.PermissionRequest, error) {
	opts := s.Options
	if opts == "" {
		opts = "claude"
	}
	preset, ok := optionPresets[opts]
	if !ok {
		return nil, &TestFileError{Msg: fmt.Sprintf("options %q is not one of claude, codex, sdk", opts)}
	}
	cwd := s.Cwd
	if cwd == "" {
		cwd = "/home/dev/project"
	}
	path := s.Path
	if path != "" && !filepath.IsAbs(path) && !strings.HasPrefix(path, "~") {
		path = strings.TrimSuffix(cwd, "/") + "/" + path // not cleaned: k/../x is judged as the OS opens it
	}
	tc := map[string]any{"toolCallId": "call_test", "kind": s.Kind, "status": "pending"}
	raw := map[string]any{}
	title := s.Title
	switch {
	case s.Command != "":
		if opts == "codex" {
			raw["command"] = []string{"/bin/bash", "-lc", s.Command}
			raw["cwd"] = cwd
		} else {
			raw["command"] = s.Command
		}
		if title == "" {
			title = s.Command
		}
	case s.URL != "":
		raw["url"] = s.URL
		if title == "" {
			title = "Fetch " + s.URL
		}
	case path != "":
		raw["file_path"] = path
		tc["locations"] = []map[string]any{{"path": path}}
		if title == "" {
			title = strings.ToUpper(s.Kind[:1]) + s.Kind[1:] + " " + filepath.Base(path)
		}
	}
	tc["title"], tc["rawInput"] = title, raw
	sid := s.SessionID
	if sid == "" {
		sid = "test-session"
	}
	params := marshal(map[string]any{"sessionId": sid, "toolCall": tc, "options": json.RawMessage(preset)})
	return paramsRequest(params, acp.SessionInfo{ID: sid, Cwd: cwd, Mode: s.Mode})
}

// paramsRequest wraps session/request_permission params as the proxy would
// hand them to a handler (without earlier tool-call state).
func paramsRequest(params json.RawMessage, session acp.SessionInfo) (*acp.PermissionRequest, error) {
	var p struct {
		SessionID string                 `json:"sessionId"`
		ToolCall  json.RawMessage        `json:"toolCall"`
		Options   []acp.PermissionOption `json:"options"`
		Meta      json.RawMessage        `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &TestFileError{Key: "request", Msg: fmt.Sprintf("params: %v", err)}
	}
	v2, subjectToolCall, subjectToolCallID := paramsV2(params) // policy/request_v2.go
	if p.ToolCall == nil {
		p.ToolCall = subjectToolCall
	}
	tc := struct {
		ToolCallID string `json:"toolCallId"`
	}{subjectToolCallID}
	_ = json.Unmarshal(p.ToolCall, &tc)
	if session.ID == "" {
		session.ID = p.SessionID
	}
	line := append(append([]byte(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":`), params...), '}')
	return &acp.PermissionRequest{ID: json.RawMessage("0"), Line: line, Params: params, SessionID: p.SessionID,
		ToolCallID: tc.ToolCallID, ToolCall: p.ToolCall, Options: p.Options, Meta: p.Meta, Session: session, V2: v2}, nil
}

// caseRequest builds the request of case c.
func (tf *TestFile) caseRequest(c TestCase) (*acp.PermissionRequest, error) {
	pick := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	session := acp.SessionInfo{Cwd: pick(c.Cwd, tf.Defaults.Cwd), Mode: pick(c.Mode, tf.Defaults.Mode),
		Agent: agentPeer(pick(c.Agent, tf.Defaults.Agent))}
	switch r := c.Request.(type) {
	case nil:
		pr, err := Shorthand{Kind: c.Kind, Command: c.Command, Path: c.Path, URL: c.URL, Title: c.Title,
			Options: pick(c.Options, tf.Defaults.Options), Cwd: session.Cwd, Mode: session.Mode}.Request()
		if pr != nil {
			pr.Session.Agent = session.Agent
		}
		return pr, err
	case string:
		data, err := os.ReadFile(filepath.Join(filepath.Dir(tf.Path), r))
		if err != nil {
			return nil, err
		}
		var msg struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(data, &msg) == nil && msg.Method == acp.MethodRequestPermission {
			data = msg.Params
		}
		return paramsRequest(data, session)
	case map[string]any:
		return paramsRequest(marshal(r), session)
	default:
		return nil, &TestFileError{Key: "request", Msg: "must be a file name or a table"}
	}
}

// agentPeer reads "name@version" (the version after the last "@" that is
// not the first character, so "@scope/name@1.0" works).
func agentPeer(s string) acp.Peer {
	if i := strings.LastIndexByte(s, '@'); i > 0 {
		return acp.Peer{Name: s[:i], Version: s[i+1:]}
	}
	return acp.Peer{Name: s}
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	File, Name string
	Pass       bool
	// Problem says what went wrong: the expectation and the decision that
	// happened.
	Problem  string
	Verdict  host.Verdict
	Duration time.Duration
}

// RunTests runs every case of tf through chain. home is the session's home
// directory for cases whose file does not give one.
func RunTests(ctx context.Context, tf *TestFile, chain *host.Chain, home string) []CaseResult {
	var out []CaseResult
	for i, c := range tf.Cases {
		r := CaseResult{File: tf.Path, Name: c.Name}
		if r.Name == "" {
			r.Name = fmt.Sprintf("case %d", i+1)
		}
		timeout := time.Duration(0)
		if s := firstNonEmpty(c.Timeout, tf.Defaults.Timeout); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				r.Problem = fmt.Sprintf("timeout %q: %v", s, err)
				out = append(out, r)
				continue
			}
			timeout = d
		}
		if timeout == 0 {
			timeout = 10 * time.Second
		}
		pr, err := tf.caseRequest(c)
		if err == nil {
			var req abi.Request
			req, err = BuildRequest(pr, fmt.Sprintf("test-%d", i+1), firstNonEmpty(c.Home, firstNonEmpty(tf.Defaults.Home, home)))
			if err == nil {
				cctx, cancel := context.WithTimeout(ctx, timeout)
				start := time.Now()
				r.Verdict = chain.Run(cctx, req)
				r.Duration = time.Since(start)
				if cctx.Err() != nil {
					err = fmt.Errorf("no decision within the case's timeout %s", timeout)
				}
				cancel()
			}
		}
		if err != nil {
			r.Problem = err.Error()
		} else {
			r.Problem = checkCase(c, r.Verdict)
		}
		r.Pass = r.Problem == ""
		out = append(out, r)
	}
	return out
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkCase compares a verdict with a case's expectations.
func checkCase(c TestCase, v host.Verdict) string {
	got := string(v.Outcome)
	if v.Fallback != "" && !v.Decided() {
		got = "fallback"
	}
	var want []string
	if c.Expect != "" && c.Expect != got {
		want = append(want, "expect "+c.Expect)
	}
	if c.ExpectOption != "" && c.ExpectOption != v.OptionID {
		want = append(want, fmt.Sprintf("expect_option %q", c.ExpectOption))
	}
	if len(want) == 0 {
		return ""
	}
	return fmt.Sprintf("%s, got %s", strings.Join(want, " and "), describeVerdict(v))
}

// describeVerdict says in one line what a chain decided and why.
func describeVerdict(v host.Verdict) string {
	s := string(v.Outcome)
	if v.OptionID != "" {
		s += fmt.Sprintf(" (option %q)", v.OptionID)
	}
	if v.DecidedBy != "" {
		s += " by " + v.DecidedBy
	}
	if v.Reason != "" {
		s += fmt.Sprintf(": %q", v.Reason)
	}
	if v.Fallback != "" {
		s += "; fallback: " + v.Fallback
	}
	for _, vote := range v.Votes {
		if vote.Err != nil {
			s += fmt.Sprintf("; %s failed: %v", vote.Plugin, vote.Err)
		}
	}
	return s
}
