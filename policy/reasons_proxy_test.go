package policy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
)

// peer is one side of an in-process acp.Proxy: what it writes and the
// lines it reads, in order, until the proxy closes its input.
type peer struct {
	w     *io.PipeWriter
	lines chan string
}

func (p peer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (p peer) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatal("the proxy closed the line")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line from the proxy")
		return ""
	}
}

// rest returns every line until the proxy closes the peer's input.
func (p peer) rest(t *testing.T) []string {
	t.Helper()
	var out []string
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-time.After(10 * time.Second):
			t.Fatal("the proxy did not close the line")
		}
	}
}

func lineChan(r io.Reader) chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// startProxy runs an acp.Proxy with handler h between an editor and an
// agent, both in the test.
func startProxy(t *testing.T, h acp.Handler) (editor, agent peer) {
	t.Helper()
	clientIn, editorW := io.Pipe()
	editorR, clientOut := io.Pipe()
	agentR, agentIn := io.Pipe()
	agentOut, agentW := io.Pipe()
	p, err := acp.NewProxy(acp.Options{Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(context.Background(), clientIn, clientOut, agentIn, agentOut)
		clientOut.Close()
		agentIn.Close()
	}()
	t.Cleanup(func() {
		editorW.Close()
		agentW.Close()
		<-done
	})
	return peer{editorW, lineChan(editorR)}, peer{agentW, lineChan(agentR)}
}

// initialize runs initialize through the proxy; the agent is claude-agent-acp
// 0.101.0 as recorded, with or without _meta.steering.
func initialize(t *testing.T, editor, agent peer, steering bool) {
	t.Helper()
	editor.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"ed","version":"1"}}}`)
	agent.next(t)
	meta := ""
	if steering {
		meta = `,"_meta":{"steering":{"supported":true}}`
	}
	agent.send(t, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"0.101.0"},"authMethods":[]`+meta+`}}`)
	editor.next(t)
}

const bashRequest = `{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":` + claudeBash + `}`

// TestSteeringFollowsAPluginReject: a plugin's reject reaches the agent,
// then a _session/steering request of permhost's own carrying the reason,
// cleaned, shaped as claude-agent-acp and codex-acp read it; the agent's
// answer to it never reaches the editor.
func TestSteeringFollowsAPluginReject(t *testing.T) {
	cfg := &config.Config{Strategy: config.StrategySequential, Session: config.Session{Reasons: config.ReasonsSteer}}
	s := newEngine(t, cfg, member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "rm -rf is not allowed\x1b[31m;\nuse make clean"}}))
	editor, agent := startProxy(t, s.engine.Handler())
	initialize(t, editor, agent, true)

	agent.send(t, bashRequest)
	if got := agent.next(t); got != `{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}` {
		t.Fatalf("the agent's answer = %s", got)
	}
	var steer struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			SessionID string `json:"sessionId"`
			Prompt    []struct {
				Type, Text string
			} `json:"prompt"`
			Meta struct {
				Steering struct {
					IdleBehavior string `json:"idleBehavior"`
				} `json:"steering"`
			} `json:"_meta"`
		} `json:"params"`
	}
	line := agent.next(t)
	if err := json.Unmarshal([]byte(line), &steer); err != nil {
		t.Fatal(err)
	}
	var id string
	_ = json.Unmarshal(steer.ID, &id)
	want := "The user's permission policy (permhost, plugin no-rm) rejected this tool call: rm -rf is not allowed [31m; use make clean (tool call: rm -rf build)"
	switch {
	case steer.Method != "_session/steering" || steer.JSONRPC != "2.0":
		t.Fatalf("after the answer the agent got %s", line)
	case !strings.HasPrefix(id, "permhost-") || len(id) != len("permhost-")+32:
		t.Errorf("id %s is not one of permhost's own", steer.ID)
	case steer.Params.SessionID != "2a178532-7f3e-4eef-ad46-ab41b93044de" || len(steer.Params.Prompt) != 1 ||
		steer.Params.Prompt[0].Type != "text" || steer.Params.Prompt[0].Text != want:
		t.Errorf("steering params = %s\nwant text %q", line, want)
	case steer.Params.Meta.Steering.IdleBehavior != "promptRequired":
		t.Errorf("the steering may start a turn of its own: %s", line)
	}

	// The agent's answer is permhost's; a marker after it shows the
	// editor got everything before.
	agent.send(t, `{"jsonrpc":"2.0","id":`+string(steer.ID)+`,"result":{"outcome":"injected"}}`)
	agent.send(t, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"2a178532-7f3e-4eef-ad46-ab41b93044de","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"marker"}}}}`)
	for {
		l := editor.next(t)
		if strings.Contains(l, "injected") || strings.Contains(l, "permhost-") {
			t.Fatalf("the editor saw permhost's steering: %s", l)
		}
		if strings.Contains(l, `"marker"`) {
			break
		}
	}
	entries := s.entries(t)
	if len(entries) != 1 {
		t.Fatalf("log = %v", entries)
	}
	if st, _ := entries[0]["steer"].(map[string]any); st["method"] != "_session/steering" || st["text"] != want {
		t.Errorf("log steer = %v", entries[0]["steer"])
	}
}

