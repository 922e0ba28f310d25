package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/acptest"
)

// The ACP TypeScript SDK's example agent (acptest.SDKAgent) is a real agent
// that needs no model: each prompt streams a few updates a second apart, then
// asks permission to edit a configuration file. These tests drive it through
// `permhost proxy` and, as a control, directly: the control shows what the
// agent itself does, so a difference in the proxied run is the proxy's.

// sdkSession is one run of the example agent with a test client.
type sdkSession struct {
	t     *testing.T
	proc  *acptest.Process
	conn  *acptest.Conn
	perms chan *acptest.Message // permission requests, as the client received them
	id    string                // the session id
}

// startSDK starts the example agent (through the proxy when viaProxy),
// initializes a session and returns it. answer decides each permission
// request the client receives.
func startSDK(t *testing.T, viaProxy bool, answer func(s *sdkSession, req *acptest.Message) any) *sdkSession {
	t.Helper()
	argv := acptest.SDKAgent(t)
	if viaProxy {
		argv = append([]string{permhostBin, "proxy", "--log-level", "debug", "--shutdown-grace", "2s", "--"}, argv...)
	}
	return openSDKSession(t, argv, answer)
}

// openSDKSession starts argv (the example agent, or permhost in front of
// it), initializes a session and returns it. answer decides each
// permission request the client receives.
func openSDKSession(t *testing.T, argv []string, answer func(s *sdkSession, req *acptest.Message) any) *sdkSession {
	t.Helper()
	s := &sdkSession{t: t, proc: acptest.Start(t, argv...), perms: make(chan *acptest.Message, 4)}
	s.conn = acptest.NewConn(s.proc.Stdout, s.proc.Stdin, func(ctx context.Context, req *acptest.Message) (any, error) {
		if req.Method != "session/request_permission" {
			return nil, &acptest.RPCError{Code: -32601, Message: "method not found: " + req.Method}
		}
		s.perms <- req
		return answer(s, req), nil
	})
	t.Cleanup(func() { s.conn.Close() })

	ctx := s.ctx(30 * time.Second)
	res, err := s.conn.Call(ctx, "initialize", json.RawMessage(
		`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false},"clientInfo":{"name":"permhost-e2e","version":"0.0.0"}}`))
	if err != nil {
		s.fatalf("initialize: %v", err)
	}
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &init); err != nil || init.ProtocolVersion != 1 {
		s.fatalf("initialize result %s: want protocolVersion 1 (%v)", res, err)
	}
	res, err = s.conn.Call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
	if err != nil {
		s.fatalf("session/new: %v", err)
	}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &sess); err != nil || sess.SessionID == "" {
		s.fatalf("session/new result %s: no sessionId (%v)", res, err)
	}
	s.id = sess.SessionID
	return s
}

