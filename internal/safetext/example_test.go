package safetext_test

import (
	"fmt"

	"github.com/permhost/permhost/internal/safetext"
)

func Example() {
	// A tool call's kind with a terminal title sequence, and an option
	// name that would show reversed.
	fmt.Println(safetext.Terminal("execute\x1b]2;pwned\x07"))
	fmt.Println(safetext.Terminal("Allow \u202eecnO"))
	fmt.Println(safetext.Terminal("日本語 👍🏽"))
	fmt.Println(safetext.HTML("<b>\u200bhi</b>"))
	// Output:
	// execute\x1b]2;pwned\a
	// Allow \u202eecnO
	// 日本語 👍🏽
	// &lt;b&gt;\u200bhi&lt;/b&gt;
}
