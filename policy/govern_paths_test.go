package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/config"
)

// forwarding is an acp.Client that records the params it forwards.
type forwarding struct{ params []json.RawMessage }

func (c *forwarding) Ask(_ context.Context, params json.RawMessage) (acp.Answer, error) {
	c.params = append(c.params, params)
	return acp.Answer{Line: []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":""}}`)}, nil
}
func (c *forwarding) Notify(string, json.RawMessage) error { return nil }
func (c *forwarding) Deliver(r acp.Response, record func([]byte)) error {
	record([]byte(`{"jsonrpc":"2.0","id":7,"result":` + string(r.Result) + `}`))
	return nil
}

// TestFSRequestsResolved: a governed file request is judged as the OS
// opens it. proj/k/../.ssh/config with k -> ~/.config is no project read
// (it opens ~/.ssh/config); src/l/../outside.txt with l -> ../other is one
// (it opens proj/outside.txt) and is forwarded as that resolved path; a
// running call allowed to write .env covers the write of config.txt, a
// symlink to it, and not the write of src/main.go.
func TestFSRequestsResolved(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, proj := filepath.Join(dir, "home"), filepath.Join(dir, "proj")
	for _, d := range []string{home + "/.ssh", home + "/.config", proj + "/src", proj + "/other"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{proj + "/k": home + "/.config", proj + "/config.txt": ".env", proj + "/src/l": "../other"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	p := &seeing{d: abi.Decision{Outcome: abi.OutcomeAbstain}}
	buf := &acptest.SyncBuffer{}
	dlog := NewDecisionLog(buf, nil)
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, Session: governing()}
	e, err := New(context.Background(), Options{Config: cfg, Log: dlog, Home: home, Grants: t.TempDir() + "/g.json",
		Members: []host.Member{{Name: "rules", Layer: host.LayerTeam, Policy: host.FailClosed, Plugin: p, Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	g := e.Governor()
	s := acp.SessionInfo{ID: "s-1", Cwd: proj, Agent: acp.Peer{Name: "qwen-code", Version: "0.24.4"}}
	request := func(method, path string) *acp.AgentRequest {
		params := `{"sessionId":"s-1","path":` + string(marshal(path))
		if method == acp.MethodWriteTextFile {
			params += `,"content":"x"`
		}
		return &acp.AgentRequest{ID: json.RawMessage(`7`), Method: method, SessionID: "s-1", Session: s, Params: json.RawMessage(params + "}")}
	}

	c := &forwarding{}
	r, err := g.AgentRequest(context.Background(), request(acp.MethodReadTextFile, proj+"/k/../.ssh/config"), c, &fakeCaller{})
	if err != nil || r.Error == nil || len(c.params) != 0 {
		t.Fatalf("the read of k/../.ssh/config: %+v %v, forwarded %s", r, err, c.params)
	}
	if seen := p.seen[0].Paths; len(seen) != 1 || seen[0].Path != proj+"/.ssh/config" || seen[0].Asked != proj+"/k/../.ssh/config" || seen[0].Resolved != home+"/.ssh/config" {
		t.Errorf("the plugin saw %+v", seen)
	}

	r, err = g.AgentRequest(context.Background(), request(acp.MethodReadTextFile, proj+"/src/l/../outside.txt"), c, &fakeCaller{})
	if err != nil || r.Line == nil || len(c.params) != 1 {
		t.Fatalf("the read of src/l/../outside.txt: %+v %v", r, err)
	}
	if got, want := string(c.params[0]), `{"sessionId":"s-1","path":"`+proj+`/outside.txt"}`; got != want {
		t.Errorf("forwarded %s, want %s", got, want)
	}

	g.(*governor).allow("s-1", "call-1", abi.Request{Paths: []abi.Path{{Path: proj + "/.env", Resolved: proj + "/.env", Access: abi.AccessWrite}}}, "d-env")
	p.d = abi.Decision{Outcome: abi.OutcomeReject}
	if r, err := g.AgentRequest(context.Background(), request(acp.MethodWriteTextFile, proj+"/config.txt"), c, &fakeCaller{}); err != nil || r.Line == nil {
		t.Errorf("the write of config.txt, the allowed .env: %+v %v", r, err)
	}
	if r, err := g.AgentRequest(context.Background(), request(acp.MethodWriteTextFile, proj+"/src/main.go"), c, &fakeCaller{}); err != nil || r.Error == nil {
		t.Errorf("the write of src/main.go: %+v %v", r, err)
	}
	dlog.Close()
	if strings.Count(buf.String(), `"decidedBy":"project-read"`) != 1 {
		t.Errorf("project reads in the log: %s", buf.String())
	}
}
