package host_test

import (
	"context"
	"fmt"
	"os"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
)

// The smallest embedding: load a module from bytes, decide one request.
func Example() {
	ctx := context.Background()
	wasm, err := os.ReadFile("testdata/echo.wasm")
	if err != nil {
		panic(err)
	}
	p, err := host.Load(ctx, host.Options{Name: "echo", Wasm: wasm, CacheDir: "off"})
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)

	d, err := p.Decide(ctx, abi.Request{
		ABI:        abi.Current,
		DecisionID: "d-1",
		ToolCall:   abi.ToolCall{ID: "t-1", Kind: abi.KindExecute, Title: "npm test"},
		Options: []abi.Option{
			{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
			{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
		},
	})
	if err != nil {
		fmt.Println("failed:", host.KindOf(err))
		return
	}
	o, _ := d.Option([]abi.Option{{OptionID: "allow", Kind: abi.OptionAllowOnce}})
	fmt.Println(d.Outcome, o.OptionID, d.Reason)
	// Output: allow allow d-1
}

// Failures carry a kind that says what went wrong.
func Example_failure() {
	ctx := context.Background()
	p, err := host.Load(ctx, host.Options{Path: "testdata/echo.wasm", CacheDir: "off"})
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)
	_, err = p.Decide(ctx, abi.Request{DecisionID: "TRAP!"})
	fmt.Println(host.KindOf(err))
	fmt.Println(err)
	// Output:
	// trap
	// host: plugin "echo": trap: wasm error: unreachable
}
