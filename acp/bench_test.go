package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// updateLine is a 1 KiB session/update, the proxy's dominant traffic.
var updateLine = func() []byte {
	head := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`
	tail := `"}}}}` + "\n"
	return []byte(head + strings.Repeat("x", 1024-len(head)-len(tail)) + tail)
}()

func benchStream(n int) []byte { return bytes.Repeat(updateLine, n) }

// BenchmarkRawPipe is the baseline: the same bytes through one io.Pipe.
func BenchmarkRawPipe(b *testing.B) {
	data := benchStream(4096)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, w := io.Pipe()
		go func() { w.Write(data); w.Close() }()
		io.Copy(io.Discard, r)
	}
}

// BenchmarkProxyAgentToClient pushes 1 KiB session/update lines from the
// agent side to the client side of a Proxy.
func BenchmarkProxyAgentToClient(b *testing.B) {
	data := benchStream(4096)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		p, _ := NewProxy(Options{})
		agentOut, agentW := io.Pipe()
		clientIn, clientW := io.Pipe()
		clientW.Close()
		go func() { agentW.Write(data); agentW.Close() }()
		if err := p.Run(context.Background(), clientIn, io.Discard, io.Discard, agentOut); err != nil {
			b.Fatal(err)
		}
	}
}

// proseLine is a 1 KiB agent message chunk as agents write them: prose and
// code with escaped quotes and newlines, snake_case words, a path.
var proseLine = func() []byte {
	head := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_01J9","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`
	text := `I looked at \"internal/config/load.go\": the parser's read_file helper returns early when the path is empty.\n\n` +
		"```go\\nfunc load_all(dir string) error {\\n\\tif dir == \\\"\\\" {\\n\\t\\treturn nil\\n\\t}\\n}\\n```\\n"
	tail := `"}}}}` + "\n"
	var b strings.Builder
	b.WriteString(head)
	for b.Len()+len(text)+len(tail) < 1024 {
		b.WriteString(text)
	}
	b.WriteString(strings.Repeat("x", 1024-b.Len()-len(tail)))
	b.WriteString(tail)
	return []byte(b.String())
}()

// BenchmarkIsPlainUpdate is the fast path's look at one 1 KiB line.
func BenchmarkIsPlainUpdate(b *testing.B) {
	for _, c := range []struct {
		name string
		line []byte
	}{{"padding", updateLine}, {"prose", proseLine}} {
		if !isPlainUpdate(c.line) {
			b.Fatalf("%s: not plain: %s", c.name, c.line)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.line)))
			for b.Loop() {
				isPlainUpdate(c.line)
			}
		})
		// A stream of lines of one shape: the memo spares the walk.
		b.Run(c.name+"/memo", func(b *testing.B) {
			var fp fastPath
			b.SetBytes(int64(len(c.line)))
			for b.Loop() {
				fp.plain(c.line)
			}
		})
	}
}

// toolCallStream is n tool-call updates (a call each, started and
// completed), which go through the strict path and, with a Governor, to
// its Update.
func toolCallStream(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		for _, status := range []string{"in_progress", "completed"} {
			b.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t`)
			b.WriteString(strings.Repeat("0", 8) + string(rune('a'+i%26)))
			b.WriteString(`","kind":"execute","status":"` + status + `","rawInput":{"command":"` + strings.Repeat("x", 800) + `"}}}}` + "\n")
		}
	}
	return b.Bytes()
}

// BenchmarkToolCallUpdates: the agent's tool-call updates through a Proxy
// without and with a Governor watching them.
func BenchmarkToolCallUpdates(b *testing.B) {
	data := toolCallStream(2048)
	for _, gov := range []bool{false, true} {
		name := "no-governor"
		if gov {
			name = "governor"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				opts := Options{}
				if gov {
					opts.Governor = &countingGovernor{}
				}
				p, _ := NewProxy(opts)
				agentOut, agentW := io.Pipe()
				clientIn, clientW := io.Pipe()
				clientW.Close()
				go func() { agentW.Write(data); agentW.Close() }()
				if err := p.Run(context.Background(), clientIn, io.Discard, io.Discard, agentOut); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// countingGovernor watches and does nothing else.
type countingGovernor struct{ n int }

func (g *countingGovernor) ClientRequest(*ClientRequest) *RPCError { return nil }
func (g *countingGovernor) SessionStart(context.Context, *SessionStart, Caller) (json.RawMessage, *RPCError) {
	return nil, nil
}
func (g *countingGovernor) Intercepts(*AgentRequest) bool { return false }
func (g *countingGovernor) AgentRequest(context.Context, *AgentRequest, Client, Caller) (Reply, error) {
	return Reply{}, nil
}
func (g *countingGovernor) Update(*Update, Caller) { g.n++ }

// switchingGovernor switches every new session's mode with a request of
// permhost's own, as policy's does for a session starting in auto.
type switchingGovernor struct{ countingGovernor }

func (g *switchingGovernor) SessionStart(ctx context.Context, s *SessionStart, c Caller) (json.RawMessage, *RPCError) {
	if _, err := c.Agent(ctx, MethodSessionSetMode, json.RawMessage(`{"sessionId":"s-1","modeId":"default"}`)); err != nil {
		return nil, &RPCError{Code: CodeInternalError, Message: err.Error()}
	}
	return bytes.Replace(s.Result, []byte(`"auto"`), []byte(`"default"`), 1), nil
}

// BenchmarkSessionStart is one session/new, from the client's request to
// the result it reads, through a Proxy whose agent answers at once:
// without a Governor, and with one that switches the mode first (a round
// trip to the agent while the result waits in its place).
func BenchmarkSessionStart(b *testing.B) {
	for _, name := range []string{"forwarded", "switched"} {
		b.Run(name, func(b *testing.B) {
			opts := Options{}
			if name == "switched" {
				opts.Governor = &switchingGovernor{}
			}
			p, _ := NewProxy(opts)
			clientIn, clientW := io.Pipe()
			clientR, clientOut := io.Pipe()
			agentR, agentIn := io.Pipe()
			agentOut, agentW := io.Pipe()
			go p.Run(context.Background(), clientIn, clientOut, agentIn, agentOut)
			go func() { // the agent
				br := bufio.NewReader(agentR)
				for {
					line, err := br.ReadBytes('\n')
					if err != nil {
						agentW.Close()
						return
					}
					d := decode(trimEOL(line))
					res := `{}`
					if d.method == MethodSessionNew {
						res = `{"sessionId":"s-1","modes":{"currentModeId":"auto","availableModes":[{"id":"default"},{"id":"auto"}]}}`
					}
					agentW.Write(append(responseLine(d.id, []byte(res)), '\n'))
				}
			}()
			cr := bufio.NewReader(clientR)
			req := []byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}` + "\n")
			for b.Loop() {
				clientW.Write(req)
				if _, err := cr.ReadBytes('\n'); err != nil {
					b.Fatal(err)
				}
			}
			clientW.Close()
		})
	}
}
