package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/acptest"
)

func runCheck(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(permhostBin, append([]string{"check"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()) // no user configuration
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !asExit(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

type checkJSON struct {
	Agent struct {
		Name, Version string
	} `json:"agent"`
	Profile string `json:"profile"`
	Modes   []struct {
		ID      string `json:"id"`
		Asks    bool   `json:"asks"`
		Current bool   `json:"current"`
	} `json:"modes"`
	Current    string `json:"current"`
	Target     string `json:"target"`
	Switch     string `json:"switch"`
	Switched   string `json:"switched"`
	Governable bool   `json:"governable"`
	Cwd        string `json:"cwd"`
}

// TestCheckSDKAgent: the ACP SDK's example agent sends no agentInfo and no
// modes: the generic profile, nothing to switch, governable.
func TestCheckSDKAgent(t *testing.T) {
	t.Parallel()
	sdk := acptest.SDKAgent(t)
	code, out, errOut := runCheck(t, append([]string{"--"}, sdk...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"agent: (no agentInfo)", "generic: an agent permhost has no profile for", "modes: none offered",
		"permhost would choose: nothing (the session offers no modes)", "governable: yes"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCheck(t, append([]string{"--json", "--"}, sdk...)...)
	var rep checkJSON
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Profile != "generic" || len(rep.Modes) != 0 || !rep.Governable || rep.Target != "" {
		t.Fatalf("--json: %d %+v %v", code, rep, err)
	}
	if _, err := os.Stat(rep.Cwd); !os.IsNotExist(err) {
		t.Errorf("the temporary directory %s is left: %v", rep.Cwd, err)
	}
}

// TestCheckAutoAgent: an agent that behaves as claude-agent-acp 0.101 does,
// starting in auto: its profile, auto marked as deciding and current,
// default chosen and set through the mode config option (the agent gets
// session/set_config_option), governable.
func TestCheckAutoAgent(t *testing.T) {
	t.Parallel()
	report := filepath.Join(t.TempDir(), "received.jsonl")
	code, out, errOut := runCheck(t, "--", likeAgent(t), "-agent", "claude101", "-report", report)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"agent: @agentclientprotocol/claude-agent-acp 0.101.0 (Claude Agent)",
		"claude-agent-acp: Claude Code (claude-agent-acp)",
		`modes (changed by config option "mode", session/set_mode):`,
		"* auto", "decides by itself: everything",
		"permhost would choose: default, by session/set_config_option (tried: the agent accepted it)",
		"governable: yes — the current mode auto decides by itself; default asks",
		"reasons: the agent advertises _session/steering",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	got, _ := os.ReadFile(report)
	if !bytes.Contains(got, []byte(`"method":"session/set_config_option"`)) || !bytes.Contains(got, []byte(`"value":"default"`)) {
		t.Errorf("the agent received:\n%s", got)
	}

	// --no-switch only reports, and --json says the same.
	code, out, _ = runCheck(t, "--json", "--no-switch", "--", likeAgent(t), "-agent", "claude101")
	var rep checkJSON
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("--json: %d %v %s", code, err, out)
	}
	if rep.Profile != "claude-agent-acp" || rep.Current != "auto" || rep.Target != "default" || rep.Switch != "config_option" || rep.Switched != "" || !rep.Governable {
		t.Errorf("report %+v", rep)
	}
	asks := map[string]bool{}
	for _, m := range rep.Modes {
		asks[m.ID] = m.Asks
	}
	if !asks["default"] || !asks["plan"] || asks["auto"] || asks["acceptEdits"] {
		t.Errorf("modes %+v", rep.Modes)
	}
}

// TestCheckNotGovernable: an agent without a profile whose every mode
// decides by itself cannot be governed: exit 1.
func TestCheckNotGovernable(t *testing.T) {
	t.Parallel()
	code, out, _ := runCheck(t, "--", likeAgent(t), "-agent", "deciding")
	if code != 1 || !strings.Contains(out, "governable: no — the current mode yolo decides by itself and no offered mode asks") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// The configured words replace the built-in ones for an agent without
	// a profile: with only "yolo", "Full auto" counts as asking.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "permhost.toml")
	os.WriteFile(cfg, []byte("[session]\nmodes = \"govern\"\ndeciding_words = [\"yolo\"]\n"), 0o600)
	code, out, _ = runCheck(t, "--config", cfg, "--", likeAgent(t), "-agent", "deciding")
	if code != 0 || !strings.Contains(out, "permhost would choose: full-auto, by session/set_mode (tried: the agent accepted it)") ||
		!strings.Contains(out, `with [session] modes = "govern" (in effect)`) {
		t.Fatalf("with deciding_words: exit %d:\n%s", code, out)
	}
}

func TestCheckUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"--timeout", "0s", "--", "true"}, {"--", filepath.Join(t.TempDir(), "no-such-agent")}} {
		if code, _, errOut := runCheck(t, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2", args, code, errOut)
		}
	}
	// An agent that exits without answering: not governable, and why.
	if code, _, errOut := runCheck(t, "--", "sh", "-c", "echo broken >&2; exit 3"); code != 1 || !strings.Contains(errOut, "initialize") || !strings.Contains(errOut, "broken") {
		t.Errorf("a broken agent: exit %d, %q", code, errOut)
	}
}
