package main

import (
	"testing"
)

// renderDoc turns the links and mentions of repository files the binary
// carries into the commands that print them, and leaves the rest readable.
func TestRenderDoc(t *testing.T) {
	for _, tt := range []struct{ name, file, in, want string }{
		{"link named by its path", "docs/abi.md",
			"([docs/testing.md](testing.md) gives the format).\n",
			"(`permhost help test-file` gives the format).\n"},
		{"link with words", "docs/agents.md",
			"the action ([ABI 1.1](abi.md#action)).\n",
			"the action (ABI 1.1 (`permhost help abi`)).\n"},
		{"plugin directory", "docs/abi.md",
			"[`plugins/examples/readonly-as`](../plugins/examples/readonly-as), also\n",
			"`permhost plugins readonly-as`, also\n"},
		{"plugin README from a plugin README", "plugins/examples/plan-mode/README.md",
			"see [team-rules](../team-rules/README.md).\n",
			"see team-rules (`permhost plugins team-rules`).\n"},
		{"up to the repository", "plugins/examples/team-rules/README.md",
			"([docs/agents.md](../../../docs/agents.md)).\n",
			"(`permhost help agents`).\n"},
		{"prose mention", "plugins/examples/readonly-as/README.md",
			"the plugin ABI (docs/abi.md) needs nothing; `docs/config.md` and plugins/examples/team-rules/README.md\n",
			"the plugin ABI (permhost help abi) needs nothing; `permhost help config` and permhost plugins team-rules\n"},
		{"a file the binary does not carry keeps its text", "docs/agents.md",
			"[`internal/profile`](../internal/profile) and docs/mediation.md and plugins/examples/nope/README.md\n",
			"`internal/profile` and docs/mediation.md and plugins/examples/nope/README.md\n"},
		{"section of the same document", "docs/abi.md", "see [Go](#go).\n", "see Go.\n"},
		{"web address", "docs/abi.md", "[Extism](https://extism.org) and [https://x.org](https://x.org)\n",
			"Extism (https://extism.org) and https://x.org\n"},
		{"code block", "docs/abi.md",
			"Run:\n\n<!-- go-recipe -->\n```sh\ngo mod tidy\n\n[x](abi.md) docs/abi.md\n```\nDone.\n",
			"Run:\n\n    go mod tidy\n\n    [x](abi.md) permhost help abi\nDone.\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := renderDoc(tt.in, tt.file); got != tt.want {
				t.Errorf("renderDoc(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}
