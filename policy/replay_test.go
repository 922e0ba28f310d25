package policy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/permhost/permhost/policy"
)

func sharedDir(t *testing.T) string {
	if d := os.Getenv("PERMHOST_SHARED_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared")
}

// TestReadRecordingInfersDirections strips each transcript to its plain ACP
// lines and checks that the inferred senders match the recorded ones.
func TestReadRecordingInfersDirections(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedDir(t), "transcripts", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no transcripts found; set PERMHOST_SHARED_DIR")
	}
	for _, f := range files {
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
