package leader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// Bad messages get a clear error; the leader keeps serving the same
// connection (except after a line over the bound, whose framing cannot be
// trusted) and every other one.
func TestRefusedMessages(t *testing.T) {
	p := newPerson(t)
	s := startServer(t, Options{Prompter: p})
	huge := append([]byte(`{"v":1,"type":"ask","id":"big","request":{"raw":"`), bytes.Repeat([]byte("x"), MaxMessageBytes)...)
	huge = append(huge, "\"}}\n"...)
	tests := []struct {
		name     string
		line     []byte
		code     string
		id       string
		mentions string
		closes   bool
	}{
		{name: "over the size bound", line: huge, code: CodeTooLarge, mentions: "1048576 bytes", closes: true},
		{name: "malformed JSON", line: []byte("{\"v\":1,\"type\":\"ask\",\n"), code: CodeMalformed, mentions: "malformed JSON"},
		{name: "not an object", line: []byte("[1,2]\n"), code: CodeMalformed, mentions: "not a JSON object"},
		{name: "two values", line: []byte(`{"v":1,"type":"withdraw","id":"a"} {}` + "\n"), code: CodeMalformed, mentions: "more than one"},
		{name: "bad UTF-8", line: []byte("{\"v\":1,\"type\":\"\xff\"}\n"), code: CodeMalformed, mentions: "UTF-8"},
		{name: "other version", line: []byte(`{"v":2,"type":"ask","id":"v2"}` + "\n"), code: CodeVersion, id: "v2", mentions: "version 2"},
		{name: "no version", line: []byte(`{"type":"ask","id":"v0"}` + "\n"), code: CodeVersion, id: "v0", mentions: "version 0"},
		{name: "unknown type", line: []byte(`{"v":1,"type":"approve","id":"u"}` + "\n"), code: CodeInvalid, id: "u", mentions: `"approve"`},
		{name: "ask without id", line: []byte(`{"v":1,"type":"ask","request":{"options":[]}}` + "\n"), code: CodeInvalid, mentions: "without an id"},
		{name: "ask without request", line: []byte(`{"v":1,"type":"ask","id":"n"}` + "\n"), code: CodeInvalid, id: "n", mentions: "without a request"},
		{name: "no options", line: []byte(`{"v":1,"type":"ask","id":"o","request":{"options":[]}}` + "\n"), code: CodeInvalid, id: "o", mentions: "offers no options"},
		{name: "shown not offered", line: []byte(`{"v":1,"type":"ask","id":"s","shown":["x"],"request":{"options":[{"optionId":"a","name":"A","kind":"allow_once"}]}}` + "\n"), code: CodeInvalid, id: "s", mentions: `"x" was not offered`},
		{name: "duplicate option", line: []byte(`{"v":1,"type":"ask","id":"d","request":{"options":[{"optionId":"a","kind":"allow_once"},{"optionId":"a","kind":"reject_once"}]}}` + "\n"), code: CodeInvalid, id: "d", mentions: "offered twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := dialRaw(t, s.Socket())
			rc.send(tt.line)
			m := rc.reply()
			if m == nil || m["type"] != TypeError || m["code"] != tt.code || !strings.Contains(str(m["message"]), tt.mentions) || str(m["v"]) != "1" {
				t.Fatalf("reply = %v; want error %s mentioning %q", m, tt.code, tt.mentions)
			}
			if tt.id != "" && m["id"] != tt.id {
				t.Fatalf("reply id = %v, want %q", m["id"], tt.id)
			}
			if tt.closes {
				if m := rc.reply(); m != nil {
					t.Fatalf("connection still open after an oversized line: %v", m)
				}
			} else {
				// The same connection still works.
				rc.send(askLine(t, "after", question("after "+tt.name)))
				if m := rc.reply(); m["type"] != TypeQueued || m["id"] != "after" {
					t.Fatalf("after the refusal: %v", m)
				}
				if pr := p.next(); pr.Request.ToolCall.Title != "after "+tt.name {
					t.Fatalf("prompt %q", pr.Request.ToolCall.Title)
				}
				p.answer("allow")
				if m := rc.reply(); m["type"] != TypeAnswer || m["optionId"] != "allow" {
					t.Fatalf("answer: %v", m)
				}
			}
			// And the leader serves everyone else.
			c, _ := NewClient(s.Socket())
			res := askAsync(context.Background(), c, question("next"))
			p.next()
			p.answer("reject")
			if r := wait(t, res); r.err != nil || r.a.OptionID != "reject" {
				t.Fatalf("next worker: %+v, %v", r.a, r.err)
			}
		})
	}
}

