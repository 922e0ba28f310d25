package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/policy"
)

// recordedPermission is one recorded session/request_permission with
// what the proxy knew of its session when it came.
type recordedPermission struct {
	msg   []byte
	setup policy.SessionSetup
}

// recordedPermissions reads a transcript's permission requests with their
// session's agentInfo, cwd and mode (the mode as the proxy tracked it).
func recordedPermissions(t *testing.T, file, home string) ([]recordedPermission, []abi.Request) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "transcripts", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := policy.ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := policy.RecordedRequests(context.Background(), lines, home)
	if err != nil {
		t.Fatal(err)
	}
	var agent acp.Peer
	var cwd string
	var out []recordedPermission
	var updates []byte
	for _, l := range lines {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Cwd string `json:"cwd"`
			} `json:"params"`
			Result struct {
				AgentInfo *acp.Peer `json:"agentInfo"`
			} `json:"result"`
		}
		if err := json.Unmarshal(l.Msg, &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Result.AgentInfo != nil:
			agent = *m.Result.AgentInfo
		case m.Method == acp.MethodSessionNew:
			cwd = m.Params.Cwd
		case m.Method == acp.MethodSessionUpdate:
			updates = append(append(updates, l.Msg...), '\n')
		case m.Method == acp.MethodRequestPermission && l.FromAgent:
			msg := append(append([]byte(nil), updates...), l.Msg...)
			out = append(out, recordedPermission{msg: msg, setup: policy.SessionSetup{Agent: agent, Cwd: cwd, Home: home}})
		}
	}
	if len(out) != len(reqs) {
		t.Fatalf("%s: %d requests, the proxy built %d", file, len(out), len(reqs))
	}
	for i := range out {
		out[i].setup.Mode = reqs[i].Session.Mode
	}
	return out, reqs
}

// A request built from its own messages and a description of its session
// (what `permhost eval` does) is exactly the proxy's for the same recorded
// request, for every permission request of every transcript: the recorded
// session/update notifications before it, then the request, after an
// initialize with the recorded agentInfo and a session/new with the
// recorded cwd, in the mode the session was in. Only the editor's
// clientInfo, which no message of the agent's carries, is not there.
func TestSessionSetupRequestIsTheProxys(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "transcripts", "*.jsonl"))
	if len(files) < 10 {
		t.Fatalf("%d transcripts", len(files))
	}
	compared := 0
	for _, file := range files {
		perms, reqs := recordedPermissions(t, filepath.Base(file), "/home/dev")
		for i, p := range perms {
			got, err := p.setup.Request(context.Background(), p.msg, reqs[i].DecisionID)
			if err != nil {
				t.Fatalf("%s #%d: %v", file, i, err)
			}
			want := reqs[i]
			want.Session.Client = nil
			g, _ := json.MarshalIndent(got, "", " ")
			w, _ := json.MarshalIndent(want, "", " ")
			if string(g) != string(w) {
				t.Errorf("%s #%d differs:\n--- from the messages\n%s\n--- the proxy's\n%s", file, i, g, w)
			}
			compared++
		}
	}
	t.Logf("%d recorded requests compared", compared)
}

func TestSessionSetupRequestForms(t *testing.T) {
	ctx := context.Background()
	setup := policy.SessionSetup{Agent: acp.Peer{Name: "gemini-cli", Version: "0.61.0"}, Cwd: "/home/dev/project", Mode: "default", Home: "/home/dev"}
	params := `{"sessionId":"s1","toolCall":{"toolCallId":"t1","status":"pending","title":"rm -rf build","kind":"execute",` +
		`"content":[{"type":"content","content":{"type":"text","text":"[current working directory /home/dev/project]"}}],"locations":[]},` +
		`"options":[{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}]}`
	message := `{"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
	  "params": ` + params + `}`
	fromParams, err := setup.Request(ctx, []byte(params), "d1")
	if err != nil {
		t.Fatal(err)
	}
	fromMessage, err := setup.Request(ctx, []byte(message), "d1")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromParams)
	b, _ := json.Marshal(fromMessage)
	if string(a) != string(b) {
		t.Errorf("params and the whole message built different requests:\n%s\n%s", a, b)
	}
	// Gemini CLI's command is its title: the gemini-cli profile reads it.
	r := fromParams
	if r.Session.Agent == nil || r.Session.Agent.Profile != "gemini-cli" || r.Action == nil || r.Action.Command != "rm -rf build" ||
		r.Shell == nil || len(r.Shell.Commands) != 1 || r.Session.Mode != "default" || r.Session.Home != "/home/dev" || r.DecisionID != "d1" {
		t.Errorf("request = %s", a)
	}

	for _, tt := range []struct{ name, input, want string }{
		{"not JSON", `{"toolCall":`, "not a session/request_permission"},
		{"another method", `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`, `the last JSON value is "session/prompt"`},
		{"a notification", `{"jsonrpc":"2.0","method":"session/request_permission","params":` + params + `}`, "needs an id"},
		{"params without a toolCall", `{"sessionId":"s1","options":[]}`, "params need a toolCall"},
		{"a request before the last", message + "\n" + message, "only session/update notifications may come before the request"},
		{"an array", `[1]`, "is not an object"},
	} {
		_, err := setup.Request(ctx, []byte(tt.input), "d1")
		if !errors.Is(err, policy.ErrNotPermission) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrNotPermission saying %q", tt.name, err, tt.want)
		}
	}
	// A duplicate key is what the proxy refuses to show plugins (another
	// parser may read the other value).
	dup := strings.Replace(params, `"title":"rm -rf build"`, `"title":"ls","title":"rm -rf build"`, 1)
	if _, err := setup.Request(ctx, []byte(dup), "d1"); err == nil || !strings.Contains(err.Error(), "would not show this request to plugins") {
		t.Errorf("duplicate key: %v", err)
	}
}
