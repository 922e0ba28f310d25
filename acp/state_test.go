package acp

import (
	"fmt"
	"strings"
	"testing"
)

func TestToolCallMerge(t *testing.T) {
	cases := []struct {
		name    string
		updates []string
		want    string
	}{
		{"first update", []string{`{"sessionUpdate":"tool_call","toolCallId":"t","title":"a","kind":"edit"}`},
			`{"toolCallId":"t","title":"a","kind":"edit"}`},
		{"fields replaced, order kept", []string{
			`{"sessionUpdate":"tool_call","toolCallId":"t","title":"a","status":"pending","rawInput":{}}`,
			`{"sessionUpdate":"tool_call_update","toolCallId":"t","rawInput":{"command":"ls"},"title":"b"}`},
			`{"toolCallId":"t","title":"b","status":"pending","rawInput":{"command":"ls"}}`},
		{"null and absent leave a field", []string{
			`{"toolCallId":"t","title":"a","content":[{"type":"content"}]}`,
			`{"toolCallId":"t","title":null}`},
			`{"toolCallId":"t","title":"a","content":[{"type":"content"}]}`},
		{"lists are replaced", []string{
			`{"toolCallId":"t","locations":[{"path":"/a"},{"path":"/b"}]}`,
			`{"toolCallId":"t","locations":[{"path":"/c"}]}`},
			`{"toolCallId":"t","locations":[{"path":"/c"}]}`},
		{"big numbers and unknown fields verbatim", []string{
			`{"toolCallId":"t","rawInput":{"n":12345678901234567890},"future":{"x":"<&>"}}`},
			`{"toolCallId":"t","rawInput":{"n":12345678901234567890},"future":{"x":"<&>"}}`},
		{"escaped key", []string{`{"toolCallId":"t","ti\u0074le":"x"}`}, `{"toolCallId":"t","title":"x"}`},
		{"no prior state needed", []string{`{"toolCallId":"t","status":"pending"}`}, `{"toolCallId":"t","status":"pending"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newState(4, 4, 0)
			var got string
			for _, u := range c.updates {
				m, id, ok := s.updateToolCall("s", []byte(u))
				if !ok || id != "t" {
					t.Fatalf("update %s not taken", u)
				}
				got = string(m)
			}
			if got != c.want {
				t.Fatalf("merged\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestToolCallStateIsBounded(t *testing.T) {
	s := newState(2, 3, 0)
	// Finished calls are dropped.
	s.updateToolCall("s", []byte(`{"toolCallId":"done","title":"x"}`))
	s.updateToolCall("s", []byte(`{"toolCallId":"done","status":"completed"}`))
	if m, _, _ := s.updateToolCall("s", []byte(`{"toolCallId":"done"}`)); string(m) != `{"toolCallId":"done"}` {
		t.Fatalf("a completed call kept its state: %s", m)
	}
	// A session keeps at most 3 calls, the oldest going first.
	for i := range 5 {
		s.updateToolCall("s", []byte(fmt.Sprintf(`{"toolCallId":"c%d","title":"%d"}`, i, i)))
	}
	if n := len(s.sessions["s"].calls); n != 3 {
		t.Fatalf("%d calls kept, want 3", n)
	}
	if m, _, _ := s.updateToolCall("s", []byte(`{"toolCallId":"c4"}`)); string(m) != `{"toolCallId":"c4","title":"4"}` {
		t.Fatalf("newest call lost: %s", m)
	}
	// At most 2 sessions.
	for _, id := range []string{"a", "b", "c"} {
		s.setSession(id, "/"+id, "")
	}
	if len(s.sessions) != 2 || s.info("c").Cwd != "/c" || s.info("a").Cwd != "" {
		t.Fatalf("sessions: %v", s.sessions)
	}
}

func TestMalformedToolCallIgnored(t *testing.T) {
	s := newState(2, 2, 0)
	for _, u := range []string{`{"title":"no id"}`, `{"toolCallId":5}`, `[1]`, `{"toolCallId":"t"`} {
		if _, _, ok := s.updateToolCall("s", []byte(u)); ok {
			t.Errorf("update %s taken", u)
		}
	}
}

// A session's merged tool calls are bounded in bytes: the oldest calls go
// first, and a call larger than the bound by itself is not kept (its
// merged state is still returned for the update at hand).
func TestToolCallStateIsBoundedInBytes(t *testing.T) {
	s := newState(4, 100, 1000)
	big := func(id string, n int) []byte {
		return []byte(`{"toolCallId":"` + id + `","rawInput":"` + strings.Repeat("x", n) + `"}`)
	}
	for i := range 5 {
		s.updateToolCall("s", big(fmt.Sprint("c", i), 300))
	}
	ss := s.sessions["s"]
	if ss.callBytes > 1000 || len(ss.calls) != 3 || ss.calls["c4"] == nil || ss.calls["c1"] != nil {
		t.Fatalf("%d bytes in %d calls kept (c4 %v, c1 %v)", ss.callBytes, len(ss.calls), ss.calls["c4"] != nil, ss.calls["c1"] != nil)
	}
	// Growing a kept call evicts older ones, never itself.
	s.updateToolCall("s", []byte(`{"toolCallId":"c4","content":"`+strings.Repeat("y", 400)+`"}`))
	if ss.callBytes > 1000 || ss.calls["c4"] == nil || len(ss.calls) != 1 {
		t.Fatalf("after growing c4: %d bytes in %d calls", ss.callBytes, len(ss.calls))
	}
	merged, id, ok := s.updateToolCall("s", big("huge", 2000))
	if !ok || id != "huge" || !strings.Contains(string(merged), strings.Repeat("x", 2000)) || ss.calls["huge"] != nil {
		t.Fatalf("a call over the bound: ok %v, kept %v", ok, ss.calls["huge"] != nil)
	}
	total := 0
	for _, tc := range ss.calls {
		total += tc.size
	}
	if total != ss.callBytes {
		t.Fatalf("callBytes %d, calls hold %d", ss.callBytes, total)
	}
}

// State is learned from strict JSON only: an update whose keys repeat in
// another case changes nothing.
func TestToolCallStateIsStrict(t *testing.T) {
	s := newState(0, 0, 0)
	if _, _, ok := s.updateToolCall("s", []byte(`{"toolCallId":"t","title":"a","Title":"b"}`)); ok {
		t.Fatal("an update with a case-folded duplicate key was taken")
	}
}

// The record of answered permission requests (whose late client answers
// are dropped) keeps the newest ids only: it cannot grow without bound.
func TestAnsweredIDsAreBounded(t *testing.T) {
	s := newIDSet(3)
	for i := range 10 {
		s.add(fmt.Sprint("n", i))
	}
	if len(s.keys) != 3 || !s.has("n9") || !s.has("n7") || s.has("n6") || len(s.order) > 2*3+1 {
		t.Fatalf("kept %v (order %d)", s.keys, len(s.order))
	}
	s.remove("n8") // a new request reused the id
	if s.has("n8") {
		t.Fatal("a removed id is still answered")
	}
}

// An id answered, reused and answered again counts from its last answer.
func TestAnsweredIDsReaddedKeepTheirPlace(t *testing.T) {
	s := newIDSet(2)
	s.add("a")
	s.remove("a")
	s.add("b")
	s.add("a") // answered again, now the newest
	s.add("c")
	if !s.has("a") || !s.has("c") || s.has("b") {
		t.Fatalf("kept %v", s.keys)
	}
}
