package answer_test

import (
	"fmt"

	"github.com/permhost/permhost/internal/answer"
)

// An editor's answer is read strictly and the agent gets only what permhost
// re-encodes from it, with the agent's own id bytes.
func ExampleDecodeResponse() {
	offered := func(id string) bool { return id == "allow" || id == "reject" }

	// OptionId and optionId: encoding/json would read "allow", the agent
	// "allow_always".
	_, err := answer.DecodeResponse([]byte(`{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}}`))
	fmt.Println(err)

	resp, _ := answer.DecodeResponse([]byte(`{ "id" : 5.0, "result" : {"outcome":{"optionId":"allow","outcome":"selected"}} }`))
	fmt.Println(resp.Reply.Check(offered))
	fmt.Println(string(answer.Encode([]byte(`5`), resp.Reply)))
	// Output:
	// answer: malformed permission answer: response: jsontext: duplicate key "OptionId" at offset 92
	// <nil>
	// {"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}
}
