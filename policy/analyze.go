package policy

import (
	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/shell"
)

// analyze fills the shell analysis and the paths of a request.
func analyze(tc abi.ToolCall, cwd, home string) (*abi.Shell, []abi.Path) {
	return shell.FromToolCall(tc, cwd, home)
}
