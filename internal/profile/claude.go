package profile

import (
	"regexp"

	"github.com/permhost/permhost/abi"
)

// claude is claude-agent-acp (Zed's adapter of Claude Code, npm
// @zed-industries/claude-agent-acp, later @agentclientprotocol/claude-agent-acp),
// recorded at 0.23.1 and 0.101.0. Both shapes put the command in
// rawInput.command and files in rawInput.file_path, diffs and locations;
// 0.101 adds a "name" member to the request, and both tell the tool's name
// in _meta.claudeCode.toolName on the updates (merged in). The option ids
// differ by version (0.23: allow_always/allow/reject, ExitPlanMode
// acceptEdits/default/plan; 0.101: allow-once/allow-with-updates/reject,
// exit-plan-*), never the same id for two things, so one profile holds both.
var claude = &Profile{
	Name:  "claude-agent-acp",
	Title: "Claude Code (claude-agent-acp)",
	Agents: []Match{
		{Name: "@zed-industries/claude-agent-acp", Min: "0.23.0"},
		{Name: "@agentclientprotocol/claude-agent-acp", Min: "0.23.0"},
	},
	ToolName: sources(meta("claudeCode.toolName"), field("name")),
	Tools: map[string]string{
		"Bash":         abi.FamilyShell,
		"Write":        abi.FamilyEdit,
		"Edit":         abi.FamilyEdit,
		"MultiEdit":    abi.FamilyEdit,
		"NotebookEdit": abi.FamilyEdit,
		"Read":         abi.FamilyRead,
		"Glob":         abi.FamilySearch,
		"Grep":         abi.FamilySearch,
		"LS":           abi.FamilySearch,
		"WebFetch":     abi.FamilyFetch,
		"WebSearch":    abi.FamilyFetch,
		"ExitPlanMode": abi.FamilySwitchMode,
		"mcp__*":       abi.FamilyMCP,
	},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command")),
			Paths:   sources(locations(), diffs(), rawInput("file_path"), rawInput("notebook_path"), rawInput("path")),
			URLs:    sources(rawInput("url")),
		},
	},
	Modes: []Mode{
		{ID: "default", Asks: true},
		{ID: "plan", Asks: true},
		{ID: "acceptEdits", Decides: "edits, and commands that only touch files (touch ran unasked)"},
		{ID: "auto", Decides: "everything: a model classifies each call (0.101's start mode; rm -rf build and a Write ran unasked)"},
		{ID: "bypassPermissions", Decides: "everything, unasked"},
		{ID: "dontAsk", Decides: "denies whatever is not pre-approved, unasked (0.23)"},
	},
	AskingMode: "default",
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   DefaultDeciding,
	Grants: []Grant{
		{OptionID: "allow-with-updates", Families: []string{abi.FamilyEdit}, Scope: abi.GrantScopeSession, Mode: "acceptEdits",
			Where: "switches the session to acceptEdits silently (no current_mode_update): later edits and touch ran unasked"},
		{OptionID: "allow-with-updates", Families: []string{abi.FamilyShell}, Scope: abi.GrantScopeWorkspace,
			Rule: "Bash({name})", Name: regexp.MustCompile(`^Yes, and (?:allow access to .+ and )?(?:allow )?(.+) commands$`),
			Where: "written to .claude/settings.local.json in the workspace; later sessions there too"},
		{OptionID: "allow_always", Families: []string{abi.FamilyEdit}, Scope: abi.GrantScopeSession, Mode: "acceptEdits",
			Where: "0.23: switches the session to acceptEdits silently; 1 request for 5 tool calls"},
		// ExitPlanMode: every option is the mode the session goes to.
		{OptionID: "exit-plan-default", Scope: abi.GrantScopeSession, Mode: "default"},
		{OptionID: "exit-plan-auto", Scope: abi.GrantScopeSession, Mode: "auto"},
		{OptionID: "exit-plan-accept-edits", Scope: abi.GrantScopeSession, Mode: "acceptEdits"},
		{OptionID: "exit-plan-bypass", Scope: abi.GrantScopeSession, Mode: "bypassPermissions"},
		{OptionID: "reject", Families: []string{abi.FamilySwitchMode}, Scope: abi.GrantScopeSession, Mode: "plan"},
		{OptionID: "acceptEdits", Families: []string{abi.FamilySwitchMode}, Scope: abi.GrantScopeSession, Mode: "acceptEdits"},
		{OptionID: "default", Families: []string{abi.FamilySwitchMode}, Scope: abi.GrantScopeSession, Mode: "default"},
		{OptionID: "plan", Families: []string{abi.FamilySwitchMode}, Scope: abi.GrantScopeSession, Mode: "plan"},
		{OptionID: "bypassPermissions", Families: []string{abi.FamilySwitchMode}, Scope: abi.GrantScopeSession, Mode: "bypassPermissions"},
	},
	Notes: []string{
		"0.101 starts new sessions in auto, which asks nothing; it asks with permissions.defaultMode \"default\" in ~/.claude/settings.json.",
		"The tool's name is on the updates (_meta.claudeCode.toolName) and, from 0.101, in the request's name member.",
	},
}
