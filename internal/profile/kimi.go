package profile

import "github.com/permhost/permhost/abi"

// kimi is Kimi Code CLI (agentInfo "Kimi Code CLI"), read from its sources
// (not recorded): the TypeScript CLI of MoonshotAI/kimi-code (npm
// @moonshot-ai/kimi-code 0.x, packages/acp-adapter) and the Python kimi-cli
// 1.x (MoonshotAI/kimi-cli, src/kimi_cli/acp), which share the name. The
// TypeScript adapter sends rawInput (Bash {command, cwd}, Write/Edit
// {file_path}) and an ACP kind; the Python one sends no kind and no
// rawInput: a tool call's arguments are only the JSON text of its content
// ({"command": …}), and its permission request (whose content replaces
// that) says "Requesting approval to perform: Run command `…`".
var kimi = &Profile{
	Name:   "kimi-code",
	Title:  "Kimi Code CLI (kimi acp)",
	Agents: []Match{{Name: "Kimi Code CLI", Min: "0.1.0"}},
	// kimi-cli titles a call "Tool: argument" (or the bare name); 0.x
	// titles it with the tool's description, so only its ACP kind counts.
	ToolName: sources(titleBefore(": ")),
	Tools: map[string]string{
		"Shell":          abi.FamilyShell,
		"WriteFile":      abi.FamilyEdit,
		"StrReplaceFile": abi.FamilyEdit,
		"ReadFile":       abi.FamilyRead,
		"ReadMediaFile":  abi.FamilyRead,
		"Glob":           abi.FamilySearch,
		"Grep":           abi.FamilySearch,
		"SearchWeb":      abi.FamilyFetch,
		"FetchURL":       abi.FamilyFetch,
	},
	Fields: map[string]Fields{
		"": {
			Command: sources(rawInput("command"), contentJSON("command"),
				betweenToEnd("Requesting approval to perform: Run command `", "`"),
				betweenToEnd("Requesting approval to perform: Run background command `", "`")),
			Cwd:   sources(rawInput("cwd"), contentJSON("cwd")),
			Paths: sources(locations(), diffs(), rawInput("file_path"), rawInput("path"), contentJSON("path"), contentJSON("file_path")),
			URLs:  sources(rawInput("url"), contentJSON("url")),
		},
	},
	Modes: []Mode{
		{ID: "default", Asks: true},
		{ID: "plan", Asks: true},
		{ID: "auto", Decides: "everything: \"the agent decides everything without asking\""},
		{ID: "yolo", Decides: "every tool action (questions are still asked)"},
	},
	AskingMode: "default",
	ModeSwitch: []Switch{SwitchConfigOption, SwitchSetMode},
	Deciding:   DefaultDeciding,
	Grants: []Grant{
		{OptionID: "approve_always", Scope: abi.GrantScopeSession, Rule: "the request's matcher (tool and arguments)",
			Where: "0.x: \"Approve for this session\": a session-runtime allow rule for the same matcher (code)"},
		{OptionID: "approve_for_session", Scope: abi.GrantScopeSession, Rule: "the whole action (\"run command\": any command)",
			Where: "kimi-cli 1.x: the action (\"run command\", \"edit file\") for the rest of the session, whatever its arguments (code)"},
	},
	Questions: []Question{
		// AskUserQuestion (q{n}_opt_{i} allow_once answers and q{n}_skip)
		// is the generic shape every profile recognises. Plan review:
		// plan_opt_{i} (one per proposed plan) or plan_approve, then
		// plan_revise and plan_reject_and_exit, no ACP kind.
		{What: "plan review (plan_opt_{i} or plan_approve, plan_revise, plan_reject_and_exit)", OptionPrefix: "plan_"},
	},
	Settings: &Settings{
		Decides: "0.x: every session starts with the permission mode default_permission_mode names (manual, yolo or auto) while its mode option reads \"default\"",
		Asks:    "default_permission_mode = \"manual\" in ~/.kimi-code/config.toml (kimi-cli 1.x: default_yolo = false in ~/.kimi/config.toml)",
	},
	Notes: []string{
		"Read from source, not recorded: MoonshotAI/kimi-code packages/acp-adapter 0.3.10 (CLI 0.38.0) and MoonshotAI/kimi-cli 1.49.0 src/kimi_cli/acp.",
		"kimi-cli 1.x answers AskUserQuestion itself over ACP (an empty answer) and offers only the mode \"default\".",
		"Plan review with several plans offers plan_opt_{i} (allow_once) beside plan_revise and plan_reject_and_exit: a question, never a tool call.",
	},
}
