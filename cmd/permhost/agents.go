package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/profile"
)

// knownAgent is one agent permhost was recorded with (docs/agents.md of the
// shared notes): how to launch it, what it says of itself in initialize,
// and what it needs so that it asks before acting, which is when permhost
// decides anything. `permhost init --agent` prints its editor entry, and
// `permhost eval --agent` builds requests as from it.
type knownAgent struct {
	key     string // the --agent value
	title   string // for people, and the editor entry's name
	profile string // its internal/profile Name
	// info is its initialize agentInfo, as recorded.
	info acp.Peer
	// command launches it over ACP on stdin/stdout (npx installs the
	// pinned version on first use); env is what it needs besides.
	command []string
	env     map[string]string
	node    string // the Node.js it needs
	// asks says when it sends permission requests, and what makes it.
	asks string
}

var knownAgents = []knownAgent{
	{
		key: "claude", title: "Claude Code", profile: "claude-agent-acp",
		info:    acp.Peer{Name: "@agentclientprotocol/claude-agent-acp", Title: "Claude Agent", Version: "0.101.0"},
		command: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp@0.101.0"},
		node:    "22 or later",
		asks: `claude-agent-acp starts new sessions in "auto" mode, where Claude Code decides by itself. ` +
			`With [session] modes = "govern" (the default) permhost moves each new session to "default", where it asks, ` +
			`before the editor sees it: nothing to edit. Only with modes = "pass" put ` +
			`{"permissions":{"defaultMode":"default"}} in ~/.claude/settings.json (or the project's .claude/settings.json).`,
	},
	{
		key: "codex", title: "Codex", profile: "codex-acp",
		info:    acp.Peer{Name: "@agentclientprotocol/codex-acp", Title: "Codex", Version: "2.6.0"},
		command: []string{"npx", "-y", "@agentclientprotocol/codex-acp@2.6.0"},
		env:     map[string]string{"INITIAL_AGENT_MODE": "read-only"},
		node:    "20 or later",
		asks: `codex-acp starts in "agent" mode (Auto review), where a model reviews each call and nothing is asked; ` +
			`INITIAL_AGENT_MODE=read-only (in env above) makes it start in a mode that asks.`,
	},
	{
		key: "gemini", title: "Gemini CLI", profile: "gemini-cli",
		info:    acp.Peer{Name: "gemini-cli", Title: "Gemini CLI", Version: "0.61.0"},
		command: []string{"npx", "-y", "@google/gemini-cli@0.61.0", "--acp"},
		node:    "20 or later",
		asks: `Gemini CLI asks in its default mode ("Prompts for approval"), except before its own read_file; ` +
			`in autoEdit and yolo it decides by itself.`,
	},
	{
		key: "qwen", title: "Qwen Code", profile: "qwen-code",
		info:    acp.Peer{Name: "qwen-code", Title: "Qwen Code", Version: "0.24.4"},
		command: []string{"npx", "-y", "@qwen-code/qwen-code@0.24.4", "--acp"},
		node:    "22 or later",
		asks: `Qwen Code starts in "auto" mode, where a classifier decides most calls and only the rest are asked. ` +
			`With [session] modes = "govern" (the default) permhost moves each new session to "default", where it asks: ` +
			`nothing to edit. Only with modes = "pass" put {"tools":{"approvalMode":"default"}} in ~/.qwen/settings.json.`,
	},
}

// findAgent returns the known agent with that key or profile name.
func findAgent(name string) (knownAgent, bool) {
	for _, a := range knownAgents {
		if a.key == name || a.profile == name {
			return a, true
		}
	}
	return knownAgent{}, false
}

func agentKeys() string {
	var keys []string
	for _, a := range knownAgents {
		keys = append(keys, a.key)
	}
	return strings.Join(keys, ", ")
}

// agentPeer reads --agent for eval: a known agent's key or profile name
// (its recorded agentInfo), "generic" (no agentInfo: the generic profile),
// or an agentInfo "name@version" ("@scope/name@1.2.3" works).
func agentPeer(s string) (acp.Peer, error) {
	if s == "" || s == profile.Generic.Name {
		return acp.Peer{}, nil
	}
	if a, ok := findAgent(s); ok {
		return a.info, nil
	}
	if i := strings.LastIndexByte(s, '@'); i > 0 {
		return acp.Peer{Name: s[:i], Version: s[i+1:]}, nil
	}
	var names []string
	for _, p := range profile.All() {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return acp.Peer{}, fmt.Errorf("--agent %q: want %s, a profile (%s) or an agentInfo name@version", s, agentKeys(), strings.Join(names, ", "))
}
