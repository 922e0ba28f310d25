package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/acptest"
)

// The pipeline tests run `permhost proxy --config permhost.toml --
// pipelineagent` (testdata/pipelineagent: a separate process that plays the
// agent side of a transcript and appends every line it receives to a report
// file) with a test client on permhost's stdin/stdout, then read three
// records: what the client received, what the agent received, and the
// decision log.

// pipeWait bounds every wait of these tests. Nothing should take more than
// a fraction of it, but loading a Go plugin from the compile cache takes ~3 s
// of CPU under -race, and several proxies do it at once on a small, busy
// machine.
const pipeWait = 45 * time.Second

// pipelineAgent builds testdata/pipelineagent once per run.
func pipelineAgent(t *testing.T) string { return testAgent(t, "pipelineagent") }

var warmed sync.Map // plugin path -> *warmOnce

type warmOnce struct {
	once sync.Once
	err  error
}

// warmPlugin loads a plugin once with `permhost eval`, which fills the
// compile cache the proxies of these tests share: a cold compile of a Go
// plugin takes many seconds (tens under -race), and several proxies
// compiling the same module at once on a small machine would each wait for
// all of them.
func warmPlugin(t *testing.T, path string) string {
	t.Helper()
	w, _ := warmed.LoadOrStore(path, &warmOnce{})
	wo := w.(*warmOnce)
	wo.once.Do(func() {
		req := filepath.Join(t.TempDir(), "request.json")
		if err := os.WriteFile(req, []byte(`{"decisionId":"warm","session":{"id":"s"},"toolCall":{"id":"t","kind":"read"},"options":[]}`), 0o600); err != nil {
			wo.err = err
			return
		}
		out, err := exec.Command(permhostBin, "eval", "--plugin", path, "--timeout", "60s", req).CombinedOutput()
		if err != nil {
			wo.err = fmt.Errorf("permhost eval %s: %v\n%s", path, err, out)
		}
	})
	if wo.err != nil {
		t.Fatal(wo.err)
	}
	return path
}

// wasmFixture is a plugin of testdata/wasm.
func wasmFixture(name string) string {
	return filepath.Join(repoRoot, "testdata", "wasm", name+".wasm")
}

// pluginSpec is one [[plugin]] of a test configuration.
type pluginSpec struct {
	name, path, timeout, policy string
	layer                       string // "" means user
	config                      string // TOML lines of [plugin.config]
}

// scripted is the scripted fixture deciding decision after delayMs.
func scripted(name, decision string, delayMs int, timeout string) pluginSpec {
	return pluginSpec{name: name, path: wasmFixture("scripted"), timeout: timeout, policy: "closed",
		config: fmt.Sprintf("decision = '%s'\ndelay_ms = %d\n", decision, delayMs)}
}

// ungoverned are the [session] lines of a test about something else than
// governed sessions, whose agent replays a recording: it could not answer
// permhost's own switch of mode, nor serve the file requests a person
// would be asked about.
const ungoverned = "modes = \"pass\"\nfs = \"pass\"\n"

// writeConfig writes permhost.toml into a fresh directory and returns its
// path and the decision log's. It keeps the agent's own "always" options
// (allow_always = "agent").
func writeConfig(t *testing.T, strategy string, plugins ...pluginSpec) (cfg, log string) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "strategy = %q\nperson_timeout = \"0s\"\n\n[log]\npath = \"decisions.jsonl\"\n", strategy)
	// These tests check the chain and how the agent's own options are
	// forwarded and answered; permhost's grants, the default allow_always,
	// are grants_test.go's, governed modes and fs governed_test.go's (the
	// recorded transcripts these agents replay cannot answer permhost's
	// own switch of mode).
	b.WriteString("\n[session]\nallow_always = \"agent\"\n" + ungoverned)
	for _, p := range plugins {
		layer := p.layer
		if layer == "" {
			layer = "user"
		}
		fmt.Fprintf(&b, "\n[[plugin]]\nname = %q\npath = %q\ntimeout = %q\nfailure_policy = %q\nlayer = %q\n",
			p.name, p.path, p.timeout, p.policy, layer)
		if p.config != "" {
			fmt.Fprintf(&b, "[plugin.config]\n%s", p.config)
		}
	}
	cfg = filepath.Join(dir, "permhost.toml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, filepath.Join(dir, "decisions.jsonl")
}

