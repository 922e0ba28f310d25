package acptest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestReadTranscriptErrors(t *testing.T) {
	const ok = `{"seq":1,"ts":"t","dir":"client->agent","msg":{"jsonrpc":"2.0","id":0,"method":"x"}}`
	tests := []struct {
		name, input, wantErr string
	}{
		{"bad dir", `{"seq":1,"dir":"agent->agent","msg":{}}`, `line 1: dir "agent->agent"`},
		{"missing msg", `{"seq":1,"dir":"client->agent"}`, "line 1: msg missing"},
		{"null msg", `{"seq":1,"dir":"client->agent","msg":null}`, "line 1: msg missing"},
		{"seq gap", ok + "\n" + `{"seq":3,"dir":"agent->client","msg":{}}`, "line 2: seq 3, want 2"},
		{"seq from zero", `{"seq":0,"dir":"agent->client","msg":{}}`, "line 1: seq 0, want 1"},
		{"not json", "hello", "line 1: invalid character"},
		{"unknown field", `{"seq":1,"dir":"client->agent","msg":{},"extra":1}`, `line 1: json: unknown field "extra"`},
		{"trailing data", ok + ` {}`, "line 1: trailing data"},
		{"blank lines counted", "\n\n" + `{"seq":2,"dir":"agent->client","msg":{}}`, "line 3: seq 2, want 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadTranscript(strings.NewReader(tt.input))
			if err == nil {
				t.Fatalf("ReadTranscript succeeded, want error containing %q", tt.wantErr)
			}
			if !errors.Is(err, errTranscript) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %q, want errTranscript containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestReadTranscriptToleratesCRLFAndMissingFinalNewline(t *testing.T) {
	in := "{\"seq\":1,\"dir\":\"client->agent\",\"msg\":{\"a\" : 1}}\r\n\r\n{\"seq\":2,\"dir\":\"agent->client\",\"msg\":[1, 2]}"
	tr, err := ReadTranscript(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 2 {
		t.Fatalf("got %d entries, want 2", len(tr.Entries))
	}
	// msg keeps its inner spacing: it is the file's bytes, not a re-encoding.
	if got := string(tr.Entries[0].Msg); got != `{"a" : 1}` {
		t.Errorf("msg 1 = %s", got)
	}
	if got := string(tr.Entries[1].Msg); got != `[1, 2]` {
		t.Errorf("msg 2 = %s", got)
	}
}

// msgBytes cuts the msg value out of a transcript line by position: the
// line is {"seq":…,"ts":…,"dir":…,"msg":MSG}.
func msgBytes(t *testing.T, line []byte) []byte {
	t.Helper()
	i := bytes.Index(line, []byte(`"msg":`))
	if i < 0 || !bytes.HasSuffix(line, []byte("}")) {
		t.Fatalf("unexpected line shape: %.80s", line)
	}
	return line[i+len(`"msg":`) : len(line)-1]
}

func TestSharedTranscriptsKeepExactBytes(t *testing.T) {
	for _, path := range TranscriptFiles(t) {
		tr, err := LoadTranscript(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tr.Name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 16<<20)
			i := 0
			for sc.Scan() {
				if i >= len(tr.Entries) {
					t.Fatalf("file has more lines than the %d entries", len(tr.Entries))
				}
				if want := msgBytes(t, sc.Bytes()); !bytes.Equal(tr.Entries[i].Msg, want) {
					t.Errorf("seq %d: %s", i+1, Diff(want, tr.Entries[i].Msg))
				}
				i++
			}
			if i != len(tr.Entries) || i == 0 {
				t.Fatalf("file has %d lines, transcript %d entries", i, len(tr.Entries))
			}
			if tr.Count(ClientToAgent) == 0 || tr.Count(AgentToClient) == 0 {
				t.Errorf("one direction is empty: %d client->agent, %d agent->client",
					tr.Count(ClientToAgent), tr.Count(AgentToClient))
			}
			// Encoding writes the file back exactly: same field order, same bytes.
			var buf bytes.Buffer
			if err := tr.Encode(&buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), data) {
				t.Errorf("Encode does not reproduce the file: %s", Diff(data, buf.Bytes()))
			}
		})
	}
}

func TestEncodeRejectsWhatCannotBeReadBack(t *testing.T) {
	tests := []struct {
		name string
		tr   Transcript
		want string
	}{
		{"newline in msg", Transcript{Entries: []Entry{{Seq: 1, Dir: AgentToClient, Msg: []byte("{\n}")}}}, "raw line break"},
		{"invalid msg", Transcript{Entries: []Entry{{Seq: 1, Dir: AgentToClient, Msg: []byte("{")}}}, "not valid JSON"},
		{"bad seq", Transcript{Entries: []Entry{{Seq: 2, Dir: AgentToClient, Msg: []byte("{}")}}}, "has seq 2"},
		{"bad dir", Transcript{Entries: []Entry{{Seq: 1, Dir: "up", Msg: []byte("{}")}}}, `dir "up"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.tr.Encode(new(bytes.Buffer))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Encode error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func ExampleTranscript_Encode() {
	tr := &Transcript{}
	tr.Append(ClientToAgent, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	tr.Append(AgentToClient, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`)
	tr.Encode(os.Stdout)
	// Output:
	// {"seq":1,"ts":"","dir":"client->agent","msg":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}}
	// {"seq":2,"ts":"","dir":"agent->client","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}}
}

func ExampleDiff() {
	fmt.Println(Diff([]byte(`{"id":1}`), []byte(`{"id":2}`)))
	// Output:
	// first difference at byte 6 (want 8 bytes, got 8 bytes)
	//   want: "{\"id\":1}"
	//    got: "{\"id\":2}"
}

func FuzzReadTranscript(f *testing.F) {
	f.Add([]byte(`{"seq":1,"ts":"x","dir":"client->agent","msg":{"a":[1,2.50,"\u00e9"]}}` + "\n"))
	f.Add([]byte(`{"seq":1,"dir":"agent->client","msg":"s"}` + "\r\n" + `{"seq":2,"dir":"client->agent","msg":1e400}`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadTranscript(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever parses encodes, and reads back to the same messages.
		var buf bytes.Buffer
		if err := tr.Encode(&buf); err != nil {
			t.Fatalf("Encode of a parsed transcript: %v", err)
		}
		again, err := ReadTranscript(&buf)
		if err != nil {
			t.Fatalf("re-reading the encoding: %v\n%s", err, buf.Bytes())
		}
		if len(again.Entries) != len(tr.Entries) {
			t.Fatalf("%d entries, then %d", len(tr.Entries), len(again.Entries))
		}
		for i := range tr.Entries {
			a, b := tr.Entries[i], again.Entries[i]
			if a.Seq != b.Seq || a.Dir != b.Dir || a.TS != b.TS || !bytes.Equal(a.Msg, b.Msg) {
				t.Fatalf("entry %d changed: %+v then %+v", i, a, b)
			}
		}
	})
}