// TestNoSteeringUnlessAdvertisedAndOn: nothing follows the reject when the
// agent did not advertise the extension, or [session] reasons is off.
func TestNoSteeringUnlessAdvertisedAndOn(t *testing.T) {
	for _, tt := range []struct {
		name      string
		reasons   string
		advertise bool
	}{
		{"not advertised", config.ReasonsSteer, false},
		{"reasons off", config.ReasonsOff, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Strategy: config.StrategySequential, Session: config.Session{Reasons: tt.reasons}}
			s := newEngine(t, cfg, member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no"}}))
			editor, agent := startProxy(t, s.engine.Handler())
			initialize(t, editor, agent, tt.advertise)
			agent.send(t, bashRequest)
			if got := agent.next(t); !strings.Contains(got, `"optionId":"reject"`) {
				t.Fatalf("the agent's answer = %s", got)
			}
			editor.w.Close()
			for _, l := range agent.rest(t) {
				if strings.Contains(l, "steering") {
					t.Errorf("the agent got %s", l)
				}
			}
			if e := s.entries(t); len(e) != 1 || e[0]["steer"] != nil {
				t.Errorf("log = %v", e)
			}
		})
	}
}

// TestSteeringAfterTheFallbackAnswersTheEditor: the editor answers an
// option it was not offered; the fallback's reject takes the answer's
// place among the editor's lines (a slot), and the steering follows it.
func TestSteeringAfterTheFallbackAnswersTheEditor(t *testing.T) {
	cfg := &config.Config{Strategy: config.StrategySequential, Session: config.Session{Reasons: config.ReasonsSteer}}
	s := newEngine(t, cfg, member("abstains", &plugin{d: abi.Decision{Outcome: abi.OutcomeAbstain}}))
	editor, agent := startProxy(t, s.engine.Handler())
	initialize(t, editor, agent, true)
	agent.send(t, bashRequest)
	for {
		if l := editor.next(t); strings.Contains(l, `"session/request_permission"`) {
			break
		}
	}
	editor.send(t, `{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"yes-forever"}}}`)
	if got := agent.next(t); got != `{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}` {
		t.Fatalf("the agent's answer = %s", got)
	}
	if got := agent.next(t); !strings.Contains(got, `"method":"_session/steering"`) ||
		!strings.Contains(got, `rejected this tool call: the editor answered \"yes-forever\", which was not offered`) {
		t.Fatalf("after the answer the agent got %s", got)
	}
}

// TestSteeringAfterAGrantsAbsence: under allow_always = "off" a request
// whose only allow is durable (claude's "Yes, and allow echo hi *
// commands" with no one-time allow) reaches the person with the reject
// alone; their bare reject is then a grant's absence, and the model is
// told why, naming the setting, in v1 and in v2.
func TestSteeringAfterAGrantsAbsence(t *testing.T) {
	const sid = "2a178532-7f3e-4eef-ad46-ab41b93044de"
	const options = `"options":[{"optionId":"allow-with-updates","name":"Yes, and allow echo hi * commands","kind":"allow_always"},{"optionId":"reject","name":"No","kind":"reject_once"}]`
	const toolCall = `{"toolCallId":"toolu_fake_9","name":"Bash","rawInput":{"command":"echo hi > t.txt"},"title":"echo hi > t.txt","kind":"execute"}`
	for _, tt := range []struct {
		name, init, result, request string
	}{
		{"v1",
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"ed","version":"1"}}}`,
			`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"0.101.0"},"authMethods":[],"_meta":{"steering":{"supported":true}}}}`,
			`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"` + sid + `","toolCall":` + toolCall + `,` + options + `}}`},
		{"v2",
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ed","version":"1"},"capabilities":{}}}`,
			`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"@agentclientprotocol/codex-acp","version":"2.6.0"},"capabilities":{"session":{}},"authMethods":[],"_meta":{"steering":{"supported":true}}}}`,
			`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"` + sid + `","title":"echo hi > t.txt","subject":{"type":"tool_call","toolCall":` + toolCall + `},` + options + `}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Strategy: config.StrategySequential,
				Session: config.Session{Reasons: config.ReasonsSteer, AllowAlways: config.AllowAlwaysOff}}
			s := newEngine(t, cfg, member("abstains", &plugin{d: abi.Decision{Outcome: abi.OutcomeAbstain}}))
			editor, agent := startProxy(t, s.engine.Handler())
			editor.send(t, tt.init)
			agent.next(t)
			agent.send(t, tt.result)
			editor.next(t)

			agent.send(t, tt.request)
			for {
				l := editor.next(t)
				if !strings.Contains(l, `"session/request_permission"`) {
					continue
				}
				if !strings.Contains(l, `"options":[{"optionId":"reject","name":"No","kind":"reject_once"}]`) {
					t.Fatalf("the editor was shown %s", l)
				}
				break
			}
			editor.send(t, `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}`)
			if got := agent.next(t); got != `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}` {
				t.Fatalf("the agent's answer = %s", got)
			}
			got := agent.next(t)
			if !strings.Contains(got, `"method":"_session/steering"`) || !strings.Contains(got, `"sessionId":"`+sid+`"`) ||
				!strings.Contains(got, `[session] allow_always = \"off\" lets nobody choose those`) {
				t.Fatalf("after the answer the agent got %s", got)
			}
		})
	}
}
