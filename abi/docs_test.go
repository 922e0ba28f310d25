package abi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// docExample matches a JSON block of docs/abi.md marked for this test.
var docExample = regexp.MustCompile("(?s)<!-- abi-example: (request|decision) -->\n```json\n(.*?)```")

// TestDocExamples keeps the examples of docs/abi.md true: the request
// validates against the request schema and decodes into a Request, and every
// decision validates against the decision schema and answers that request.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "abi.md"))
	if err != nil {
		t.Fatal(err)
	}
	var req *Request
	var decisions [][]byte
	for _, m := range docExample.FindAllSubmatch(doc, -1) {
		switch string(m[1]) {
		case "request":
			if err := validateJSON(t, RequestSchema, m[2]); err != nil {
				t.Errorf("request example: %v", err)
			}
			req = new(Request)
			if err := json.Unmarshal(m[2], req); err != nil {
				t.Fatalf("request example does not decode: %v", err)
			}
		case "decision":
			decisions = append(decisions, m[2])
		}
	}
	if req == nil {
		t.Fatal("docs/abi.md has no request example")
	}
	if req.ABI != Current || req.Shell == nil || !req.Shell.Parsed || len(req.Paths) == 0 || len(req.Options) == 0 {
		t.Errorf("the request example should show abi %v, a parsed shell, paths and options: %+v", Current, req)
	}
	// ABI 1.1's fields, as a 1.1 host fills them.
	if req.Action == nil || req.Action.Family != FamilyShell || req.Action.Command != req.Shell.Source || req.Session.Home == "" ||
		req.Session.Agent == nil || req.Session.Agent.Profile == "" || req.Options[0].Grants == nil {
		t.Errorf("the request example should show action, session.home, agent.profile and grants: %+v", req)
	}
	// ABI 1.2's: the file the OS opens.
	if req.Paths[0].Resolved == "" {
		t.Errorf("the request example should show paths[].resolved: %+v", req.Paths[0])
	}
	for _, c := range req.Shell.Commands {
		if c.Pipeline < 1 || c.Stage < 1 || c.Source == nil || req.Shell.Source[c.Source.Start:c.Source.End] == "" {
			t.Errorf("command %q of the request example lacks pipeline, stage or source", c.Argv)
		}
	}
	outcomes := map[Outcome]bool{}
	for _, b := range decisions {
		if err := validateJSON(t, DecisionSchema, b); err != nil {
			t.Errorf("decision example %s: %v", b, err)
		}
		var d Decision
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("decision example %s: %v", b, err)
		}
		if err := d.Validate(req.Options); err != nil {
			t.Errorf("decision example %s does not answer the request: %v", b, err)
		}
		outcomes[d.Outcome] = true
	}
	for _, o := range []Outcome{OutcomeReject, OutcomeCancel, OutcomeAsk, OutcomeAllow, OutcomeSelect, OutcomeAbstain} {
		if !outcomes[o] {
			t.Errorf("docs/abi.md has no example of outcome %q", o)
		}
	}
}