// wireMsg is one line the test client received.
type wireMsg struct {
	Raw    []byte
	ID     json.RawMessage // compact; nil for a notification
	Method string
	Params json.RawMessage
	Result json.RawMessage
}

func (m *wireMsg) isResponse() bool { return m.Method == "" && m.ID != nil }

func parseWire(raw []byte) *wireMsg {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
	}
	w := &wireMsg{Raw: raw}
	if json.Unmarshal(raw, &m) == nil {
		w.ID, w.Method, w.Params, w.Result = compact(m.ID), m.Method, m.Params, m.Result
	}
	return w
}

func compact(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// testClient is the editor side: it records every line permhost writes, in
// order, and answers permission requests with answer (nil: no answer), and
// the agent's other requests with serve when set.
type testClient struct {
	t      *testing.T
	w      io.Writer
	wmu    sync.Mutex
	answer func(*wireMsg) []byte
	serve  func(*wireMsg) []byte // set before the agent can send a request

	mu      sync.Mutex
	msgs    []*wireMsg
	changed chan struct{}
	eof     bool
}

func newTestClient(t *testing.T, r io.Reader, w io.Writer, answer func(*wireMsg) []byte) *testClient {
	c := &testClient{t: t, w: w, answer: answer, changed: make(chan struct{})}
	go c.read(r)
	return c
}

func (c *testClient) read(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			m := parseWire(bytes.TrimSuffix(line, []byte("\n")))
			c.mu.Lock()
			c.msgs = append(c.msgs, m)
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			if m.Method == "session/request_permission" && m.ID != nil && c.answer != nil {
				go func() {
					if a := c.answer(m); a != nil {
						c.send(a)
					}
				}()
			} else if m.Method != "" && m.ID != nil && c.serve != nil {
				go func() {
					if a := c.serve(m); a != nil {
						c.send(a)
					}
				}()
			}
		}
		if err != nil {
			c.mu.Lock()
			c.eof = true
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			return
		}
	}
}

func (c *testClient) send(line []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(append(bytes.Clone(line), '\n')); err != nil {
		c.t.Errorf("client write: %v", err)
	}
}

func (c *testClient) received() []*wireMsg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*wireMsg(nil), c.msgs...)
}

// waitFor returns the index and message of the first received line that
// match accepts, waiting up to pipeWait.
func (c *testClient) waitFor(what string, match func(*wireMsg) bool) (int, *wireMsg) {
	c.t.Helper()
	deadline := time.NewTimer(pipeWait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		msgs, changed, eof := c.msgs, c.changed, c.eof
		c.mu.Unlock()
		for i, m := range msgs {
			if match(m) {
				return i, m
			}
		}
		if eof {
			c.t.Fatalf("the client's input ended before %s", what)
		}
		select {
		case <-changed:
		case <-deadline.C:
			c.t.Fatalf("the client did not receive %s within %v", what, pipeWait)
		}
	}
}

// index returns the position of the first received line match accepts, or
// -1.
func (c *testClient) index(match func(*wireMsg) bool) int {
	for i, m := range c.received() {
		if match(m) {
			return i
		}
	}
	return -1
}

// playRequests sends the transcript's client->agent requests in order, each
// once the responses to the earlier ones have arrived (answers to permission
// requests and notifications are the test's business), and returns the
// response to the last.
func (c *testClient) playRequests(tr *acptest.Transcript) *wireMsg {
	c.t.Helper()
	var last *wireMsg
	var ids []json.RawMessage
	awaitAll := func() {
		for _, id := range ids {
			_, last = c.waitFor("the response to client request "+string(id), func(m *wireMsg) bool {
				return m.isResponse() && bytes.Equal(m.ID, id)
			})
		}
		ids = nil
	}
	for _, e := range tr.Entries {
		if e.Dir != acptest.ClientToAgent {
			continue
		}
		m := parseWire(e.Msg)
		if m.Method == "" || m.ID == nil {
			continue
		}
		awaitAll()
		c.send(e.Msg)
		ids = append(ids, m.ID)
	}
	awaitAll()
	return last
}

