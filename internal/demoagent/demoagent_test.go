package demoagent_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/demoagent"
)

// TestScriptFollowsAnswers drives the agent as an ACP client would and
// checks that each permission answer decides whether its call completes.
func TestScriptFollowsAnswers(t *testing.T) {
	clientR, agentW := io.Pipe()
	agentR, clientW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- demoagent.Run(context.Background(), agentR, agentW, "/home/dev") }()

	var mu sync.Mutex
	var asked []string
	conn := acptest.NewConn(clientR, clientW, func(ctx context.Context, m *acptest.Message) (any, error) {
		var p struct {
			ToolCall struct {
				Title     string `json:"title"`
				Kind      string `json:"kind"`
				Locations []struct{ Path string }
			} `json:"toolCall"`
			Options []struct{ OptionID string }
		}
		json.Unmarshal(m.Params, &p)
		mu.Lock()
		asked = append(asked, p.ToolCall.Title)
		n := len(asked)
		mu.Unlock()
		if len(p.Options) != 3 || p.Options[1].OptionID != "allow" {
			t.Errorf("options %+v", p.Options)
		}
		id := "reject"
		if n%2 == 1 {
			id = "allow"
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": id}}, nil
	})
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := conn.Call(ctx, "initialize", map[string]any{"protocolVersion": 1}); err != nil {
		t.Fatal(err)
	}
	res, err := conn.Call(ctx, "session/new", map[string]any{"cwd": "/home/dev/project", "mcpServers": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ SessionID string }
	json.Unmarshal(res, &s)
	res, err = conn.Call(ctx, "session/prompt", map[string]any{"sessionId": s.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"stopReason":"end_turn"}` {
		t.Fatalf("prompt result %s", res)
	}
	if len(asked) != len(demoagent.Script) || asked[1] != "rm -rf ~" || asked[4] != "Read ~/.ssh/id_rsa" {
		t.Fatalf("asked %q", asked)
	}
	var statuses []string
	for _, n := range conn.Notifications("session/update") {
		var u struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Status        string `json:"status"`
			} `json:"update"`
		}
		json.Unmarshal(n.Params, &u)
		if u.Update.SessionUpdate == "tool_call_update" {
			statuses = append(statuses, u.Update.Status)
		}
	}
	if strings.Join(statuses, ",") != "completed,failed,completed,failed,completed,failed" {
		t.Fatalf("statuses %v", statuses)
	}
	clientW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
