package profile

import (
	"regexp"

	"github.com/permhost/permhost/abi"
)

// qwen is Qwen Code run with --acp (npm @qwen-code/qwen-code, recorded at
// 0.24.4). A command is rawInput.command (its title is the command with the
// description appended, never read as one), files are rawInput.file_path,
// diffs and locations, and the tool's name is _meta.toolName.
var qwen = &Profile{
	Name:     "qwen-code",
	Title:    "Qwen Code",
	Agents:   []Match{{Name: "qwen-code", Min: "0.24.0"}},
	ToolName: sources(meta("toolName")),
	Tools: map[string]string{
		"run_shell_command": abi.FamilyShell,
		"write_file":        abi.FamilyEdit,
		"edit":              abi.FamilyEdit,
		"read_file":         abi.FamilyRead,
		"read_many_files":   abi.FamilyRead,
		"glob":              abi.FamilySearch,
		"grep_search":       abi.FamilySearch,
		"list_directory":    abi.FamilySearch,
		"web_fetch":         abi.FamilyFetch,
		"web_search":        abi.FamilyFetch,
		"exit_plan_mode":    abi.FamilySwitchMode,
		"mcp__*":            abi.FamilyMCP,
	},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command")),
			Cwd:     sources(rawInput("directory")),
			Paths:   sources(locations(), diffs(), rawInput("file_path"), rawInput("absolute_path"), rawInput("path"), rawInput("paths")),
			URLs:    sources(rawInput("url")),
		},
	},
	Modes: []Mode{
		{ID: "plan", Asks: true},
		{ID: "default", Asks: true},
		{ID: "auto-edit", Decides: "edits"},
		{ID: "auto", Decides: "what its model classifier calls safe; asks only when it cannot classify (the start mode)"},
		{ID: "yolo", Decides: "everything, unasked"},
	},
	AskingMode: "default",
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   DefaultDeciding,
	Grants: []Grant{
		{OptionID: "proceed_always_project", Families: []string{abi.FamilyShell, abi.FamilyMCP}, Scope: abi.GrantScopeWorkspace,
			Rule: "Bash({name})", Name: regexp.MustCompile(`: (.+)$`),
			Where: "written to .qwen/settings.json in the workspace: rm -rf build and rm -rf other then ran unasked, in later sessions too"},
		{OptionID: "proceed_always_user", Families: []string{abi.FamilyShell, abi.FamilyMCP}, Scope: abi.GrantScopeUser,
			Rule: "Bash({name})", Name: regexp.MustCompile(`: (.+)$`),
			Where: "written to ~/.qwen/settings.json (not exercised)"},
		{OptionID: "proceed_always", Families: []string{abi.FamilyEdit, abi.FamilySwitchMode}, Scope: abi.GrantScopeSession, Mode: "auto-edit",
			Where: "switches to auto-edit, with current_mode_update"},
		{OptionID: "proceed_once", Families: []string{abi.FamilySwitchMode}, Scope: abi.GrantScopeSession, Mode: "default"},
		{OptionID: "cancel", Families: []string{abi.FamilySwitchMode}, Scope: abi.GrantScopeSession, Mode: "plan"},
		{OptionID: "proceed_once_and_switch_to_default", Scope: abi.GrantScopeSession, Mode: "default",
			Where: "offered in auto mode when its classifier cannot decide"},
	},
	Notes: []string{
		"Starts in auto, which asks only when its classifier cannot decide; it asks with tools.approvalMode \"default\" in ~/.qwen/settings.json.",
		"Writes go through fs/write_text_file, edit and read_file read through fs/read_text_file.",
	},
}