// A duplicate id on one connection is refused; the first stays queued.
func TestDuplicateID(t *testing.T) {
	p := newPerson(t)
	s := startServer(t, Options{Prompter: p})
	rc := dialRaw(t, s.Socket())
	rc.send(askLine(t, "same", question("one")))
	if m := rc.reply(); m["type"] != TypeQueued {
		t.Fatalf("first: %v", m)
	}
	p.next()
	rc.send(askLine(t, "same", question("two")))
	if m := rc.reply(); m["code"] != CodeInvalid || !strings.Contains(str(m["message"]), "already pending") {
		t.Fatalf("duplicate: %v", m)
	}
	// A withdraw of an unknown id is ignored; of the real one, honoured.
	rc.send([]byte(`{"v":1,"type":"withdraw","id":"nope"}` + "\n"))
	rc.send([]byte(`{"v":1,"type":"withdraw","id":"same"}` + "\n"))
	waitQueued(t, s, 0)
}

// helperEnv makes the test binary act as a worker that sends one ask to
// the socket named by the variable and prints the first reply.
const helperEnv = "PERMHOST_LEADER_TEST_ASK"

func TestMain(m *testing.M) {
	if sock := os.Getenv(helperEnv); sock != "" {
		os.Exit(helperAsk(sock))
	}
	goleak.VerifyTestMain(m)
}

func helperAsk(sock string) int {
	c, err := netDial(sock)
	if err != nil {
		os.Stdout.WriteString("dial: " + err.Error() + "\n")
		return 1
	}
	defer c.Close()
	q := question("from another user")
	line, _ := encode(&message{Type: TypeAsk, ID: "x", Worker: &q.Worker, Request: &q.Request})
	c.Write(line)
	reply, _ := io.ReadAll(io.LimitReader(c, MaxMessageBytes))
	os.Stdout.Write(reply)
	return 0
}

// A connection from another user id is refused with a clear error, and the
// leader keeps serving its own user. The socket is opened up for the test:
// normally the private directory keeps other users from connecting at all,
// and the credential check is the second lock.
func TestOtherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running a client as another uid needs root; run the tests as root to cover the peer-credential check")
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "ldrx")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sockDir := filepath.Join(dir, "s")
	p := newPerson(t)
	recs := newRecords()
	s := startServer(t, Options{Prompter: p, OnDecision: recs.add, Socket: filepath.Join(sockDir, "leader.sock")})

	// The helper is this test binary, copied where uid 65534 can run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{dir: 0o755, sockDir: 0o711, s.Socket(): 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{helperEnv + "=" + s.Socket()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper as uid %d: %v\n%s", nobody, err, out)
	}
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(out), &m); err != nil {
		t.Fatalf("helper got %q", out)
	}
	if m["type"] != TypeError || m["code"] != CodeForbidden || !strings.Contains(str(m["message"]), "uid 65534") || !strings.Contains(str(m["message"]), "answers only uid 0") {
		t.Fatalf("reply to another user = %v", m)
	}
	if q := s.Queued(); len(q) != 0 {
		t.Fatalf("another user's request was queued: %v", titlesOf(q))
	}
	c, _ := NewClient(s.Socket())
	res := askAsync(context.Background(), c, question("own user"))
	if pr := p.next(); pr.Request.ToolCall.Title != "own user" {
		t.Fatalf("prompt %q", pr.Request.ToolCall.Title)
	}
	p.answer("allow")
	if r := wait(t, res); r.err != nil || r.a.OptionID != "allow" {
		t.Fatalf("own user after the refusal: %+v, %v", r.a, r.err)
	}
}

// A worker refuses a leader run by another user: such a leader could
// approve anything.
func TestForeignLeaderRefused(t *testing.T) {
	c, err := NewClient(socketPath(t))
	if err != nil {
		t.Fatal(err)
	}
	// Pretend the worker runs as another user than the leader (this
	// process): the check compares the same two numbers.
	c.uid = os.Getuid() + 4242
	path := c.Socket()
	stop := fakeLeader(t, path, func(id string) *message {
		return &message{Type: TypeAnswer, ID: id, Outcome: OutcomeSelected, OptionID: "allow"}
	})
	defer stop()
	_, err = c.Ask(context.Background(), question("x"))
	if !errors.Is(err, ErrForeignLeader) || !strings.Contains(err.Error(), fmt.Sprintf("served by uid %d", os.Getuid())) {
		t.Fatalf("Ask = %v, want ErrForeignLeader naming the leader's uid", err)
	}
}
