package jsontext_test

import (
	"fmt"

	"github.com/permhost/permhost/internal/jsontext"
)

func Example() {
	// An editor's answer that spells optionId twice: Go's encoding/json
	// would keep the second, the agent's parser the first.
	err := jsontext.Check([]byte(`{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}`))
	fmt.Println(err)
	id, _ := jsontext.CanonicalID([]byte(`5.5e1`))
	same, _ := jsontext.CanonicalID([]byte(`55`))
	fmt.Println(id == same)
	// Output:
	// jsontext: duplicate key "OptionId" at offset 59
	// true
}
