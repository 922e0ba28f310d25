package examples_test

import (
	"fmt"
	"strings"
)

// The ACP v2 columns of the cross-agent table: claude-agent-acp 0.101 and
// codex-acp 2.6 asked over v2 (testdata/transcripts/v2) must get the
// decisions they get over v1. A v2 request is the v1 one with the tool
// call as its subject, the agent's title (and codex's description), and
// the tool call in v2's shape; tool calls are only tool_call_update.
func init() {
	agentShapes = append(agentShapes,
		v2Of(agentShapes[0], "Claude Code (ACP v2)", "v2/claude101-v2-offer-v2.jsonl", map[string]recordedRequest{
			"run `rm -rf build`": {"v2/claude101-v2-offer-v2.jsonl", 0},
			"write `hello.txt`":  {"v2/claude101-v2-offer-v2.jsonl", 1},
			"exit plan mode":     {"v2/claude101-v2-plan-mode.jsonl", 0},
		}, claudeV2),
		v2Of(agentShapes[1], "Codex (ACP v2)", "v2/codexts-v2-offer-v2.jsonl", map[string]recordedRequest{
			"run `rm -rf build`": {"v2/codexts-v2-offer-v2.jsonl", 0},
			"write `hello.txt`":  {"v2/codexts-v2-offer-v2.jsonl", 1},
			"exit plan mode":     {"v2/codexts-v2-plan-mode.jsonl", 0},
		}, codexV2))
}

// recordedCells counts the cells of the table a recorded request decides.
func recordedCells() int {
	n := 0
	for _, s := range agentShapes {
		n += len(s.recorded)
	}
	return n
}

// v2Of is the v2 column of the agent base asks as: patch turns its v1
// tool call into v2's and returns the request's title and description.
func v2Of(base agentShape, column, transcript string, recorded map[string]recordedRequest, patch func(a tableAction, tc obj) (title, description string)) agentShape {
	return agentShape{column: column, transcript: transcript, recorded: recorded, v2: true,
		ask: func(a tableAction, n int) ([]map[string]any, map[string]any) {
			updates, params := base.ask(a, n)
			for _, u := range updates {
				if u["sessionUpdate"] == "tool_call" {
					u["sessionUpdate"] = "tool_call_update"
				}
			}
			tc := params["toolCall"].(obj)
			title, description := patch(a, tc)
			p := obj{"title": title, "subject": obj{"type": "tool_call", "toolCall": tc}, "options": params["options"]}
			if description != "" {
				p["description"] = description
			}
			return updates, p
		}}
}

// claudeV2: no status; a command's content is its terminal, a diff is
// v2's {changes, patch}; ExitPlanMode asks "Ready to code?".
func claudeV2(a tableAction, tc obj) (string, string) {
	delete(tc, "status")
	switch a.family {
	case "shell":
		tc["content"] = []obj{{"type": "terminal", "terminalId": tc["toolCallId"]}}
	case "write", "edit":
		p := a.abs()
		op, text := "add", fmt.Sprintf("diff --git %s %s\nnew file mode 100644\n--- /dev/null\n+++ %s\n@@ -0,0 +1 @@\n+%s", p, p, p, a.content)
		if a.family == "edit" {
			op, text = "modify", fmt.Sprintf("diff --git %s %s\n--- %s\n+++ %s\n@@ -1 +1 @@\n-%s+%s", p, p, p, p, a.old, a.content)
		}
		tc["content"] = []obj{{"type": "diff", "changes": []obj{{"operation": op, "path": p, "fileType": "text"}}, "patch": obj{"format": "git_patch", "text": text}}}
	case "plan":
		return "Ready to code?", ""
	}
	return tc["title"].(string), ""
}

// codexV2: the title is a question of its own, an exec's description the
// model's justification; the plan review's tool call has no title.
func codexV2(a tableAction, tc obj) (string, string) {
	switch a.family {
	case "write", "edit":
		return "Make edits?", ""
	case "plan":
		delete(tc, "title")
		return "Implement this plan?", ""
	}
	return "Run command?", strings.TrimSuffix(a.desc, ".") + "?"
}
