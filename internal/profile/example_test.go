package profile_test

import (
	"fmt"

	"github.com/permhost/permhost/internal/profile"
)

// Gemini CLI sends no rawInput: its profile finds the command in the title,
// the directory in the content text and the tool's name in the id.
func ExampleProfile_Read() {
	p := profile.Recognize("gemini-cli", "0.61.0")
	f, _ := p.Read([]byte(`{"toolCallId":"run_shell_command__run_shell_command_1796111364791_0","status":"pending",
		"title":"rm -rf build","kind":"execute","locations":[],
		"content":[{"type":"content","content":{"type":"text","text":"[current working directory /home/dev/project] (Remove build dir)"}}]}`),
		"/home/dev/project", "/home/dev")
	fmt.Println(p.Name, f.ToolName)
	fmt.Printf("%s %q in %s\n", f.Action.Family, f.Action.Command, f.Action.Cwd)
	// Output:
	// gemini-cli run_shell_command
	// shell "rm -rf build" in /home/dev/project
}

// Which modes ask, and which to use.
func ExampleProfile_AskingModeOf() {
	p := profile.Recognize("@agentclientprotocol/claude-agent-acp", "0.101.0")
	offered := []profile.Offered{{ID: "default", Name: "Manual"}, {ID: "acceptEdits", Name: "Accept edits"}, {ID: "plan", Name: "Plan"}, {ID: "auto", Name: "Auto"}}
	for _, m := range offered {
		fmt.Printf("%s asks: %v\n", m.ID, p.Asks(m.ID, m.Name))
	}
	mode, _ := p.AskingModeOf(offered)
	fmt.Println("use", mode, "via", p.ModeSwitch[0])
	// Output:
	// default asks: true
	// acceptEdits asks: false
	// plan asks: true
	// auto asks: false
	// use default via config_option
}
