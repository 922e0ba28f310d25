package profile

import "github.com/permhost/permhost/abi"

// gemini is Gemini CLI run with --acp (npm @google/gemini-cli, recorded at
// 0.61.0). It sends no rawInput: a shell command is only the title, its
// directory only in the content text "[current working directory DIR]", a
// fetch's URLs only in the title (the prompt), and the tool's name only as
// the prefix of the toolCallId ("run_shell_command__run_shell_command_…").
// This is the one profile whose title is a command, and only for the shell
// family.
var gemini = &Profile{
	Name:     "gemini-cli",
	Title:    "Gemini CLI",
	Agents:   []Match{{Name: "gemini-cli", Min: "0.61.0"}},
	ToolName: sources(idPrefix("__")),
	Tools: map[string]string{
		"run_shell_command":   abi.FamilyShell,
		"write_file":          abi.FamilyEdit,
		"replace":             abi.FamilyEdit,
		"read_file":           abi.FamilyRead,
		"read_many_files":     abi.FamilyRead,
		"glob":                abi.FamilySearch,
		"search_file_content": abi.FamilySearch,
		"grep_search":         abi.FamilySearch,
		"list_directory":      abi.FamilySearch,
		"web_fetch":           abi.FamilyFetch,
		"google_web_search":   abi.FamilyFetch,
		"exit_plan_mode":      abi.FamilySwitchMode,
		"enter_plan_mode":     abi.FamilySwitchMode,
	},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command")),
			Cwd:     sources(rawInput("cwd")),
			Paths:   standardPaths,
			URLs:    sources(rawInput("url")),
		},
		abi.FamilyShell: {
			Command: sources(rawInput("command"), title()),
			Cwd:     sources(rawInput("cwd"), between("[current working directory ", "]")),
		},
		abi.FamilyFetch: {
			URLs: sources(rawInput("url"), titleURLs()),
		},
	},
	Modes: []Mode{
		{ID: "default", Asks: true},
		{ID: "plan", Asks: true},
		{ID: "autoEdit", Decides: "edits (told only as an agent_message_chunk \"[MODE_UPDATE] autoEdit\")"},
		{ID: "yolo", Decides: "everything, unasked"},
	},
	AskingMode: "default",
	ModeSwitch: []Switch{SwitchSetMode},
	Deciding:   DefaultDeciding,
	Grants: []Grant{
		{OptionID: "proceed_always", Families: []string{abi.FamilyShell}, Scope: abi.GrantScopeSession, Rule: "command root: {root}",
			Where: "a session rule on the command root: after rm -rf build, rm -rf other ran unasked (touch a.txt asked)"},
		{OptionID: "proceed_always", Families: []string{abi.FamilyEdit}, Scope: abi.GrantScopeSession, Mode: "autoEdit",
			Where: "switches to autoEdit, told only in a message chunk; refused in an untrusted folder (the write is then not done)"},
	},
	Notes: []string{
		"Starts in default, which asks; read_file is never asked.",
		"Writes go through fs/write_text_file after fs/read_text_file; permission requests carry no rawInput.",
	},
}
