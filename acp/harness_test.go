package acp

import (
	"bufio"
	"context"
	"io"
	"testing"
	"time"
)

// harness runs a Proxy over pipes: the test plays the client and the agent.
// Each side's writes and reads go through queues so that the synchronous
// pipes never make the test and the proxy wait for each other.
type harness struct {
	t        *testing.T
	proxy    *Proxy
	clientQ  chan string // what the client sends
	agentQ   chan string // what the agent sends
	toClient chan string // what the client receives
	toAgent  chan string // what the agent receives
	done     chan error
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	p, err := NewProxy(opts)
	if err != nil {
		t.Fatal(err)
	}
	clientIn, clientW := io.Pipe()  // test → proxy
	clientR, clientOut := io.Pipe() // proxy → test
	agentR, agentIn := io.Pipe()    // proxy → test
	agentOut, agentW := io.Pipe()   // test → proxy
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, proxy: p,
		clientQ: make(chan string, 4096), agentQ: make(chan string, 4096),
		toClient: make(chan string, 4096), toAgent: make(chan string, 4096),
		done: make(chan error, 1)}
	go pump(h.clientQ, clientW)
	go pump(h.agentQ, agentW)
	go collect(clientR, h.toClient)
	go collect(agentR, h.toAgent)
	go func() { h.done <- p.Run(ctx, clientIn, clientOut, agentIn, agentOut) }()
	t.Cleanup(func() {
		cancel()
		h.closeClient()
		h.closeAgent()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after the agent's output closed")
		}
		clientR.Close()
		agentR.Close()
	})
	return h
}

func pump(q chan string, w *io.PipeWriter) {
	for s := range q {
		if _, err := io.WriteString(w, s); err != nil {
			break
		}
	}
	w.Close()
	for range q {
	}
}

func collect(r io.Reader, out chan<- string) {
	br := bufio.NewReader(r)
	for {
		s, err := br.ReadString('\n')
		if s != "" {
			out <- s
		}
		if err != nil {
			close(out)
			return
		}
	}
}

func (h *harness) sendClient(lines ...string) {
	for _, l := range lines {
		h.clientQ <- l
	}
}

func (h *harness) sendAgent(lines ...string) {
	for _, l := range lines {
		h.agentQ <- l
	}
}

// closeClient and closeAgent end a side's output once its queue is sent.
func (h *harness) closeClient() {
	defer func() { _ = recover() }() // already closed
	close(h.clientQ)
}

func (h *harness) closeAgent() {
	defer func() { _ = recover() }()
	close(h.agentQ)
}

func readLine(t *testing.T, ch <-chan string, who string) string {
	t.Helper()
	select {
	case s, ok := <-ch:
		if !ok {
			t.Fatalf("%s: stream closed", who)
		}
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no line within 10s", who)
		return ""
	}
}

// clientGets reads the next line the client receives.
func (h *harness) clientGets() string { h.t.Helper(); return readLine(h.t, h.toClient, "client") }

// agentGets reads the next line the agent receives.
func (h *harness) agentGets() string { h.t.Helper(); return readLine(h.t, h.toAgent, "agent") }

// expect fails unless got equals want.
func expect(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// syncBoth makes sure everything sent so far went through and nothing else
// arrived: a marker notification travels each direction and must be the
// next line.
func (h *harness) syncBoth() {
	h.t.Helper()
	const c = `{"jsonrpc":"2.0","method":"_test/marker","params":{"side":"client"}}` + "\n"
	const a = `{"jsonrpc":"2.0","method":"_test/marker","params":{"side":"agent"}}` + "\n"
	h.sendClient(c)
	expect(h.t, "agent marker", h.agentGets(), c)
	h.sendAgent(a)
	expect(h.t, "client marker", h.clientGets(), a)
}
