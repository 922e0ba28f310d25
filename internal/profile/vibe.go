package profile

import (
	"github.com/permhost/permhost/abi"
)

// vibe is Mistral Vibe's ACP entry point (vibe-acp, agentInfo
// "@mistralai/mistral-vibe"), read from its source (mistralai/mistral-vibe
// vibe/acp, not recorded). Its tool calls send rawInput as the arguments'
// JSON text, a string ("{\"command\":\"rm -rf build\"}"), never as an
// object: the facts are read inside it. Options: allow_once, allow_always
// ("for remainder of this session"), allow_always_permanent ("Always
// allow": saved to its configuration), reject_once; a teleport push asks
// teleport_push_and_continue / teleport_cancel.
var vibe = &Profile{
	Name:   "mistral-vibe",
	Title:  "Mistral Vibe (vibe-acp)",
	Agents: []Match{{Name: "@mistralai/mistral-vibe", Min: "1.0.0"}},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInputJSON("command"), rawInput("command")),
			Cwd:     sources(rawInputJSON("cwd")),
			Paths:   sources(locations(), diffs(), rawInputJSON("path"), rawInputJSON("file_path"), rawInput("path"), rawInput("file_path")),
			URLs:    sources(rawInputJSON("url"), rawInput("url")),
		},
	},
	Modes: []Mode{
		{ID: "default", Asks: true},
		{ID: "plan", Asks: true},
		{ID: "chat", Decides: "nothing that changes files: read-only tools, permissions bypassed"},
		{ID: "accept-edits", Decides: "write_file and edit"},
		{ID: "auto-approve", Decides: "every tool, unasked"},
	},
	AskingMode: "default",
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   DefaultDeciding,
	Grants: []Grant{
		{OptionID: "allow_always", Scope: abi.GrantScopeSession, Rule: "the tool, or its options' _meta.required_permissions session_pattern",
			Where: "the tool (or the required_permissions patterns its option's _meta lists) for the rest of the session (code)"},
		{OptionID: "allow_always_permanent", Scope: abi.GrantScopeUser, Rule: "the tool, or its options' _meta.required_permissions session_pattern",
			Where: "the same, saved permanently to Vibe's configuration (code)"},
	},
	Questions: []Question{
		{What: "teleport push (push unpushed commits and continue)", OptionIDs: []string{"teleport_push_and_continue", "teleport_cancel"}},
	},
	Settings: &Settings{
		Decides: "each tool's permission setting (always, never, ask) and bash's allowlist decide before the mode: a tool set to always, or a command on the allowlist, runs unasked in default",
		Asks:    "permission = \"ask\" for bash, write_file and edit in Vibe's config.toml ([tools.bash], [tools.write_file], [tools.edit]) and an empty bash allowlist",
	},
	Notes: []string{
		"Read from source, not recorded: mistralai/mistral-vibe vibe/acp (utils.py ToolOption, acp_agent_loop.py) and vibe/core/agents/models.py.",
		"rawInput is a JSON string, not an object: permhost reads the command and paths inside it.",
	},
}
