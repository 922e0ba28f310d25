package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

// panicking is a chain member whose call panics, as a bug in a plugin's
// call path would.
type panicking struct{}

func (panicking) Call(context.Context, abi.Request) host.Result {
	panic("a bug in the plugin's call path")
}

// A panic on a permission decision's path does not end permhost run: the
// turn of a real agent (e2e's runagent, over real pipes) ends normally,
// the agent gets the builtin's reject, and the log records the plugin's
// failure as a trap.
func TestRunSurvivesAPanickingPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an agent")
	}
	dir := t.TempDir()
	agent := filepath.Join(dir, "runagent")
	if out, err := exec.Command("go", "build", "-o", agent, "../../e2e/testdata/runagent").CombinedOutput(); err != nil {
		t.Fatalf("building runagent: %v\n%s", err, out)
	}
	report := filepath.Join(dir, "report.jsonl")
	var decisions bytes.Buffer
	dlog := policy.NewDecisionLog(nopCloser{&decisions}, nil)
	engine, err := policy.New(context.Background(), policy.Options{
		Config: &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject},
		Via:    "run", Log: dlog,
		Members: []host.Member{{Name: "panics", Layer: host.LayerAdmin, Policy: host.FailClosed, Plugin: panicking{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	handler, err := engine.Headless(policy.HeadlessOptions{OnUndecided: config.UndecidedReject})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	errw := &syncWriter{w: &stderr} // the agent's stderr is copied in too, as runRun does
	code := drive(context.Background(), runSetup{argv: []string{agent, "-report", report}, cwd: dir, text: "clean up",
		handler: handler, logger: slog.New(slog.DiscardHandler), stdout: &stdout, stderr: errw})
	engine.Close(context.Background())
	dlog.Close()
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `rejected: "Reject" (reject_once) by the builtin fallback`) {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	got, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"optionId":"reject"`) {
		t.Errorf("the agent received:\n%s", got)
	}
	var entry struct {
		DecidedBy string `json:"decidedBy"`
		Plugins   []struct {
			Failure struct{ Kind, Message string } `json:"failure"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(decisions.Bytes()), &entry); err != nil {
		t.Fatalf("decision log %q: %v", decisions.String(), err)
	}
	if entry.DecidedBy != "builtin" || len(entry.Plugins) != 1 || entry.Plugins[0].Failure.Kind != "trap" ||
		!strings.Contains(entry.Plugins[0].Failure.Message, "panicked") {
		t.Errorf("decision log %+v", entry)
	}
}

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }
