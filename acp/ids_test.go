package acp

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// ownPrompter is a Governor that takes the agent's fs/write_text_file and
// asks the client by a request of permhost's own, relaying its answer.
func ownPrompter() *testGovernor {
	g := &testGovernor{takes: func(r *AgentRequest) bool { return r.Method == "fs/write_text_file" }}
	g.request = func(ctx context.Context, r *AgentRequest, c Client, p Caller) (Reply, error) {
		a, err := p.Client(ctx, MethodRequestPermission, json.RawMessage(`{"sessionId":"s-1","options":`+options+`}`))
		if err != nil {
			return Reply{}, err
		}
		return Reply{Result: json.RawMessage(`{"prompt":` + string(a.Result) + `}`)}, nil
	}
	return g
}

const writeReq = `{"jsonrpc":"2.0","id":0,"method":"fs/write_text_file","params":{"sessionId":"s-1","path":"/p/a","content":""}}` + "\n"

func inUse(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"permhost: this request id is in use towards the client; use another"}}` + "\n"
}

// TestOwnIDsUnguessable: permhost's ids are 128 random bits each, so that
// one a peer sees (a mode switch's, sent to the agent) tells nothing of
// another (the prompt pending with the editor).
func TestOwnIDsUnguessable(t *testing.T) {
	h := newHarness(t, Options{Governor: ownPrompter()})
	form := regexp.MustCompile(`^"permhost-[0-9a-f]{32}"$`)
	seen := map[string]bool{}
	for range 4 {
		h.sendAgent(writeReq)
		id, _, _ := envelopeOf(t, h.clientGets())
		if !form.MatchString(id) || seen[id] {
			t.Fatalf("own id %s (seen before: %v)", id, seen[id])
		}
		seen[id] = true
		h.sendClient(`{"jsonrpc":"2.0","id":` + id + `,"result":` + cancelledResult + `}` + "\n")
		expect(t, "the agent's answer", h.agentGets(), `{"jsonrpc":"2.0","id":0,"result":{"prompt":`+cancelledResult+`}}`+"\n")
	}
	// A candidate in use is never chosen.
	p := h.proxy
	n := 0
	p.mu.Lock()
	id := p.nextOwnIDLocked(func(string) bool { n++; return n < 3 })
	p.mu.Unlock()
	if n != 3 || !form.Match(id) {
		t.Errorf("took %s after %d candidates", id, n)
	}
}

// TestAgentRequestUnderOwnIDRefused: the confused deputy. The agent sends
// a harmless permission request (and any other request) under the id of
// permhost's own prompt pending with the editor: it is refused, the editor
// never sees it, and the editor's answer goes to permhost's prompt alone.
func TestAgentRequestUnderOwnIDRefused(t *testing.T) {
	h := newHarness(t, Options{Governor: ownPrompter()})
	h.sendAgent(writeReq)
	id, method, _ := envelopeOf(t, h.clientGets())
	if method != MethodRequestPermission {
		t.Fatalf("own request %s", method)
	}
	h.sendAgent(permReq(id))
	expect(t, "the permission request under permhost's id", h.agentGets(), inUse(id))
	other := `{"jsonrpc":"2.0","id":` + id + `,"method":"_x/ask","params":{}}` + "\n"
	h.sendAgent(other)
	expect(t, "another request under permhost's id", h.agentGets(), inUse(id))
	h.syncBoth() // the client saw neither
	h.sendClient(selected(id, "reject"))
	expect(t, "the answer went to permhost's prompt", h.agentGets(),
		`{"jsonrpc":"2.0","id":0,"result":{"prompt":{"outcome":{"outcome":"selected","optionId":"reject"}}}}`+"\n")
	h.syncBoth()
}

// TestAgentIDsOutstandingWithTheClient: the client never has two of the
// agent's requests under one id, intercepted or forwarded as they are.
func TestAgentIDsOutstandingWithTheClient(t *testing.T) {
	h := newHarness(t, Options{})
	plain := `{"jsonrpc":"2.0","id":4,"method":"_x/ask","params":{}}` + "\n"
	h.sendAgent(plain)
	expect(t, "forwarded", h.clientGets(), plain)
	h.sendAgent(permReq(`4`))
	expect(t, "a permission request under an outstanding id", h.agentGets(), inUse(`4`))
	h.syncBoth()
	h.sendClient(`{"jsonrpc":"2.0","id":4,"result":{}}` + "\n")
	expect(t, "the client's answer", h.agentGets(), `{"jsonrpc":"2.0","id":4,"result":{}}`+"\n")
	h.sendAgent(permReq(`4`))
	expect(t, "answered: the id is free again", h.clientGets(), permReq(`4`))
	h.sendAgent(plain)
	expect(t, "a request under the id of a prompt shown", h.agentGets(), inUse(`4`))
	h.syncBoth()
	h.sendClient(selected(`4`, "allow"))
	expect(t, "the prompt's answer", h.agentGets(), selected(`4`, "allow"))
}

// withdrawalOf is the $/cancel_request that withdraws request id from the
// client.
func withdrawalOf(id string) string {
	return `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + id + `}}` + "\n"
}

