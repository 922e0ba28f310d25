package policy

import "github.com/permhost/permhost/abi"

// analyze fills the shell analysis and paths of a request.
// TODO(lead): wire internal/shell once it lands.
func analyze(tc abi.ToolCall, cwd, home string) (*abi.Shell, []abi.Path) {
	return nil, nil
}
