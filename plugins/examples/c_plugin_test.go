package examples_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
)

// TestNoForcePush runs the C example plugin through the real host.
func TestNoForcePush(t *testing.T) {
	p := loadExample(t, "no-force-push")
	if info := p.Info(); info.Name != "no-force-push" || !slices.Equal(info.ConfigKeys, []string{"allow_force_with_lease"}) {
		t.Errorf("describe = %+v", info)
	}
	push := func(words ...string) *abi.Shell {
		return parsedShell(strings.Join(words, " "), argv("git", "fetch"), argv(words...))
	}
	dynamic := push("git", "push", "$FLAGS", "origin", "main")
	dynamic.Commands[1].Dynamic = true
	unparsed := &abi.Shell{Source: `git push "$(cat flags)`, Parsed: false, Reason: "unterminated quote", Commands: []abi.Command{}}
	// A request of 3 MiB: the plugin's input buffer grows its memory.
	big := claudeBash("git push --force", "Push", push("git", "push", "--force"))
	big.ToolCall.RawInput, _ = json.Marshal(map[string]string{"command": "git push --force", "description": strings.Repeat("x", 3<<20)})
	runCases(t, p, []pluginCase{
		{name: "claude --force", req: claudeBash("git fetch && git push --force origin main", "Push", push("git", "push", "--force", "origin", "main")),
			want: abi.OutcomeReject, optionID: "reject", reason: "no force-push (--force): git push --force origin main"},
		{name: "codex -f", req: codexExec("git push -f", push("git", "push", "-f")), want: abi.OutcomeReject, optionID: "abort", reason: "(-f)"},
		{name: "a path for git", req: codexExec("/usr/bin/git -c x=y push origin +main", push("/usr/bin/git", "-c", "x=y", "push", "origin", "+main")),
			want: abi.OutcomeReject, optionID: "abort", reason: "(+main)"},
		{name: "--force-with-lease", req: claudeBash("git push --force-with-lease", "Push", push("git", "push", "--force-with-lease")), want: abi.OutcomeReject, optionID: "reject"},
		{name: "--force-with-lease allowed", req: withConfig(claudeBash("git push --force-with-lease", "Push", push("git", "push", "--force-with-lease")), `{"allow_force_with_lease":true}`),
			want: abi.OutcomeAbstain},
		{name: "--force allowed with the lease still rejected", req: withConfig(claudeBash("git push --force", "Push", push("git", "push", "--force")), `{"allow_force_with_lease":true}`),
			want: abi.OutcomeReject, optionID: "reject"},
		{name: "a refspec after --", req: claudeBash("git push -- origin +main", "Push", push("git", "push", "--", "origin", "+main")), want: abi.OutcomeReject, optionID: "reject"},
		{name: "a plain push", req: claudeBash("git push origin main", "Push", push("git", "push", "origin", "main")), want: abi.OutcomeAbstain},
		{name: "git fetch --force is not a push", req: claudeBash("git fetch --force", "Fetch", parsedShell("git fetch --force", argv("git", "fetch", "--force"))), want: abi.OutcomeAbstain},
		{name: "dynamic words", req: claudeBash(dynamic.Source, "Push", dynamic), want: abi.OutcomeAsk},
		{name: "an unparsed script mentioning push", req: claudeBash(unparsed.Source, "Push", unparsed), want: abi.OutcomeAsk, reason: "may force-push"},
		{name: "no shell", req: claudeFile("Write", cwd+"/.git/config"), want: abi.OutcomeAbstain},
		{name: "a 3 MiB request", req: big, want: abi.OutcomeReject, optionID: "reject"},
		{name: "agent text in the reason is cleaned", req: claudeBash("x", "Push", push("git", "push", "--force", "ma\"in\x1b[2J")),
			want: abi.OutcomeReject, optionID: "reject", reason: `git push --force ma"in?[2J`},
	})
}
