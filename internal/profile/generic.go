package profile

import "github.com/permhost/permhost/abi"

// Generic is the profile of an agent no other profile is for. It reads what
// ACP defines (kind, locations, diffs) and the rawInput keys most agents
// use — command (a script or an argv) and cwd, file_path, notebook_path,
// path, paths, codex-style changes, url — and never treats a title as a
// command. It knows no modes: one whose id or name contains a Deciding word
// is taken to decide by itself. It knows no options: every durable one may
// grant anything.
//
// The ACP SDK example agent (@agentclientprotocol/sdk's
// dist/examples/agent.js) sends no agentInfo and gets this profile, which
// reads its one request, an edit with rawInput {path, content} and
// locations, completely.
var Generic = &Profile{
	Name:  "generic",
	Title: "an agent permhost has no profile for",
	ToolName: sources(
		meta("claudeCode.toolName"),
		meta("toolName"),
	),
	Tools: map[string]string{"mcp__*": abi.FamilyMCP},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command")),
			Cwd:     sources(rawInput("cwd")),
			Paths:   standardPaths,
			URLs:    sources(rawInput("url"), rawInput("urls")),
		},
	},
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   DefaultDeciding,
	Notes: []string{
		"Unknown agents: only ACP's own fields and the common rawInput keys are read; a title is never a command.",
		"The ACP SDK example agent sends no agentInfo and is read with this profile.",
	},
}

// standardPaths are where agents name the files a tool touches: ACP's
// locations and diffs, and the rawInput keys most agents use.
var standardPaths = sources(
	locations(),
	diffs(),
	rawInput("file_path"),
	rawInput("notebook_path"),
	rawInput("path"),
	rawInput("paths"),
	changes("changes"),
)
