package profile

import "github.com/permhost/permhost/abi"

// cline is the Cline CLI's ACP agent (cline/cline cli/src/acp and
// cli/src/agent/permissionHandler.ts, read from source, not recorded).
// Commands are rawInput.command, tools rawInput.tool; options allow_once,
// allow_always, reject_once (browser actions and command output offer no
// allow_always). Its agentInfo name is not stated in the code read: given
// as "cline" and "Cline" (unverified).
var cline = &Profile{
	Name:   "cline",
	Title:  "Cline CLI (cline --acp)",
	Agents: []Match{{Name: "cline", Min: "0.0.1"}, {Name: "Cline", Min: "0.0.1"}},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command")),
			Cwd:     sources(rawInput("cwd")),
			Paths:   standardPaths,
			URLs:    sources(rawInput("url")),
		},
	},
	Modes: []Mode{
		{ID: "plan", Asks: true},
		{ID: "act", Asks: true},
	},
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   append([]string{"yolo"}, DefaultDeciding...),
	Grants: []Grant{
		{OptionID: "allow_always", Families: []string{abi.FamilyShell}, Scope: abi.GrantScopeSession, Rule: "prefix: {root}",
			Where: "every later command whose first word is the same, for the session (AutoApprovalTracker, code)"},
		{OptionID: "allow_always", Families: []string{abi.FamilyEdit, abi.FamilyRead, abi.FamilySearch, abi.FamilyFetch, abi.FamilyMCP, abi.FamilyOther},
			Scope: abi.GrantScopeSession, Rule: "the same tool (rawInput.tool) or MCP server",
			Where: "the same tool (rawInput.tool) or MCP server, for the session (code)"},
	},
	Settings: &Settings{
		Decides: "its auto-approval settings and --yolo approve calls before any request is sent",
		Asks:    "auto-approval off and no --yolo",
	},
	Notes: []string{
		"Read from source, not recorded: cline/cline cli/src/agent/permissionHandler.ts; the agentInfo name is unverified.",
	},
}
