package acp

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// doneOnce is a context that turns done while a select is looking at it:
// its Done blocks until ready reports true, then returns a closed channel,
// so that the select finds the answer and Done ready at once.
type doneOnce struct {
	context.Context
	ready func() bool
	fired atomic.Bool
}

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *doneOnce) Done() <-chan struct{} {
	for !c.fired.Load() && !c.ready() {
		runtime.Gosched()
	}
	c.fired.Store(true)
	return closedDone
}

func (c *doneOnce) Err() error {
	if c.fired.Load() {
		return context.Canceled
	}
	return nil
}

// TestAskReturnsAnswerRead: an editor answer the proxy read before the
// handler's context was done is the answer Ask returns, every time,
// whichever the select inside Ask sees (the race strategy relies on it:
// a person's answer, once read, wins).
func TestAskReturnsAnswerRead(t *testing.T) {
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		pc := c.(*permClient)
		a, err := c.Ask(&doneOnce{Context: ctx, ready: func() bool { return len(pc.pp.answers) == 1 }}, nil)
		if err != nil {
			return Response{}, err
		}
		return Response{Line: a.Line}, nil
	})})
	for i := range 32 {
		id := strconv.Itoa(i)
		h.sendAgent(permReq(id))
		expect(t, "forwarded", h.clientGets(), permReq(id))
		h.sendClient(selected(id, "reject"))
		expect(t, "run "+id+": the agent's answer", h.agentGets(), selected(id, "reject"))
	}
}

// TestCallerClientReturnsAnswerRead is TestAskReturnsAnswerRead for a
// request of permhost's own.
func TestCallerClientReturnsAnswerRead(t *testing.T) {
	g := &testGovernor{takes: func(*AgentRequest) bool { return true }}
	g.request = func(ctx context.Context, r *AgentRequest, c Client, p Caller) (Reply, error) {
		pr := p.(caller).p
		// Ready once the proxy took the answer out of its table: the
		// answer is in oc.answers, or about to be.
		ready := func() bool {
			pr.mu.Lock()
			defer pr.mu.Unlock()
			return len(pr.ownClient) == 0
		}
		a, err := p.Client(&doneOnce{Context: ctx, ready: ready}, MethodRequestPermission, json.RawMessage(`{"sessionId":"s-1"}`))
		if err != nil {
			return Reply{}, err
		}
		return Reply{Result: a.Result}, nil
	}
	h := newHarness(t, Options{Governor: g})
	for i := range 32 {
		n := strconv.Itoa(i)
		h.sendAgent(`{"jsonrpc":"2.0","id":` + n + `,"method":"fs/write_text_file","params":{"sessionId":"s-1","path":"/p/a","content":""}}` + "\n")
		id, _, _ := envelopeOf(t, h.clientGets())
		h.sendClient(`{"jsonrpc":"2.0","id":` + id + `,"result":{"outcome":{"outcome":"cancelled"}}}` + "\n")
		expect(t, "run "+n+": the agent's answer", h.agentGets(), `{"jsonrpc":"2.0","id":`+n+`,"result":`+cancelledResult+`}`+"\n")
	}
}
