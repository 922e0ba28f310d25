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