// pipelineRun is one permhost proxy with the pipeline agent and a client.
type pipelineRun struct {
	t      *testing.T
	tr     *acptest.Transcript
	proc   *acptest.Process
	client *testClient
	report string // what the agent received
	log    string // the decision log
}

// startPipeline starts permhost with config cfg in front of the pipeline
// agent playing tr.
func startPipeline(t *testing.T, cfg, log string, tr *acptest.Transcript, answer func(*wireMsg) []byte) *pipelineRun {
	t.Helper()
	report := filepath.Join(t.TempDir(), "agent-received.jsonl")
	argv := []string{permhostBin, "proxy", "--log-level", "debug", "--shutdown-grace", "2s", "--config", cfg, "--",
		pipelineAgent(t), "-transcript", acptest.WriteTranscript(t, tr), "-report", report, "-wait", pipeWait.String()}
	r := &pipelineRun{t: t, tr: tr, proc: acptest.Start(t, argv...), report: report, log: log}
	r.client = newTestClient(t, r.proc.Stdout, r.proc.Stdin, answer)
	t.Cleanup(func() {
		if t.Failed() {
			var b strings.Builder
			for _, m := range r.client.received() {
				fmt.Fprintf(&b, "  %.600s\n", m.Raw)
			}
			t.Logf("the client received:\n%s", b.String())
			rep, _ := os.ReadFile(r.report)
			t.Logf("the agent received:\n%s", rep)
			lg, _ := os.ReadFile(r.log)
			t.Logf("decision log:\n%s", lg)
		}
	})
	return r
}

// finish hangs up the client and checks that the agent (so permhost) exits
// 0: the agent saw every client message its transcript expects.
func (r *pipelineRun) finish() {
	r.t.Helper()
	r.proc.Stdin.Close()
	code, err := r.proc.Wait(pipeWait)
	if err != nil || code != 0 {
		r.t.Fatalf("permhost proxy exit %d, %v (non-zero: the agent missed a message)\nstderr:\n%s", code, err, r.proc.Stderr())
	}
}

// agentReceived returns the lines the agent has received so far.
func (r *pipelineRun) agentReceived() []*wireMsg {
	b, err := os.ReadFile(r.report)
	if err != nil && !os.IsNotExist(err) {
		r.t.Fatal(err)
	}
	var out []*wireMsg
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(line) > 0 {
			out = append(out, parseWire(line))
		}
	}
	return out
}

// agentAnswers returns the raw responses with id the agent received.
func (r *pipelineRun) agentAnswers(id json.RawMessage) []string {
	var out []string
	for _, m := range r.agentReceived() {
		if m.isResponse() && bytes.Equal(m.ID, id) {
			out = append(out, string(m.Raw))
		}
	}
	return out
}

