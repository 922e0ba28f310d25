package policy

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzPermissionLines: whatever `permhost eval` is given, the lines it
// hands the proxy are session/update notifications and then one
// session/request_permission request with an id, each one JSON object.
func FuzzPermissionLines(f *testing.F) {
	f.Add([]byte(`{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"toolCall":{"title":"a","title":"b"}}}`))
	f.Add([]byte(`[1] {"x":1}`))
	f.Fuzz(func(t *testing.T, input []byte) {
		lines, _, err := permissionLines(input)
		if err != nil {
			return
		}
		if len(lines) == 0 {
			t.Fatal("no lines and no error")
		}
		for i, l := range lines {
			if !l.FromAgent || bytes.ContainsAny(l.Msg, "\n\r") {
				t.Fatalf("line %d: %q", i, l.Msg)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal(l.Msg, &m); err != nil {
				t.Fatalf("line %d is not JSON: %v: %q", i, err, l.Msg)
			}
			want := "session/update"
			if i == len(lines)-1 {
				want = "session/request_permission"
				if m.ID == nil {
					t.Fatalf("the request has no id: %q", l.Msg)
				}
			}
			if m.Method != want {
				t.Fatalf("line %d: method %q, want %s: %q", i, m.Method, want, l.Msg)
			}
		}
	})
}
