package profile

// auggie is Augment's Auggie CLI run with --acp. Its source is not public
// (augmentcode/auggie holds documentation and examples), so this profile
// holds only what ACP defines, the common rawInput keys and Augment's
// documented tool-permission settings. Unverified: its agentInfo name
// (given as "auggie"), option ids, and the shape of the workspace-indexing
// consent (a question the generic shape recognises when its options are
// not allow/reject kinds or its tool call acts on nothing).
var auggie = &Profile{
	Name:   "auggie",
	Title:  "Auggie CLI (auggie --acp; unverified, source not public)",
	Agents: []Match{{Name: "auggie", Min: "0.0.1"}, {Name: "Auggie CLI", Min: "0.0.1"}},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command")),
			Cwd:     sources(rawInput("cwd")),
			Paths:   standardPaths,
			URLs:    sources(rawInput("url")),
		},
	},
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   DefaultDeciding,
	Settings: &Settings{
		Decides: "toolPermissions rules (allow, deny, ask-user; first match wins) decide first, and a tool no rule matches follows the CLI's own default",
		Asks:    "a final toolPermissions rule {\"toolName\": \".*\", \"permission\": {\"type\": \"ask-user\"}} in ~/.augment/settings.json",
	},
	Notes: []string{
		"Source not public: the profile is from docs.augmentcode.com/cli/permissions; nothing here was recorded or read in code.",
		"Its workspace-indexing consent is a question for the person: passed untouched when it has the generic question shape; otherwise a plugin sees it as family other.",
	},
}
