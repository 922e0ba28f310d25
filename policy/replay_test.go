package policy_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/policy"
)

// TestReadRecordingInfersDirections strips each transcript to its plain ACP
// lines and checks that the inferred senders match the recorded ones.
func TestReadRecordingInfersDirections(t *testing.T) {
	for _, f := range acptest.TranscriptFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			recorded, err := policy.ReadRecording(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			var raw bytes.Buffer
			for _, l := range recorded {
				raw.Write(l.Msg)
				raw.WriteString("\r\n") // plain files may use CRLF
			}
			inferred, err := policy.ReadRecording(&raw)
			if err != nil {
				t.Fatal(err)
			}
			if len(inferred) != len(recorded) {
				t.Fatalf("%d lines, want %d", len(inferred), len(recorded))
			}
			for i := range recorded {
				if inferred[i].FromAgent != recorded[i].FromAgent || !bytes.Equal(inferred[i].Msg, recorded[i].Msg) {
					t.Errorf("line %d: inferred fromAgent=%v, recorded %v: %s", i+1, inferred[i].FromAgent, recorded[i].FromAgent, recorded[i].Msg)
				}
			}
		})
	}
}

func TestReadRecordingErrors(t *testing.T) {
	for _, in := range []string{"not json\n", `{"jsonrpc":"2.0"}` + "\n", `{"seq":1,"dir":"sideways","msg":{}}` + "\n"} {
		if _, err := policy.ReadRecording(bytes.NewReader([]byte(in))); err == nil {
			t.Errorf("ReadRecording(%q) succeeded", in)
		}
	}
}

// readTranscript reads a shared transcript.
func readTranscript(t *testing.T, name string) []policy.ReplayLine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(acptest.TranscriptDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := policy.ReadRecording(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestRecordedRequests(t *testing.T) {
	// wantRequest is what one built request must show; shell is the first
	// command's argv[0] ("" for none), path the first path ("" for none).
	type wantRequest struct {
		decisionID, mode, kind, toolName string
		shell, path                      string
		durable                          []bool // per option
	}
	claudeOnce := []bool{true, false, false} // allow_always, allow, reject
	tests := []struct {
		file string
		want []wantRequest
	}{
		{"claude-allow.jsonl", []wantRequest{
			{"replay-11", "default", abi.KindExecute, "Bash", "rm", "", claudeOnce},
			{"replay-17", "default", abi.KindEdit, "Write", "", "/home/dev/project/hello.txt", claudeOnce},
			{"replay-27", "default", abi.KindEdit, "Edit", "", "/home/dev/project/hello.txt", claudeOnce},
		}},
		{"claude-plan-mode.jsonl", []wantRequest{
			// Every option of a mode switch is durable.
			{"replay-12", "plan", abi.KindSwitchMode, "ExitPlanMode", "", "", []bool{true, true, true}},
			// The mode the session switched to, not the one it began in.
			{"replay-20", "default", abi.KindEdit, "Write", "", "/home/dev/project/hello.txt", claudeOnce},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			lines := readTranscript(t, tt.file)
			reqs, err := policy.RecordedRequests(context.Background(), lines, "/home/dev")
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != len(tt.want) {
				t.Fatalf("%d requests, want %d", len(reqs), len(tt.want))
			}
			for i, w := range tt.want {
				r := reqs[i]
				if r.DecisionID != w.decisionID || r.Session.Mode != w.mode || r.Session.Cwd != "/home/dev/project" ||
					r.Session.Agent == nil || r.Session.Agent.Name != "@zed-industries/claude-agent-acp" ||
					r.Session.Client == nil || r.Session.Client.Name != "permhost-acp-driver" ||
					r.ToolCall.Kind != w.kind || r.ToolCall.ToolName != w.toolName {
					t.Errorf("request %d = %+v", i, r)
				}
				shell := ""
				if r.Shell != nil && len(r.Shell.Commands) > 0 {
					shell = r.Shell.Commands[0].Argv[0]
				}
				path := ""
				if len(r.Paths) > 0 {
					path = r.Paths[0].Path
				}
				if shell != w.shell || path != w.path {
					t.Errorf("request %d: shell %q, path %q; want %q, %q", i, shell, path, w.shell, w.path)
				}
				var durable []bool
				for _, o := range r.Options {
					durable = append(durable, o.Durable)
				}
				if !reflect.DeepEqual(durable, w.durable) {
					t.Errorf("request %d: durable %v, want %v", i, durable, w.durable)
				}
			}
			again, err := policy.RecordedRequests(context.Background(), lines, "/home/dev")
			if err != nil || !reflect.DeepEqual(again, reqs) {
				t.Errorf("a second run differs (err %v)", err)
			}
		})
	}
}

// TestReplayDecidesTheRecordedRequests checks that Replay hands the plugins
// exactly the requests RecordedRequests returns.
func TestReplayDecidesTheRecordedRequests(t *testing.T) {
	seen := make(chan abi.Request, 16)
	s := newEngine(t, nil, member("no", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no"}, seen: seen}))
	lines := readTranscript(t, "claude-allow.jsonl")
	rows, _, err := s.engine.Replay(context.Background(), lines)
	if err != nil {
		t.Fatal(err)
	}
	close(seen)
	var decided []abi.Request
	for r := range seen {
		decided = append(decided, r)
	}
	want, err := policy.RecordedRequests(context.Background(), lines, "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decided, want) {
		t.Fatalf("the plugin saw\n%+v\nwant\n%+v", decided, want)
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, row := range rows {
		if row.Today != "reject" || row.DecidedBy != "no" || row.Actual != "allow" || !row.Differs {
			t.Errorf("row %d = %+v", i, row)
		}
	}
}

// TestReplayMalformedRequestGoesToThePerson: as in the proxy, a request
// that other parsers may read differently reaches no plugin.
func TestReplayMalformedRequestGoesToThePerson(t *testing.T) {
	lines := []policy.ReplayLine{
		{FromAgent: true, Msg: []byte(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c","kind":"execute","title":"ls","title":"rm -rf /"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`)},
		{Msg: []byte(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)},
	}
	if _, err := policy.RecordedRequests(context.Background(), lines, ""); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("RecordedRequests: err %v, want a malformed request", err)
	}
	seen := make(chan abi.Request, 1)
	s := newEngine(t, nil, member("yes", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}, seen: seen}))
	rows, _, err := s.engine.Replay(context.Background(), lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Today != "ask" || !strings.Contains(rows[0].Reason, "malformed") || rows[0].Actual != "allow" {
		t.Fatalf("rows = %+v", rows)
	}
	if len(seen) != 0 {
		t.Error("a plugin saw the malformed request")
	}
}
