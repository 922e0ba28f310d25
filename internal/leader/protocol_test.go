package leader

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestLineReader(t *testing.T) {
	tests := []struct {
		name  string
		input string
		max   int
		want  []string
		err   error // after the lines
	}{
		{name: "lines", input: "a\nbb\n", max: 10, want: []string{"a", "bb"}, err: io.EOF},
		{name: "crlf", input: "a\r\nb\n", max: 10, want: []string{"a", "b"}, err: io.EOF},
		{name: "last line without newline", input: "a\nb", max: 10, want: []string{"a", "b"}, err: io.EOF},
		{name: "at the bound", input: "abc\n", max: 4, want: []string{"abc"}, err: io.EOF},
		{name: "over the bound", input: "abcd\n", max: 4, err: ErrTooLarge},
		{name: "over the bound without newline", input: "abcde", max: 4, err: ErrTooLarge},
		{name: "long line under a large bound", input: strings.Repeat("x", 200<<10) + "\n", max: 1 << 20, want: []string{strings.Repeat("x", 200<<10)}, err: io.EOF},
		{name: "long line over the bound", input: strings.Repeat("x", 200<<10) + "\n", max: 100 << 10, err: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLineReader(iotest.OneByteReader(strings.NewReader(tt.input)), tt.max)
			for _, want := range tt.want {
				got, err := lr.next()
				if err != nil || string(got) != want {
					t.Fatalf("next = %.40q, %v; want %.40q", got, err, want)
				}
			}
			if _, err := lr.next(); !errors.Is(err, tt.err) {
				t.Fatalf("after the lines: %v, want %v", err, tt.err)
			}
		})
	}
}

// What leaves the leader fits the bound and decodes to what went in.
func TestEncodeDecode(t *testing.T) {
	q := question("round trip")
	ahead := 2
	for _, m := range []*message{
		{Type: TypeAsk, ID: "1", Worker: &q.Worker, Request: &q.Request, Shown: []string{"allow"}, Reason: "all abstained"},
		{Type: TypeQueued, ID: "1", Ahead: &ahead},
		{Type: TypeAnswer, ID: "1", Outcome: OutcomeSelected, OptionID: "allow", DecidedBy: "person", Leader: &Leader{PID: 7, Socket: "/s"}},
		{Type: TypeError, ID: "1", Code: CodeUndecided, Message: "leader: no terminal"},
	} {
		line, err := encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("not one line: %q", line)
		}
		got, code, err := decode(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil || code != "" {
			t.Fatalf("decode(%s) = %v %s", line, err, code)
		}
		again, _ := encode(got)
		if !bytes.Equal(again, line) {
			t.Fatalf("round trip changed\n%s\n%s", line, again)
		}
	}
}

// FuzzDecode feeds the leader's parser arbitrary lines: it must never
// panic, and whatever it accepts re-encodes within the bound.
func FuzzDecode(f *testing.F) {
	q := question("fuzz")
	seed, _ := encode(&message{Type: TypeAsk, ID: "a", Worker: &q.Worker, Request: &q.Request, Shown: []string{"allow"}})
	f.Add(seed)
	f.Add([]byte(`{"v":1,"type":"withdraw","id":"a"}`))
	f.Add([]byte(`{"v":1,"type":"ask","id":"a","request":{"options":[{"optionId":"a"}]},"shown":["a","a"]}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte("{\"v\":1,\"type\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, code, err := decode(line)
		if err != nil {
			if code == "" {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		if m.V != Version {
			t.Fatalf("accepted version %d", m.V)
		}
		if m.Request != nil {
			qq := Question{Request: *m.Request, Shown: m.Shown}
			if shown, err := qq.shownOptions(); err == nil {
				for _, o := range shown {
					if !offered(m.Request.Options, o.OptionID) {
						t.Fatalf("shown option %q not offered", o.OptionID)
					}
				}
			}
		}
		if len(line) < MaxMessageBytes/2 {
			if _, err := encode(m); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
		}
	})
}

func TestWorkerString(t *testing.T) {
	tests := []struct {
		w    Worker
		want string
	}{
		{Worker{PID: 12}, "worker pid 12"},
		{Worker{PID: 12, Agent: "codex-acp", Session: "s1"}, "worker pid 12, agent codex-acp, session s1"},
		{Worker{PID: 12, Name: "ci-3", Session: "s\x1b[2J"}, `worker ci-3 (pid 12), session s\x1b[2J`},
		{Worker{PID: 13, Name: "ci\u202e4", Agent: "a\u200b\xff"}, `worker ci\u202e4 (pid 13), agent a\u200b\xff`},
	}
	for _, tt := range tests {
		if got := tt.w.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.w, got, tt.want)
		}
	}
}
