package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/builtin"
	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/jsontext"
	"github.com/permhost/permhost/policy"
)

func recordedV2(t *testing.T, file string) []abi.Request {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "transcripts", "v2", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := policy.ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := policy.RecordedRequests(context.Background(), lines, "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// TestV2RequestsAsV1 builds the plugins' requests of the same script
// recorded over ACP v1 and v2 (the offer-v1 and offer-v2 files of both
// agents): v2 adds its title, description and subject, and everything a
// plugin decides on (action, shell, paths, options) is the same.
func TestV2RequestsAsV1(t *testing.T) {
	for _, c := range []struct {
		agent        string
		titles       []string
		descriptions []string
	}{
		{"claude101", []string{"rm -rf build", "Write hello.txt"}, []string{"", ""}},
		{"codexts", []string{"Run command?", "Make edits?"}, []string{"Remove the build dir?", ""}},
	} {
		t.Run(c.agent, func(t *testing.T) {
			v1 := recordedV2(t, c.agent+"-v2-offer-v1.jsonl")
			v2 := recordedV2(t, c.agent+"-v2-offer-v2.jsonl")
			if len(v1) != len(c.titles) || len(v2) != len(v1) {
				t.Fatalf("%d v1 and %d v2 requests, want %d", len(v1), len(v2), len(c.titles))
			}
			for i := range v1 {
				a, b := v1[i], v2[i]
				if a.Title != "" || a.Subject != nil || a.Description != "" {
					t.Errorf("%d: the v1 request has v2 fields: %q %q %+v", i, a.Title, a.Description, a.Subject)
				}
				if b.Title != c.titles[i] || b.Description != c.descriptions[i] || b.Subject == nil || b.Subject.Type != abi.SubjectToolCall {
					t.Errorf("%d: v2 title %q description %q subject %+v", i, b.Title, b.Description, b.Subject)
				}
				for _, f := range []struct {
					what   string
					v1, v2 any
				}{
					{"action", a.Action, b.Action},
					{"shell", a.Shell, b.Shell},
					{"paths", a.Paths, b.Paths},
					{"options", a.Options, b.Options},
					{"kind", a.ToolCall.Kind, b.ToolCall.Kind},
					{"mode", a.Session.Mode, b.Session.Mode},
					{"profile", a.Session.Agent.Profile, b.Session.Agent.Profile},
				} {
					x, _ := json.Marshal(f.v1)
					y, _ := json.Marshal(f.v2)
					if string(x) != string(y) {
						t.Errorf("%d: %s differs:\nv1 %s\nv2 %s", i, f.what, x, y)
					}
				}
			}
		})
	}
}

// TestV2CommandSubjectAndCustomKinds: a command subject is a shell
// action with its command and cwd, analysed like any command, and an
// option of a custom "_…" kind is never what an allow, a reject or the
// builtin fallback picks, nor shown to a person when the fallback governs.
func TestV2CommandSubjectAndCustomKinds(t *testing.T) {
	const params = `{"sessionId":"s-1","title":"Run?","description":"Because.","subject":{"type":"command","command":"rm -rf build && make","cwd":"sub"},` +
		`"options":[{"optionId":"x-allow","name":"Allow (vendor)","kind":"_vendor_allow"},{"optionId":"x-reject","name":"Reject (vendor)","kind":"_vendor_reject"}]}`
	setup := policy.SessionSetup{Cwd: "/home/dev/project", Home: "/home/dev"}
	req, err := setup.Request(context.Background(), []byte(params), "d-1")
	if err != nil {
		t.Fatal(err)
	}
	if req.Title != "Run?" || req.Description != "Because." || req.Subject == nil || req.Subject.Type != abi.SubjectCommand {
		t.Fatalf("v2 fields: %q %q %+v", req.Title, req.Description, req.Subject)
	}
	if a := req.Action; a == nil || a.Family != abi.FamilyShell || a.Command != "rm -rf build && make" || a.Cwd != "/home/dev/project/sub" {
		t.Fatalf("action %+v", req.Action)
	}
	if req.Shell == nil || !req.Shell.Parsed || len(req.Shell.Commands) != 2 || req.Shell.Commands[0].Argv[0] != "rm" {
		t.Fatalf("shell %+v", req.Shell)
	}
	for _, o := range req.Options {
		if !o.Durable {
			t.Errorf("custom option %q is not durable", o.OptionID)
		}
	}
	for _, d := range []abi.Decision{
		{Outcome: abi.OutcomeAllow}, {Outcome: abi.OutcomeAllow, Scope: abi.ScopeAlways},
		{Outcome: abi.OutcomeReject}, {Outcome: abi.OutcomeReject, Scope: abi.ScopeAlways},
	} {
		if o, ok := answer.Choose(req.Options, d); ok {
			t.Errorf("%+v chose the custom option %q", d, o.OptionID)
		}
		if o, ok := d.Option(req.Options); ok {
			t.Errorf("abi: %+v chose the custom option %q", d, o.OptionID)
		}
	}
	if a := builtin.Headless(req.Options); !a.Cancelled {
		t.Errorf("the fallback answered %+v, want cancelled", a)
	}
	if shown := builtin.PersonOptions(req.Options); len(shown) != 0 {
		t.Errorf("the fallback shows a person %+v", shown)
	}
}

// The exec request of codex-acp 2.6 over ACP v2
// (testdata/transcripts/v2/codexts-v2-allow.jsonl, seq 15), with a custom
// option kind added and the description's bytes escaped as an agent may.
const codexV2Exec = `{"sessionId":"s1","title":"Run command?","description":"Remove the build dir\u003f","subject":{"type":"tool_call","toolCall":{"toolCallId":"call_fake_1","title":"rm -rf build","rawInput":{"command":"rm -rf build","cwd":"/home/dev/project"},"kind":"execute","status":"pending"}},` +
	`"options":[{"optionId":"x","name":"Vendor","kind":"_vendor_allow"},{"optionId":"allow_once","name":"Yes, proceed","kind":"allow_once"},{"optionId":"cancel","name":"No, and tell Codex what to do differently","kind":"reject_once"}]}`

func v2PermissionRequest(t *testing.T, params string) *acp.PermissionRequest {
	t.Helper()
	pr := permissionRequest(t, params)
	pr.Session.Agent = acp.Peer{Name: "@agentclientprotocol/codex-acp", Version: "2.6.0"}
	pr.Session.ProtocolVersion = 2
	var p struct {
		Title, Description string
		Subject            struct {
			Type     string
			ToolCall json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	pr.ToolCall = p.Subject.ToolCall
	pr.V2 = acp.PermissionV2{Title: p.Title, Description: p.Description, SubjectType: p.Subject.Type,
		Subject: json.RawMessage(params[strings.Index(params, `{"type"`):strings.Index(params, `,"options"`)])}
	return pr
}

// TestV2RequestThroughThePipeline: the plugins see a v2 request's title,
// description and subject type; what the editor is asked keeps every
// member but _meta byte for byte; an allow never picks a custom kind.
func TestV2RequestThroughThePipeline(t *testing.T) {
	seen := make(chan abi.Request, 1)
	s := newEngine(t, nil, member("quiet", &plugin{d: abi.Decision{Outcome: abi.OutcomeAbstain}, seen: seen}))
	c := &fakeClient{answer: selects("allow_once")}
	pr := v2PermissionRequest(t, codexV2Exec)
	resp, err := s.engine.Handler().RequestPermission(context.Background(), pr, c)
	if err != nil {
		t.Fatal(err)
	}
	req := <-seen
	if req.Title != "Run command?" || req.Description != "Remove the build dir?" || req.Subject == nil || req.Subject.Type != abi.SubjectToolCall ||
		req.Action == nil || req.Action.Command != "rm -rf build" || req.Action.Cwd != "/home/dev/project" {
		t.Errorf("the plugin saw %q %q %+v %+v", req.Title, req.Description, req.Subject, req.Action)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"allow_once"}}` {
		t.Fatalf("agent got %s", got)
	}
	if len(c.asked) != 1 {
		t.Fatal("the editor was not asked")
	}
	asked, err := jsontext.Object(c.asked[0])
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := jsontext.Object([]byte(codexV2Exec))
	var kept int
	for _, o := range orig {
		for _, a := range asked {
			if a.Key == o.Key {
				kept++
				if !bytes.Equal(a.Value, o.Value) {
					t.Errorf("%s forwarded as %s, want %s", o.Key, a.Value, o.Value)
				}
			}
		}
	}
	if kept != len(orig) {
		t.Errorf("%d of %d members forwarded: %s", kept, len(orig), c.asked[0])
	}

	// A plugin's reject: the editor is told on the subject's tool call.
	s = newEngine(t, nil, member("no", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no"}}))
	c = &fakeClient{}
	if _, err := s.engine.Handler().RequestPermission(context.Background(), v2PermissionRequest(t, codexV2Exec), c); err != nil {
		t.Fatal(err)
	}
	if len(c.asked) != 0 || len(c.notified) != 1 || !strings.Contains(string(c.notified[0]), `"update":{"sessionUpdate":"tool_call_update","toolCallId":"call_fake_1"`) ||
		!strings.Contains(string(c.notified[0]), `"decidedBy":"no"`) {
		t.Errorf("asked %d times, told %s", len(c.asked), c.notified)
	}

	// A plugin's allow finds no allow among custom kinds: the person
	// decides (here, nobody answers: cancelled).
	s = newEngine(t, nil, member("yes", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}))
	only := strings.Replace(codexV2Exec, `{"optionId":"allow_once","name":"Yes, proceed","kind":"allow_once"},`, "", 1)
	resp, err = s.engine.Handler().RequestPermission(context.Background(), v2PermissionRequest(t, only), &fakeClient{})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); strings.Contains(got, `"x"`) || strings.Contains(got, "selected") && !strings.Contains(got, `"cancel"`) {
		t.Fatalf("an allow among custom kinds answered %s", got)
	}
}
