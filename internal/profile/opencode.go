package profile

import "github.com/permhost/permhost/abi"

// opencode is OpenCode's `opencode acp` (agentInfo "OpenCode", 1.x), read
// from its source (anomalyco/opencode packages/opencode/src/acp, not
// recorded). A permission request's tool call is the pending tool call:
// title, ACP kind from the tool name (bash → execute, edit/write/patch →
// edit, webfetch → fetch), locations, and rawInput = the permission's
// metadata (bash {command}, edit/write {filePath} or files[]); the option
// ids are once, always and reject. OpenCode's own `permission` settings
// decide what asks at all: a tool they allow runs with no request.
var opencode = &Profile{
	Name:   "opencode",
	Title:  "OpenCode (opencode acp)",
	Agents: []Match{{Name: "OpenCode", Min: "1.0.0"}},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command")),
			Cwd:     sources(rawInput("workdir"), rawInput("cwd")),
			Paths:   sources(locations(), diffs(), rawInput("filePath"), rawInput("filepath"), rawInput("path")),
			URLs:    sources(rawInput("url")),
		},
	},
	// Its modes are its agents (build, plan, user-defined): what asks is
	// the permission settings', whatever the mode.
	Modes: []Mode{
		{ID: "build", Asks: true},
		{ID: "plan", Asks: true},
	},
	AskingMode: "build",
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   DefaultDeciding,
	Grants: []Grant{
		{OptionID: "always", Scope: abi.GrantScopeSession, Rule: "the permission's \"always\" patterns (bash: the command's prefix with *)",
			Where: "reply \"always\": the permission's patterns are allowed for the rest of the session (code; not recorded)"},
	},
	Settings: &Settings{
		Decides: "its permission settings allow every tool by default (only some, such as external_directory, ask), and opencode --auto allows whatever is not denied",
		Asks:    "\"permission\": {\"*\": \"ask\"} in opencode.json (the project's or ~/.config/opencode/opencode.json), without --auto",
	},
	Notes: []string{
		"Read from source, not recorded: anomalyco/opencode packages/opencode/src/acp (permission.ts, tool.ts); agentInfo \"OpenCode\" as its users report it (1.15, 1.18).",
		"Questions go over its own extension method opencode/question (OPENCODE_ENABLE_QUESTION_TOOL=1), never as permission requests.",
	},
}
