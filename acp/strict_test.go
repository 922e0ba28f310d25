package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The editor's answer is read strictly and the agent gets it re-encoded:
// any spelling another parser could read differently is refused (the agent
// gets cancelled); spellings that read one way only are accepted whatever
// their key order, spacing or escapes.
func TestClientAnswerIsReadStrictly(t *testing.T) {
	for _, tc := range []struct {
		name, answer, want string
	}{
		{"plain", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, selected(`3`, "allow")},
		{"order, space, escapes", `{ "result" : { "outcome" : { "optionId" : "\u0061llow" , "outcome" : "selected" } } , "id" : 3 }`, selected(`3`, "allow")},
		{"id by value", `{"jsonrpc":"2.0","id":3.0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, selected(`3`, "allow")},
		{"metas kept", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow","_meta":{"a":1}},"_meta":{"b":[2]}}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow","_meta":{"a":1}},"_meta":{"b":[2]}}}` + "\n"},
		{"case-folded optionId", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow","OptionId":"reject"}}}`, cancelled(`3`)},
		{"case-folded outcome", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow","Outcome":"cancelled"}}}`, cancelled(`3`)},
		{"exact duplicate", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"reject","optionId":"allow"}}}`, cancelled(`3`)},
		{"escaped duplicate", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow","\u004fptionId":"reject"}}}`, cancelled(`3`)},
		{"case-folded key alone", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","OptionId":"allow"}}}`, cancelled(`3`)},
		{"unknown key", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow","scope":"always"}}}`, cancelled(`3`)},
		{"duplicate in meta", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"},"_meta":{"k":1,"K":2}}}`, cancelled(`3`)},
		{"Result beside result", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"}},"Result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, ""},
		{"result and error", `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"},"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, ""},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"allow\xff\"}}}", cancelled(`3`)},
		{"not offered", `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}`, cancelled(`3`)},
		{"error re-encoded", `{"id":3,"error":{"message":"no","code":-32603,"data":{ "d" : 1 }},"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"no","data":{"d":1}}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.sendAgent(permReq(`3`))
			h.clientGets()
			h.sendClient(tc.answer + "\n")
			if tc.want == "" {
				// An envelope that reads two ways is not an answer at all:
				// dropped; the editor still owes one.
				h.syncBoth()
				h.sendClient(cancelled(`3`))
				tc.want = cancelled(`3`)
			}
			expect(t, "agent's answer", h.agentGets(), tc.want)
			h.syncBoth()
		})
	}
}

// An editor answer is checked whatever the request's state: answers to a
// request not forwarded yet, second answers, late answers to a request
// already answered and answers to ids the agent never asked with are
// dropped; ids match by value.
func TestClientAnswersCheckedWhateverTheState(t *testing.T) {
	t.Run("not forwarded yet", func(t *testing.T) {
		release := make(chan struct{})
		h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
			<-release // a plugin still deciding: the editor was not asked
			return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
		})})
		h.sendAgent(permReq(`1`))
		h.sendClient(selected(`1`, "allow"))
		h.syncBoth() // the guess reached no one
		close(release)
		expect(t, "the handler's answer", h.agentGets(), selected(`1`, "reject"))
		h.syncBoth()
	})
	t.Run("second and late answers", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.sendAgent(permReq(`55`))
		h.clientGets()
		h.sendClient(`{"jsonrpc":"2.0","id":55.0,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}`+"\n",
			`{"jsonrpc":"2.0","id":5.5e1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`+"\n")
		expect(t, "the first answer, with the agent's id", h.agentGets(), selected(`55`, "reject"))
		h.syncBoth()
		h.sendClient(selected(`55`, "allow"), `{"jsonrpc":"2.0","id":55,"error":{"code":1,"message":"late"}}`+"\n")
		h.syncBoth()
	})
	t.Run("string ids by value", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.sendAgent(permReq(`"a"`))
		h.clientGets()
		h.sendClient(`{"jsonrpc":"2.0","id":"\u0061","result":{"outcome":{"outcome":"selected","optionId":"allow"}}}` + "\n")
		expect(t, "answer", h.agentGets(), selected(`"a"`, "allow"))
		h.sendClient(selected(`"\u0061"`, "reject"))
		h.syncBoth()
	})
	t.Run("ids never asked", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.sendClient(selected(`9`, "allow"), `{"jsonrpc":"2.0","id":9,"result":{"Outcome":"x"}}`+"\n")
		h.syncBoth()
		// Any other response passes as it is: the proxy governs only
		// permission answers.
		other := `{"jsonrpc":"2.0","id":77,"result":{"content":"file text","_meta":{}}}` + "\n"
		h.sendClient(other)
		expect(t, "a response that is no permission answer", h.agentGets(), other)
	})
}

