package policy

import (
	"encoding/json"
	"path"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/profile"
)

// applyV2 adds what an ACP v2 request carries to the plugins' request
// (ABI 1.4): its title, description and subject type, and a command
// subject's command and cwd as the action, read like any shell command
// (facts.Command feeds the shell analysis). The rest of the request is
// built as for v1, so the same action gets the same request shape.
func applyV2(pr *acp.PermissionRequest, req *abi.Request, facts *profile.Facts, cwd string) {
	v := pr.V2
	req.Title, req.Description = v.Title, v.Description
	if v.SubjectType == "" {
		return
	}
	req.Subject = &abi.Subject{Type: v.SubjectType}
	if v.SubjectType != acp.SubjectCommand {
		return
	}
	script, _ := json.Marshal(v.Command)
	facts.Command = script
	facts.Action.Family = abi.FamilyShell
	facts.Action.Command = v.Command
	dir := v.Cwd
	if dir != "" && !path.IsAbs(dir) && path.IsAbs(cwd) {
		dir = path.Join(cwd, dir)
	}
	if path.IsAbs(dir) {
		facts.Dir = path.Clean(dir)
		facts.Action.Cwd = facts.Dir
	} else {
		facts.Dir, facts.Action.Cwd = "", ""
		if path.IsAbs(cwd) {
			facts.Action.Cwd = path.Clean(cwd)
		}
	}
}
