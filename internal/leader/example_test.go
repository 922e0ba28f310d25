package leader_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/leader"
)

// A leader whose person allows every one-time request, and a worker asking
// it.
func Example() {
	dir, _ := os.MkdirTemp("", "leader-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	person := leader.PrompterFunc(func(ctx context.Context, p leader.Prompt) (string, error) {
		fmt.Printf("shown: %s from %s (%d options)\n", p.Request.ToolCall.Title, p.Worker.Agent, len(p.Options))
		return "allow", nil
	})
	srv, err := leader.Listen(ctx, leader.Options{Socket: filepath.Join(dir, "leader.sock"), Prompter: person})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	worker, _ := leader.NewClient(srv.Socket())
	answer, err := worker.Ask(ctx, leader.Question{
		Worker: leader.Worker{Agent: "codex-acp", Session: "s1"},
		Request: abi.Request{
			ToolCall: abi.ToolCall{ID: "call_1", Title: "npm test", Kind: abi.KindExecute},
			Options: []abi.Option{
				{OptionID: "approved-for-session", Name: "Always", Kind: abi.OptionAllowAlways, Durable: true},
				{OptionID: "allow", Name: "Yes", Kind: abi.OptionAllowOnce},
				{OptionID: "abort", Name: "No", Kind: abi.OptionRejectOnce},
			},
		},
		// The worker's fallback leaves the person one-time choices only.
		Shown: []string{"allow", "abort"},
	})
	fmt.Println(answer.OptionID, answer.DecidedBy, err)
	// Output:
	// shown: npm test from codex-acp (2 options)
	// allow person <nil>
}