// An agent line that may be a permission request but cannot be read one
// way only fails closed: it never reaches the editor, and each id it may
// carry is answered cancelled. Lines that certainly are no permission
// request pass untouched.
func TestAgentLinesFailClosed(t *testing.T) {
	perm := strings.TrimSpace(permReq(`7`))
	deep := strings.Replace(perm, `"status":"pending"`, `"rawInput":`+strings.Repeat(`{"a":`, 10001)+"1"+strings.Repeat("}", 10001), 1)
	for _, tc := range []struct {
		name, line string
		answers    []string
	}{
		{"nested past encoding/json", deep, []string{cancelled(`7`)}},
		{"unreadable method", strings.Replace(perm, `"session/request_permission"`, `"session/request_permission\ud800"`, 1), []string{cancelled(`7`)}},
		{"method not a string", strings.Replace(perm, `"session/request_permission"`, `["session/request_permission"]`, 1), []string{cancelled(`7`)}},
		{"method in another case", strings.Replace(perm, `"method"`, `"Method"`, 1), []string{cancelled(`7`)}},
		{"method twice", strings.Replace(perm, `"method":"session/request_permission"`, `"method":"_x","method":"session/request_permission"`, 1), []string{cancelled(`7`)}},
		{"two ids", strings.Replace(perm, `"id":7,`, `"id":7,"Id":8,`, 1), []string{cancelled(`7`), cancelled(`8`)}},
		{"method and result", strings.Replace(perm, `"id":7,`, `"id":7,"result":{},`, 1), []string{cancelled(`7`)}},
		{"broken", perm[:len(perm)-3], []string{cancelled(`7`)}},
		{"broken, escaped name", strings.Replace(perm[:len(perm)-3], "request_permission", `request\u005fpermission`, 1), []string{cancelled(`7`)}},
		{"broken, no id", `{"jsonrpc":"2.0","method":"session/request_permission","params":{`, nil},
		{"no id", strings.Replace(perm, `"id":7,`, ``, 1), nil},
		{"nested batch naming it", `[[` + perm + `]]`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handled := make(chan *PermissionRequest, 1)
			h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
				handled <- req
				return Response{}, errors.New("no handler may see it")
			})})
			h.sendAgent(tc.line + "\n")
			for _, a := range tc.answers {
				expect(t, "permhost's own answer", h.agentGets(), a)
			}
			h.syncBoth() // the editor got nothing
			select {
			case req := <-handled:
				t.Fatalf("the handler got %s", req.Line)
			default:
			}
		})
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"_x","params":{"a":1,"a":2}}`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"t\":\"\xff\"}}",
		`this is not JSON`,
		`{"jsonrpc":"2.0","id":1,"result":{"text":"session/request_permission"}}`,
		`{"jsonrpc":"2.0","method":"_x","Params":1}`,
	} {
		h := newHarness(t, Options{})
		h.sendAgent(line + "\n")
		expect(t, "an agent line that is no permission request", h.clientGets(), line+"\n")
	}
}

// A permission request with an escaped method name is one: the handler
// gets it, the editor sees it only if the handler asks, and the agent gets
// the checked answer.
func TestEscapedMethodIsIntercepted(t *testing.T) {
	got := make(chan *PermissionRequest, 1)
	h := newHarness(t, Options{Handler: HandlerFunc(func(ctx context.Context, req *PermissionRequest, c Client) (Response, error) {
		got <- req
		return Response{Result: json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"reject"}}`)}, nil
	})})
	h.sendAgent(strings.Replace(permReq(`4`), `"session/request_permission"`, `"session\u002frequest\u005fpermission"`, 1))
	req := waitFor(t, got, "the handler")
	if req.SessionID != "s-1" || len(req.Options) != 2 || req.Suspicious != "" {
		t.Fatalf("request %+v", req)
	}
	expect(t, "answer", h.agentGets(), selected(`4`, "reject"))
	h.syncBoth()
}
