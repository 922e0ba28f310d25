package profile

import (
	"regexp"

	"github.com/permhost/permhost/abi"
)

// codex is codex-acp: the Rust adapter (agentInfo "codex-acp", npm
// @zed-industries/codex-acp, documented at 0.16.0), whose exec rawInput has
// an argv ["/bin/bash","-lc",SCRIPT] and a cwd and whose patches list
// rawInput.changes; and the TypeScript one (agentInfo
// "@agentclientprotocol/codex-acp", recorded at 2.6.0), whose exec
// rawInput has the script as a string and a cwd and whose patches name
// their files only in locations (the diff is in the tool_call before it).
// codex has no read or fetch tool: it reads with cat and fetches with curl
// through exec. Its option ids differ by version and never clash.
var codex = &Profile{
	Name:  "codex-acp",
	Title: "Codex (codex-acp)",
	Agents: []Match{
		{Name: "codex-acp", Min: "0.16.0"},
		{Name: "@agentclientprotocol/codex-acp", Min: "1.0.0"},
	},
	ToolName: sources(field("name")),
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command")),
			Cwd:     sources(rawInput("cwd")),
			Paths:   sources(locations(), diffs(), changes("changes")),
		},
	},
	Modes: []Mode{
		{ID: "read-only", Asks: true},
		{ID: "workspace-write", Decides: "edits in the workspace and sandboxed commands"},
		{ID: "agent", Decides: "everything: a guardian model reviews each call (2.6's start mode; it denied rm -rf build and applied a patch, neither asked)"},
		{ID: "agent-full-access", Decides: "everything, unasked, with network access"},
		{ID: "auto", Decides: "edits in the workspace and sandboxed commands (0.16)"},
		{ID: "full-access", Decides: "everything, unasked (0.16)"},
	},
	AskingMode: "read-only",
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   DefaultDeciding,
	Grants: []Grant{
		{OptionID: "accept_execpolicy_amendment", Families: []string{abi.FamilyShell}, Scope: abi.GrantScopeUser,
			Rule: "prefix: {name}", Name: regexp.MustCompile("start with `(.+)`"),
			Where: "prefix_rule(...) appended to $CODEX_HOME/rules/default.rules: the same prefix ran unasked, in later sessions too"},
		{OptionID: "approved-execpolicy-amendment", Families: []string{abi.FamilyShell}, Scope: abi.GrantScopeUser,
			Rule: "prefix: {name}", Name: regexp.MustCompile("start with `(.+)`"),
			Where: "0.16: prefix_rule(...) in $CODEX_HOME/rules/default.rules, pre-approved in every later session"},
		{OptionID: "allow_always", Families: []string{abi.FamilyShell}, Scope: abi.GrantScopeSession, Rule: "command: {command}",
			Where: "acceptForSession: the same command, for the rest of the session (code)"},
		{OptionID: "allow_always", Families: []string{abi.FamilyEdit}, Scope: abi.GrantScopeSession, Rule: "files: {paths}",
			Where: "acceptForSession: these files, for the rest of the session (code)"},
		{OptionID: "allow_for_session", Families: []string{abi.FamilyEdit}, Scope: abi.GrantScopeSession, Rule: "files: {paths}",
			Where: "\"don't ask again for these files\", this session (not exercised)"},
	},
	Elicitation: &MetaMatch{Key: "codex_approval_kind", Value: "mcp_tool_call"},
	Questions: []Question{
		// Recorded (2.6, v2 plan-mode transcripts): toolCallId
		// "plan-review:<id>-plan", kind switch_mode, rawInput {plan};
		// implement_plan switches collaboration_mode to default and
		// starts implementing, revise_plan keeps planning.
		{What: `plan review "Implement this plan?"`, Kind: abi.KindSwitchMode,
			OptionIDs: []string{"implement_plan", "revise_plan"}},
	},
	Notes: []string{
		"2.6 starts in agent (Auto review), which asks nothing; it asks with INITIAL_AGENT_MODE=read-only.",
		"With form elicitation advertised, MCP tool-call approvals arrive as elicitation/create (_meta.codex_approval_kind \"mcp_tool_call\").",
	},
}
