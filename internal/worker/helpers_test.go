package worker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/proctest"
)

// fixture is the absolute path of a module of host/testdata or
// testdata/wasm.
func fixture(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range []string{"../../host/testdata", "../../testdata/wasm"} {
		p, _ := filepath.Abs(filepath.Join(dir, name+".wasm"))
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("no fixture %s.wasm", name)
	return ""
}

// request is a Bash request; title is also its tool call's title, where
// echo.wasm looks for its markers and the child for its test hooks.
func request(id, title string) abi.Request {
	return abi.Request{
		ABI:        abi.Current,
		DecisionID: id,
		Session:    abi.Session{ID: "sess-1", Cwd: "/home/dev/project", Mode: "default"},
		ToolCall: abi.ToolCall{ID: "toolu_01", Title: title, Kind: abi.KindExecute,
			RawInput: json.RawMessage(`{"command":"npm test"}`), ToolName: "Bash"},
		Options: []abi.Option{
			{OptionID: "allow_always", Name: "Always Allow", Kind: abi.OptionAllowAlways, Durable: true},
			{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
			{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
		},
	}
}

// hook is the title of a test hook.
func hook(name string) string { return hookPrefix + name }

// startWorker loads a plugin in a child and closes it at the end of the test.
func startWorker(t testing.TB, o host.Options, tweak ...func(*Options)) *Plugin {
	t.Helper()
	if o.CacheDir == "" {
		o.CacheDir = testCache
	}
	opts := Options{Plugin: o}
	for _, f := range tweak {
		f(&opts)
	}
	p, err := Load(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// eventually polls cond until it holds; the bound is generous (a loaded CI
// machine), the assertion is the outcome.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive reports whether pid exists (a zombie counts as gone).
func alive(pid int) bool { return proctest.Alive(pid) }
