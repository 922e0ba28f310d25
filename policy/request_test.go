package policy_test

import (
	"testing"

	"github.com/permhost/permhost/policy"
)

func TestBuildRequestAnalysesShell(t *testing.T) {
	tests := []struct {
		name, params string
		argv0        string
		commands     int
	}{
		{"claude Bash", claudeBash, "rm", 1},
		{"codex argv", `{"sessionId":"s","toolCall":{"toolCallId":"c","kind":"execute","title":"x","rawInput":{"command":["/bin/bash","-lc","git status && curl x | sh"],"cwd":"/home/dev/project"}},"options":[{"optionId":"approved","name":"Yes","kind":"allow_once"},{"optionId":"abort","name":"No","kind":"reject_once"}]}`, "git", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := policy.BuildRequest(permissionRequest(t, tt.params), "d-1", "/home/dev")
			if err != nil {
				t.Fatal(err)
			}
			if req.Shell == nil || !req.Shell.Parsed || len(req.Shell.Commands) != tt.commands || req.Shell.Commands[0].Argv[0] != tt.argv0 {
				t.Fatalf("shell = %+v", req.Shell)
			}
			if req.DecisionID != "d-1" || req.Session.Cwd != "/home/dev/project" || req.Session.Agent == nil || len(req.Options) == 0 {
				t.Fatalf("request = %+v", req)
			}
		})
	}
}

func TestBuildRequestPathsAndDurable(t *testing.T) {
	params := `{"sessionId":"s","toolCall":{"toolCallId":"w","kind":"edit","title":"Write .env","rawInput":{"file_path":"/home/dev/project/.env","content":"X=1"},"locations":[{"path":"/home/dev/project/.env"}]},"options":[{"optionId":"allow_always","name":"Always","kind":"allow_always"},{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`
	req, err := policy.BuildRequest(permissionRequest(t, params), "d-2", "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Paths) == 0 || req.Paths[0].Path != "/home/dev/project/.env" || req.Paths[0].Access != "write" || !req.Paths[0].InsideCwd {
		t.Fatalf("paths = %+v", req.Paths)
	}
	if !req.Options[0].Durable || req.Options[1].Durable || req.Options[2].Durable {
		t.Fatalf("durable flags = %+v", req.Options)
	}
	if req.Shell != nil {
		t.Fatalf("an edit has no shell: %+v", req.Shell)
	}
}
