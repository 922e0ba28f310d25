package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/permhost/permhost/acp"
)

// tinyAgent plays a minimal ACP agent on r/w: one permission request per
// prompt, then end_turn. A real program starts its agent with
// acp.StartAgent and passes agent.Stdin() and agent.Stdout().
func tinyAgent(r io.Reader, w io.Writer) {
	in := bufio.NewScanner(r)
	var promptID json.RawMessage
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(in.Bytes(), &m)
		switch m.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentInfo":{"name":"tiny","version":"1"}}}`+"\n", m.ID)
		case "session/new":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}`+"\n", m.ID)
		case "session/prompt":
			promptID = m.ID
			fmt.Fprintln(w, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Deleting build/"}}}}`)
			fmt.Fprintln(w, `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"rm -rf build","kind":"execute"},"options":[{"optionId":"yes","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"}]}}`)
		case "": // the answer to the permission request
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`+"\n", promptID)
		}
	}
}

func ExampleClientConn() {
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	go tinyAgent(toAgentR, fromAgentW)

	conn, err := acp.NewClientConn(toAgentW, fromAgentR, acp.ClientOptions{
		Info: acp.Peer{Name: "example", Version: "1.0"},
		// A policy: reject anything that executes; the client checks that
		// the option was offered.
		Permissions: acp.PermissionHandlerFunc(func(ctx context.Context, req *acp.PermissionRequest) (acp.PermissionDecision, error) {
			return acp.PermissionDecision{OptionID: "no", DecidedBy: "example", Reason: "no shell commands"}, nil
		}),
		// Events arrive in order, off the read loop.
		Events: func(ev acp.Event) {
			switch ev.Kind {
			case acp.EventText:
				fmt.Println("text:", ev.Text)
			case acp.EventPermission:
				p := ev.Permission
				fmt.Printf("permission %q: %s %s by %s (%s)\n", p.Title, p.Outcome, p.OptionID, p.DecidedBy, p.Reason)
			case acp.EventStop:
				fmt.Println("stop:", ev.StopReason)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	ctx := context.Background()
	if _, err := conn.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	cwd, _ := os.Getwd()
	sid, err := conn.NewSession(ctx, cwd)
	if err != nil {
		fmt.Println(err)
		return
	}
	stop, err := conn.Prompt(ctx, sid, "clean the build")
	fmt.Println("Prompt returned", stop, err)
	// Output:
	// text: Deleting build/
	// permission "rm -rf build": selected no by example (no shell commands)
	// stop: end_turn
	// Prompt returned end_turn <nil>
}