// reuseWhileShown has the agent send a permission request under id 3, then
// a second one under the same id while the client is shown the first: the
// first is withdrawn before the second is shown, and the agent gets
// cancelled for it.
func reuseWhileShown(t *testing.T, h *harness) {
	t.Helper()
	h.sendAgent(permReq(`3`))
	expect(t, "the first request", h.clientGets(), permReq(`3`))
	second := strings.Replace(permReq(`3`), `"t1"`, `"t2"`, 1)
	h.sendAgent(second)
	expect(t, "withdrawn first", h.clientGets(), withdrawalOf(`3`))
	expect(t, "the older one cancelled", h.agentGets(), cancelled(`3`))
	expect(t, "then the second shown", h.clientGets(), second)
}

// TestReusedIDWithdrawsFirst: the agent sends a second permission request
// under the id of one the editor is shown. The older one is withdrawn
// before the newer one is shown, the agent gets cancelled for it, and the
// editor's answer under the id, which could be either's, applies to
// neither.
func TestReusedIDWithdrawsFirst(t *testing.T) {
	h := newHarness(t, Options{})
	reuseWhileShown(t, h)
	h.sendClient(selected(`3`, "allow"))
	expect(t, "the other one withdrawn too", h.clientGets(), withdrawalOf(`3`))
	expect(t, "an answer that could be either's", h.agentGets(), cancelled(`3`))
	h.sendClient(selected(`3`, "allow"))
	h.syncBoth() // a second answer reaches no one
}

// TestAmbiguousAnswerKeepsTheIDInUse: after an answer under a reused id
// that could be either request's, the client may still answer the other
// one: until it does, a request of the agent's under the id is refused,
// not shown beside it.
func TestAmbiguousAnswerKeepsTheIDInUse(t *testing.T) {
	h := newHarness(t, Options{})
	reuseWhileShown(t, h)
	h.sendClient(cancelled(`3`)) // the first one's, or the second's
	expect(t, "the second withdrawn too", h.clientGets(), withdrawalOf(`3`))
	expect(t, "an answer that could be either's", h.agentGets(), cancelled(`3`))
	plain := `{"jsonrpc":"2.0","id":3,"method":"_x/ask","params":{}}` + "\n"
	h.sendAgent(plain)
	expect(t, "a request under the id while the other answer may come", h.agentGets(), inUse(`3`))
	h.syncBoth()
	h.sendClient(selected(`3`, "allow")) // the other answer
	h.syncBoth()
	h.sendAgent(plain)
	expect(t, "both answered: the id is free again", h.clientGets(), plain)
}

