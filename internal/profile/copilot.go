package profile

// copilot is GitHub Copilot CLI run with --acp. Its source is not public
// (github/copilot-cli holds only releases and issues), so this profile
// holds only what its issues and changelog state and what ACP itself
// defines: it reads like Generic, plus what is known of its settings.
// Unverified: the agentInfo name (given as "GitHub Copilot CLI"), its
// option ids and what its "always" grants.
var copilot = &Profile{
	Name:   "copilot-cli",
	Title:  "GitHub Copilot CLI (copilot --acp; unverified, source not public)",
	Agents: []Match{{Name: "GitHub Copilot CLI", Min: "0.0.1"}, {Name: "copilot", Min: "0.0.1"}},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command")),
			Cwd:     sources(rawInput("cwd")),
			Paths:   standardPaths,
			URLs:    sources(rawInput("url")),
		},
	},
	// Modes (agent, plan, autopilot) are not asking switches: allow_all,
	// a config option of category "permissions", is.
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   append([]string{"autopilot"}, DefaultDeciding...),
	Settings: &Settings{
		Decides: "the allow_all session config option (category permissions, from 1.0.39), --allow-all-tools, --allow-tool and --yolo allow calls unasked; 1.0.81-2 to -5 sent no session/request_permission in --acp at all (github/copilot-cli#4537)",
		Asks:    "allow_all off and no --allow-all-tools, --allow-tool or --yolo on the command line",
	},
	Notes: []string{
		"Source not public: the profile is from github/copilot-cli issues #845, #3556, #4537 and its changelog; nothing here was recorded.",
	},
}
