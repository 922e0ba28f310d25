package acp

import (
	"bytes"
	"context"
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