// TestReusedIDAfterWithdrawal: a request withdrawn from the editor (a
// plugin won) may still get its late answer; the agent's next request
// under that id is shown, but an answer under the id applies to neither,
// unless the late answer came first.
func TestReusedIDAfterWithdrawal(t *testing.T) {
	withdraw := make(chan struct{}, 1)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		askCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		if strings.Contains(string(req.Params), `"t1"`) {
			go func() { <-withdraw; cancel() }()
			if _, err := c.Ask(askCtx, nil); err != nil {
				return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
			}
		}
		return forward.RequestPermission(ctx, req, c)
	})})
	// Each case under an id of its own: the first leaves the client
	// holding one of its two requests, unanswered.
	for id, lateFirst := range map[string]bool{`3`: false, `5`: true} {
		second := strings.Replace(permReq(id), `"t1"`, `"t2"`, 1)
		withdrawal := withdrawalOf(id)
		h.sendAgent(permReq(id))
		expect(t, "shown", h.clientGets(), permReq(id))
		withdraw <- struct{}{}
		expect(t, "withdrawn", h.clientGets(), withdrawal)
		expect(t, "the plugin's answer", h.agentGets(), selected(id, "reject"))
		if lateFirst {
			h.sendClient(selected(id, "allow"))
			h.syncBoth()
		}
		h.sendAgent(second)
		expect(t, "the second shown", h.clientGets(), second)
		h.sendClient(selected(id, "allow"))
		want := cancelled(id)
		if lateFirst {
			want = selected(id, "allow")
		} else {
			expect(t, "the second withdrawn too", h.clientGets(), withdrawal)
		}
		expect(t, "late answer first: "+jsonBool(lateFirst), h.agentGets(), want)
		h.syncBoth()
	}
}

// TestWithdrawnTwiceUnderOneID: the client holds two withdrawn requests
// under one id (the agent reused it while the first was shown, then a
// plugin decided the second); after one answer the other may still come,
// so an answer under the id to a third request applies to neither: the
// older one's late answer never becomes a newer request's.
func TestWithdrawnTwiceUnderOneID(t *testing.T) {
	withdraw := make(chan struct{}, 1)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		if !strings.Contains(string(req.Params), `"t2"`) {
			return forward.RequestPermission(ctx, req, c)
		}
		askCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { <-withdraw; cancel() }()
		if _, err := c.Ask(askCtx, nil); err != nil {
			return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
		}
		return forward.RequestPermission(ctx, req, c)
	})})
	withdrawal := withdrawalOf(`3`)
	third := strings.Replace(permReq(`3`), `"t1"`, `"t3"`, 1)
	reuseWhileShown(t, h)
	withdraw <- struct{}{}
	expect(t, "the second withdrawn", h.clientGets(), withdrawal)
	expect(t, "the plugin's answer to the second", h.agentGets(), selected(`3`, "reject"))
	h.sendClient(cancelled(`3`)) // one of the two late answers
	h.syncBoth()
	// The other may still come: a third request under the id is shown,
	// and an answer under it could be that late one.
	h.sendAgent(third)
	expect(t, "the third shown", h.clientGets(), third)
	h.sendClient(selected(`3`, "allow"))
	expect(t, "the third withdrawn", h.clientGets(), withdrawal)
	expect(t, "an answer that could be the older one's applies to neither", h.agentGets(), cancelled(`3`))
}

// TestReusedIDAnswersInOrder: the agent tells two answers under one id
// apart only by their order. An answer held behind the slot of another
// request (its handler still relaying the client's answer) must not be
// overtaken by the answer to a later request under the same id, which
// permhost gives at once.
func TestReusedIDAnswersInOrder(t *testing.T) {
	release, read := make(chan struct{}), make(chan string, 2)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		if req.ToolCallID == "t3" { // decided at once
			return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
		}
		a, err := c.Ask(ctx, nil)
		if err != nil {
			return Response{}, err
		}
		read <- req.ToolCallID
		if req.ToolCallID == "t1" { // slow to relay the client's answer
			<-release
		}
		return Response{Line: a.Line}, nil
	})})
	var once sync.Once
	relay := func() { once.Do(func() { close(release) }) }
	t.Cleanup(relay) // a failed run still ends
	second := strings.Replace(permReq(`3`), `"t1"`, `"t2"`, 1)
	third := strings.Replace(permReq(`3`), `"t1"`, `"t3"`, 1)
	h.sendAgent(permReq(`1`))
	expect(t, "the first request", h.clientGets(), permReq(`1`))
	h.sendAgent(second)
	expect(t, "the second request", h.clientGets(), second)
	h.sendClient(selected(`1`, "allow"), selected(`3`, "allow"))
	<-read
	<-read // both answers' slots are placed
	h.sendAgent(third)
	// The second's answer waits behind the first's (until the writer
	// stops waiting for it); the third's comes after it, whichever it is
	// (the allow, or cancelled if the third came before its handler
	// finished).
	got := h.agentGets()
	if got != selected(`3`, "allow") && got != cancelled(`3`) {
		t.Fatalf("the first answer under id 3 is %q, not the second request's", got)
	}
	expect(t, "then the third's", h.agentGets(), selected(`3`, "reject"))
	relay()
	expect(t, "the first's, once relayed", h.agentGets(), selected(`1`, "allow"))
	h.syncBoth()
}