// cancelThenAnswer is a client that sends session/cancel when asked
// permission, then answers with answer a little later, as an editor does
// once its prompt is gone.
func cancelThenAnswer(answer any) func(*sdkSession, *acptest.Message) any {
	return func(s *sdkSession, _ *acptest.Message) any {
		if err := s.conn.Notify("session/cancel", map[string]string{"sessionId": s.id}); err != nil {
			s.t.Errorf("session/cancel: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
		return answer
	}
}

func (s *sdkSession) ctx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	s.t.Cleanup(cancel)
	return ctx
}

// fatalf fails the test with everything the client received.
func (s *sdkSession) fatalf(format string, args ...any) {
	s.t.Helper()
	var b strings.Builder
	for _, m := range s.conn.Received() {
		fmt.Fprintf(&b, "  %s\n", m.Raw)
	}
	s.t.Fatalf(format+"\nthe client received:\n%s", append(args, b.String())...)
}

// prompt sends one prompt and returns the stop reason.
func (s *sdkSession) prompt(text string) string {
	s.t.Helper()
	res, err := s.conn.Call(s.ctx(30*time.Second), "session/prompt", map[string]any{
		"sessionId": s.id,
		"prompt":    []any{map[string]string{"type": "text", "text": text}},
	})
	if err != nil {
		s.fatalf("session/prompt: %v", err)
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		s.fatalf("session/prompt result %s: %v", res, err)
	}
	return r.StopReason
}

// permission returns the one permission request the client received.
func (s *sdkSession) permission() *acptest.Message {
	s.t.Helper()
	select {
	case req := <-s.perms:
		select {
		case again := <-s.perms:
			s.fatalf("a second permission request: %s", again.Raw)
		default:
		}
		return req
	default:
		s.fatalf("the client received no permission request")
		return nil
	}
}

// updatesAfter returns the session/update payloads received after the
// message with the given raw bytes.
func (s *sdkSession) updatesAfter(raw []byte) []map[string]any {
	var out []map[string]any
	seen := false
	for _, m := range s.conn.Received() {
		if !seen {
			seen = string(m.Raw) == string(raw)
			continue
		}
		if m.Method != "session/update" {
			continue
		}
		var p struct {
			SessionID string         `json:"sessionId"`
			Update    map[string]any `json:"update"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || p.SessionID != s.id {
			s.fatalf("bad session/update %s (%v)", m.Raw, err)
		}
		out = append(out, p.Update)
	}
	return out
}

// configApplied reports whether the agent went on to apply the edit it asked
// permission for: it marks call_2 completed only after an allow.
func configApplied(updates []map[string]any) bool {
	for _, u := range updates {
		if u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "call_2" && u["status"] == "completed" {
			return true
		}
	}
	return false
}

// stop closes the client's side and checks that the process exits in time
// with status 0: the agent exits when its stdin closes, and permhost with the
// agent's status.
func (s *sdkSession) stop() {
	s.t.Helper()
	s.proc.Stdin.Close()
	code, err := s.proc.Wait(10 * time.Second)
	if err != nil || code != 0 {
		s.t.Fatalf("after the client hung up: exit status %d, %v", code, err)
	}
}

// checkRequest checks the permission request the example agent sends.
func checkRequest(s *sdkSession, req *acptest.Message) {
	s.t.Helper()
	var p struct {
		SessionID string `json:"sessionId"`
		ToolCall  struct {
			ToolCallID string `json:"toolCallId"`
			Title      string `json:"title"`
			Kind       string `json:"kind"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Name     string `json:"name"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		s.fatalf("permission request %s: %v", req.Raw, err)
	}
	if p.SessionID != s.id {
		s.t.Errorf("permission request for session %q, want %q", p.SessionID, s.id)
	}
	if p.ToolCall.ToolCallID != "call_2" || p.ToolCall.Title != "Modifying critical configuration file" || p.ToolCall.Kind != "edit" {
		s.t.Errorf("toolCall = %+v, want call_2 \"Modifying critical configuration file\" edit", p.ToolCall)
	}
	var opts []string
	for _, o := range p.Options {
		opts = append(opts, o.OptionID+"/"+o.Kind+"/"+o.Name)
	}
	if want := []string{"allow/allow_once/Allow this change", "reject/reject_once/Skip this change"}; !reflect.DeepEqual(opts, want) {
		s.t.Errorf("options = %q, want %q", opts, want)
	}
}

var (
	selectAllow = json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"allow"}}`)
	cancelled   = json.RawMessage(`{"outcome":{"outcome":"cancelled"}}`)
)

func forEachPath(t *testing.T, run func(t *testing.T, viaProxy bool)) {
	for _, viaProxy := range []bool{true, false} {
		name := "proxy"
		if !viaProxy {
			name = "direct"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, viaProxy)
		})
	}
}

// TestSDKAgentAllow: the agent's permission request reaches the client, the
// client's allow reaches the agent, which applies the edit and ends the
// turn with end_turn.
func TestSDKAgentAllow(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, viaProxy bool) {
		s := startSDK(t, viaProxy, func(*sdkSession, *acptest.Message) any { return selectAllow })
		if got := s.prompt("Please clean the build directory."); got != "end_turn" {
			s.fatalf("stopReason %q, want end_turn", got)
		}
		req := s.permission()
		checkRequest(s, req)
		if updates := s.updatesAfter(req.Raw); !configApplied(updates) {
			s.fatalf("no completed call_2 after the allow: the answer did not reach the agent")
		}
		s.stop()
	})
}

// TestSDKAgentSessionCancel: session/cancel while the permission request is
// pending. The client, as ACP requires, answers the request `cancelled`; the
// example agent waits for that answer, skips the edit and returns end_turn
// (acp-reference §7), through the proxy exactly as without it.
func TestSDKAgentSessionCancel(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, viaProxy bool) {
		s := startSDK(t, viaProxy, cancelThenAnswer(cancelled))
		if got := s.prompt("first"); got != "end_turn" {
			s.fatalf("stopReason %q, want end_turn", got)
		}
		req := s.permission()
		checkRequest(s, req)
		if configApplied(s.updatesAfter(req.Raw)) {
			s.fatalf("the agent applied the edit after a cancelled answer")
		}
		// The session stays usable: a second turn asks again.
		if got := s.prompt("second"); got != "end_turn" {
			s.fatalf("second prompt: stopReason %q, want end_turn", got)
		}
		checkRequest(s, s.permission())
		s.stop()
	})
}

// TestSDKAgentSelectedAfterCancel: the client cancels the session but then
// answers the pending request `selected` allow. permhost relays an answer
// given after session/cancel as `cancelled`, so the agent does not apply the
// edit. The direct control shows the allow would otherwise reach the agent:
// it applies the edit and, its turn aborted, ends `cancelled`.
func TestSDKAgentSelectedAfterCancel(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, viaProxy bool) {
		s := startSDK(t, viaProxy, cancelThenAnswer(selectAllow))
		stop := s.prompt("first")
		req := s.permission()
		checkRequest(s, req)
		applied := configApplied(s.updatesAfter(req.Raw))
		if viaProxy {
			if applied || stop != "end_turn" {
				s.fatalf("through the proxy: applied=%v stopReason=%q, want the edit skipped and end_turn", applied, stop)
			}
		} else if !applied || stop != "cancelled" {
			s.fatalf("direct: applied=%v stopReason=%q, want the edit applied and cancelled", applied, stop)
		}
		s.stop()
	})
}