// waitAgent waits until the agent has received a line match accepts.
func (r *pipelineRun) waitAgent(what string, match func(*wireMsg) bool) *wireMsg {
	r.t.Helper()
	deadline := time.Now().Add(pipeWait)
	for {
		for _, m := range r.agentReceived() {
			if match(m) {
				return m
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the agent did not receive %s within %v", what, pipeWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mark sends a notification the agent ignores and waits until the agent has
// it: every line the client sent before it has then reached the agent, or
// never will.
func (r *pipelineRun) mark(n int) {
	r.t.Helper()
	line := fmt.Sprintf(`{"jsonrpc":"2.0","method":"_e2e/marker","params":{"n":%d}}`, n)
	r.client.send([]byte(line))
	r.waitAgent("marker "+line, func(m *wireMsg) bool { return string(m.Raw) == line })
}

// logLine is one decision-log line, with the field names of the format.
type logLine struct {
	DecisionID string `json:"decisionId"`
	Via        string `json:"via"`
	Strategy   string `json:"strategy"`
	Session    string `json:"session"`
	ToolCall   struct {
		ID             string `json:"id"`
		Title          string `json:"title"`
		Kind           string `json:"kind"`
		RawInputSHA256 string `json:"rawInputSha256"`
	} `json:"toolCall"`
	Options []struct {
		OptionID string `json:"optionId"`
		Kind     string `json:"kind"`
		Durable  bool   `json:"durable"`
	} `json:"options"`
	Plugins []struct {
		Name     string `json:"name"`
		SHA256   string `json:"sha256"`
		Layer    string `json:"layer"`
		Policy   string `json:"failurePolicy"`
		Outcome  string `json:"outcome"`
		Reason   string `json:"reason"`
		Enforced bool   `json:"enforced"`
		Skipped  string `json:"skipped"`
		Failure  *struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"failure"`
		DurationUs int64 `json:"durationUs"`
	} `json:"plugins"`
	Outcome   string `json:"outcome"`
	OptionID  string `json:"optionId"`
	DecidedBy string `json:"decidedBy"`
	Reason    string `json:"reason"`
	Fallback  string `json:"fallback"`
	Person    *struct {
		Shown   []string `json:"shown"`
		Answer  string   `json:"answer"`
		Refused bool     `json:"refused"`
	} `json:"person"`
	LatencyUs int64 `json:"latencyUs"`
}

// decisions waits until the decision log has n lines and returns them keyed
// by tool-call id.
func (r *pipelineRun) decisions(n int) map[string]logLine {
	r.t.Helper()
	deadline := time.Now().Add(pipeWait)
	for {
		b, _ := os.ReadFile(r.log)
		lines := entryLines(bytes.Split(bytes.TrimSpace(b), []byte("\n")))
		if len(b) > 0 && len(lines) >= n && bytes.HasSuffix(b, []byte("\n")) {
			out := map[string]logLine{}
			for _, l := range lines {
				var e logLine
				dec := json.NewDecoder(bytes.NewReader(l))
				if err := dec.Decode(&e); err != nil {
					r.t.Fatalf("decision log line %s: %v", l, err)
				}
				if _, dup := out[e.ToolCall.ID]; dup {
					r.t.Errorf("two decision-log lines for tool call %s", e.ToolCall.ID)
				}
				out[e.ToolCall.ID] = e
			}
			if len(lines) != n {
				r.t.Errorf("decision log has %d lines, want %d", len(lines), n)
			}
			return out
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("decision log %s has %d lines after %v, want %d:\n%s", r.log, len(lines), pipeWait, n, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// entryLines drops the seal lines of a signed log ([log] key,
// docs/audit-log.md): every other line is an entry.
func entryLines(lines [][]byte) [][]byte {
	out := lines[:0:0]
	for _, l := range lines {
		var seal struct {
			Seal json.RawMessage `json:"seal"`
		}
		if json.Unmarshal(l, &seal) == nil && seal.Seal != nil {
			continue
		}
		out = append(out, l)
	}
	return out
}

// permRequest is a session/request_permission of a transcript.
type permRequest struct {
	seq        int // index into Entries
	id         json.RawMessage
	params     json.RawMessage
	toolCall   json.RawMessage
	toolCallID string
	title      string
	kind       string
	options    []permOption
	optionsRaw []json.RawMessage
	answer     []byte // the recorded answer, if any
}

type permOption struct {
	OptionID string `json:"optionId"`
	Kind     string `json:"kind"`
}

// permRequests lists the permission requests of tr with their recorded
// answers.
func permRequests(t *testing.T, tr *acptest.Transcript) []permRequest {
	t.Helper()
	var out []permRequest
	for i, e := range tr.Entries {
		m := parseWire(e.Msg)
		switch {
		case e.Dir == acptest.AgentToClient && m.Method == "session/request_permission":
			var p struct {
				ToolCall json.RawMessage   `json:"toolCall"`
				Options  []json.RawMessage `json:"options"`
			}
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatal(err)
			}
			var tc struct {
				ID    string `json:"toolCallId"`
				Title string `json:"title"`
				Kind  string `json:"kind"`
			}
			if err := json.Unmarshal(p.ToolCall, &tc); err != nil {
				t.Fatal(err)
			}
			pr := permRequest{seq: i, id: m.ID, params: m.Params, toolCall: p.ToolCall, toolCallID: tc.ID,
				title: tc.Title, kind: tc.Kind, optionsRaw: p.Options}
			for _, o := range p.Options {
				var po permOption
				if err := json.Unmarshal(o, &po); err != nil {
					t.Fatal(err)
				}
				pr.options = append(pr.options, po)
			}
			out = append(out, pr)
		case e.Dir == acptest.ClientToAgent && m.isResponse():
			for j := range out {
				if bytes.Equal(out[j].id, m.ID) && out[j].answer == nil {
					out[j].answer = e.Msg
				}
			}
		}
	}
	return out
}

// optionOfKind is the id of the first option of kind.
func (p permRequest) optionOfKind(kind string) string {
	for _, o := range p.options {
		if o.Kind == kind {
			return o.OptionID
		}
	}
	return ""
}

// laterAbout returns the agent's lines after the request that name its tool
// call.
func (p permRequest) laterAbout(tr *acptest.Transcript) [][]byte {
	var out [][]byte
	needle := []byte(`"toolCallId":"` + p.toolCallID + `"`)
	for _, e := range tr.Entries[p.seq+1:] {
		if e.Dir == acptest.AgentToClient && bytes.Contains(e.Msg, needle) {
			out = append(out, e.Msg)
		}
	}
	return out
}

// objectMember is one member of a JSON object, its value's bytes as written.
type objectMember struct {
	key   string
	value json.RawMessage
}

// members splits a JSON object, keeping order and bytes.
func members(t *testing.T, obj json.RawMessage) []objectMember {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", obj)
	}
	var out []objectMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, objectMember{tok.(string), v})
	}
	return out
}

// keepsAgentMeta checks that every member of the agent's _meta is in got
// unchanged; what names the message for the errors.
func keepsAgentMeta(t *testing.T, what string, got, agentMeta json.RawMessage) {
	t.Helper()
	for _, am := range members(t, orEmpty(agentMeta)) {
		if v := member(t, got, am.key); !bytes.Equal(v, am.value) {
			t.Errorf("%s _meta.%s = %s, want the agent's %s", what, am.key, v, am.value)
		}
	}
}

// without returns obj without the member key (compactly joined) and that
// member's value (nil when absent).
func without(t *testing.T, obj json.RawMessage, key string) (rest []byte, value json.RawMessage) {
	t.Helper()
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, m := range members(t, obj) {
		if m.key == key {
			value = m.value
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
		n++
	}
	b.WriteByte('}')
	return b.Bytes(), value
}

// member returns the value of key in obj, or nil.
func member(t *testing.T, obj json.RawMessage, key string) json.RawMessage {
	t.Helper()
	if len(obj) == 0 || string(obj) == "null" {
		return nil
	}
	_, v := without(t, obj, key)
	return v
}

// permhostDecision is _meta.permhost.decision on a tool_call_update.
type permhostDecision struct {
	Outcome   string `json:"outcome"`
	OptionID  string `json:"optionId"`
	DecidedBy string `json:"decidedBy"`
	Reason    string `json:"reason"`
}

// decisionUpdate finds permhost's tool_call_update for a tool call and
// checks that it carries the request's tool-call fields; it returns its
// index among the client's lines and the decision.
func (r *pipelineRun) decisionUpdate(p permRequest) (int, permhostDecision) {
	r.t.Helper()
	t := r.t
	i, m := r.client.waitFor("permhost's tool_call_update for "+p.toolCallID, func(m *wireMsg) bool {
		return m.Method == "session/update" && bytes.Contains(m.Raw, []byte(`"permhost":{"decision"`)) &&
			bytes.Contains(m.Raw, []byte(`"toolCallId":"`+p.toolCallID+`"`))
	})
	if sid, want := member(t, m.Params, "sessionId"), member(t, p.params, "sessionId"); !bytes.Equal(sid, want) {
		t.Errorf("update sessionId %s, want %s", sid, want)
	}
	upd := member(t, m.Params, "update")
	rest, kind := without(t, upd, "sessionUpdate")
	if string(kind) != `"tool_call_update"` {
		t.Errorf("sessionUpdate %s, want tool_call_update", kind)
	}
	gotFields, meta := without(t, rest, "_meta")
	wantFields, agentMeta := without(t, p.toolCall, "_meta")
	if !bytes.Equal(gotFields, wantFields) {
		t.Errorf("the update does not carry the request's tool-call fields:\n got %s\nwant %s", gotFields, wantFields)
	}
	keepsAgentMeta(t, "update", meta, agentMeta)
	var ph struct {
		Decision   permhostDecision `json:"decision"`
		DecisionID string           `json:"decisionId"`
	}
	if err := json.Unmarshal(member(t, meta, "permhost"), &ph); err != nil {
		t.Fatalf("update _meta.permhost: %v in %s", err, m.Raw)
	}
	return i, ph.Decision
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage(`{}`)
	}
	return b
}

// checkRejected checks a request a plugin rejected: the agent got its
// reject_once option with its own id, once; the client saw the decision
// before anything later about the call, and never the request.
func (r *pipelineRun) checkRejected(p permRequest, decidedBy string) {
	r.t.Helper()
	r.checkPluginAnswer(p, decidedBy)
	if i := r.client.index(func(m *wireMsg) bool {
		return m.Method == "session/request_permission" && bytes.Contains(m.Raw, []byte(`"toolCallId":"`+p.toolCallID+`"`))
	}); i >= 0 {
		r.t.Errorf("the client received the request permhost answered: %.200s", r.client.received()[i].Raw)
	}
}

// checkPluginAnswer checks that the agent got p's reject_once option with
// its own id, once, and that the client saw the decision before anything
// later about the call.
func (r *pipelineRun) checkPluginAnswer(p permRequest, decidedBy string) {
	r.t.Helper()
	t := r.t
	reject := p.optionOfKind("reject_once")
	want := selectedLine(p.id, reject)
	r.waitAgent("the answer to "+string(p.id), func(m *wireMsg) bool { return m.isResponse() && bytes.Equal(m.ID, p.id) })
	if got := r.agentAnswers(p.id); len(got) != 1 || !sameJSON(got[0], want) {
		t.Errorf("the agent's answers to request %s = %q, want exactly one: %s", p.id, got, want)
	}
	at, d := r.decisionUpdate(p)
	if d.Outcome != "reject" || d.OptionID != reject || d.DecidedBy != decidedBy || d.Reason == "" {
		t.Errorf("_meta.permhost.decision = %+v, want reject %q by %s with a reason", d, reject, decidedBy)
	}
	for _, later := range p.laterAbout(r.tr) {
		j, _ := r.client.waitFor("the agent's later line about "+p.toolCallID, func(m *wireMsg) bool { return bytes.Equal(m.Raw, later) })
		if j < at {
			t.Errorf("the client saw %.120s before permhost's decision on %s", later, p.toolCallID)
		}
	}
}

// forwarded returns the permission request for p the client received (once).
func (r *pipelineRun) forwarded(p permRequest) *wireMsg {
	r.t.Helper()
	_, m := r.client.waitFor("the request for "+p.toolCallID, func(m *wireMsg) bool {
		return m.Method == "session/request_permission" && bytes.Equal(m.ID, p.id)
	})
	n := 0
	for _, x := range r.client.received() {
		if x.Method == "session/request_permission" && bytes.Equal(x.ID, p.id) {
			n++
		}
	}
	if n != 1 {
		r.t.Errorf("the client received request %s %d times", p.id, n)
	}
	return m
}

// checkForwarded checks the request the client got for p: the agent's params
// but for _meta and the options (wantOptions: the agent's option elements
// kept, byte for byte, in order), the agent's own _meta keys kept, and
// permhost's decisionId and presentation record. It returns the decisionId.
func (r *pipelineRun) checkForwarded(p permRequest, wantOptions []string) string {
	r.t.Helper()
	t := r.t
	m := r.forwarded(p)
	gotRest, gotMeta := without(t, m.Params, "_meta")
	gotRest, gotOpts := without(t, gotRest, "options")
	wantRest, agentMeta := without(t, p.params, "_meta")
	wantRest, _ = without(t, wantRest, "options")
	if !bytes.Equal(gotRest, wantRest) {
		t.Errorf("forwarded params differ beyond _meta and options:\n got %s\nwant %s", gotRest, wantRest)
	}
	var opts []json.RawMessage
	if err := json.Unmarshal(gotOpts, &opts); err != nil {
		t.Fatalf("forwarded options %s: %v", gotOpts, err)
	}
	var got []string
	for _, o := range opts {
		got = append(got, string(o))
	}
	if strings.Join(got, "\n") != strings.Join(wantOptions, "\n") {
		t.Errorf("forwarded options:\n got %s\nwant %s", got, wantOptions)
	}
	keepsAgentMeta(t, "forwarded", gotMeta, agentMeta)
	var ph struct {
		DecisionID string `json:"decisionId"`
	}
	if err := json.Unmarshal(member(t, gotMeta, "permhost"), &ph); err != nil || !strings.HasPrefix(ph.DecisionID, "d-") {
		t.Errorf("forwarded _meta.permhost = %s (%v): want a decisionId", member(t, gotMeta, "permhost"), err)
	}
	if member(t, agentMeta, "permission") == nil {
		var rec struct {
			Version int    `json:"version"`
			Title   string `json:"title"`
		}
		if err := json.Unmarshal(member(t, gotMeta, "permission"), &rec); err != nil || rec.Version != 1 || rec.Title != p.title {
			t.Errorf("forwarded _meta.permission = %s (%v): want version 1, title %q", member(t, gotMeta, "permission"), err, p.title)
		}
	}
	return ph.DecisionID
}

// allOptions is every option element of p, as the agent wrote it.
func (p permRequest) allOptions() []string {
	var out []string
	for _, o := range p.optionsRaw {
		out = append(out, string(o))
	}
	return out
}

// oneTimeOptions is the allow_once and reject_once elements, in order.
func (p permRequest) oneTimeOptions() []string {
	var out []string
	for i, o := range p.options {
		if o.Kind == "allow_once" || o.Kind == "reject_once" {
			out = append(out, string(p.optionsRaw[i]))
		}
	}
	return out
}

// editorAnswer is an answer in an editor's own style (keys in another
// order, spaces, its own _meta), so that a byte-for-byte relay shows.
func editorAnswer(id json.RawMessage, optionID string) []byte {
	return fmt.Appendf(nil, `{"result": {"outcome": {"optionId": %q, "outcome": "selected"}, "_meta": {"editor": "e2e"}}, "id": %s, "jsonrpc": "2.0"}`, optionID, id)
}

// relayedAnswer is what the agent gets for editorAnswer(id, optionID): the
// answer re-encoded from what permhost read, the editor's _meta kept.
func relayedAnswer(id json.RawMessage, optionID string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":%q},"_meta":{"editor":"e2e"}}}`, id, optionID)
}

// allowOnceAnswers is an editor's answer to each of perms, by request id:
// the request's allow_once option.
func allowOnceAnswers(perms []permRequest) map[string][]byte {
	answers := map[string][]byte{}
	for _, p := range perms {
		answers[string(p.id)] = editorAnswer(p.id, p.optionOfKind("allow_once"))
	}
	return answers
}

// sameJSON reports whether a and b are the same JSON value (permhost's own
// lines need not keep any particular key order).
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// selectedLine is the answer selecting optionID for request id.
func selectedLine(id json.RawMessage, optionID string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":%q}}}`, id, optionID)
}

// loadTranscript loads a shared transcript by name.
func loadTranscript(t *testing.T, name string) *acptest.Transcript {
	t.Helper()
	tr, err := acptest.LoadTranscript(filepath.Join(acptest.TranscriptDir(t), name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