// TestForwardedAnswerUnderAnsweredID: the agent's request forwarded as it
// is, under the id of a permission request answered before, gets the
// client's answer (it was dropped as a late answer to the permission
// request, and the agent waited for ever).
func TestForwardedAnswerUnderAnsweredID(t *testing.T) {
	h := newHarness(t, Options{Handler: answerWith(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)})
	h.sendAgent(permReq(`4`))
	expect(t, "the handler's answer", h.agentGets(), selected(`4`, "reject"))
	plain := `{"jsonrpc":"2.0","id":4,"method":"_x/ask","params":{}}` + "\n"
	h.sendAgent(plain)
	expect(t, "forwarded", h.clientGets(), plain)
	answer := `{"jsonrpc":"2.0","id":4,"result":{}}` + "\n"
	h.sendClient(answer)
	expect(t, "the client's answer", h.agentGets(), answer)
}

// TestReusedIDOlderAnsweredByItsHandler: when the agent reuses the id of
// an unanswered request, the older one's handler is cancelled and its
// answer is what the agent gets for it (so that what the handler logs is
// what the agent got), ahead of the newer one's.
func TestReusedIDOlderAnsweredByItsHandler(t *testing.T) {
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		if req.ToolCallID == "t1" {
			if _, err := c.Ask(ctx, nil); err != nil { // withdrawn
				return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
			}
		}
		return forward.RequestPermission(ctx, req, c)
	})})
	h.sendAgent(permReq(`3`))
	expect(t, "the first request", h.clientGets(), permReq(`3`))
	second := strings.Replace(permReq(`3`), `"t1"`, `"t2"`, 1)
	h.sendAgent(second)
	expect(t, "withdrawn first", h.clientGets(), withdrawalOf(`3`))
	expect(t, "the older one's handler answers it", h.agentGets(), selected(`3`, "reject"))
	expect(t, "then the second shown", h.clientGets(), second)
	h.sendClient(selected(`3`, "allow"))
	expect(t, "the other one withdrawn too", h.clientGets(), withdrawalOf(`3`))
	expect(t, "an answer that could be either's", h.agentGets(), cancelled(`3`))
}

// TestConfusedIDStaysAmbiguous: after an answer that could be either of
// two requests', a client that answers one of them twice cannot be told
// from one that answered both. A later permission request under the id is
// shown, and an answer under it applies to neither: it may be the
// duplicate's.
func TestConfusedIDStaysAmbiguous(t *testing.T) {
	h := newHarness(t, Options{})
	withdrawal := withdrawalOf(`3`)
	third := strings.Replace(permReq(`3`), `"t1"`, `"t3"`, 1)
	reuseWhileShown(t, h)
	h.sendClient(selected(`3`, "allow")) // the first's, or the second's
	expect(t, "the second withdrawn too", h.clientGets(), withdrawal)
	expect(t, "an answer that could be either's", h.agentGets(), cancelled(`3`))
	h.sendClient(selected(`3`, "allow"), selected(`3`, "allow")) // one of them answered twice
	h.syncBoth()
	h.sendAgent(third)
	expect(t, "the third shown", h.clientGets(), third)
	h.sendClient(selected(`3`, "allow"))
	expect(t, "the third withdrawn", h.clientGets(), withdrawal)
	expect(t, "an answer under a confused id applies to neither", h.agentGets(), cancelled(`3`))
}
