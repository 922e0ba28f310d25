package leader

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
)

// question returns a question with the three options claude-agent-acp
// offers for a Bash call.
func question(title string) Question {
	return Question{
		Worker: Worker{Cwd: "/work/" + title, Agent: "claude-agent-acp", Session: "sess-" + title},
		Request: abi.Request{
			ABI: abi.Current, DecisionID: "d-" + title,
			Session:  abi.Session{ID: "sess-" + title, Cwd: "/work/" + title},
			ToolCall: abi.ToolCall{ID: "tc-" + title, Title: title, Kind: abi.KindExecute},
			Options: []abi.Option{
				{OptionID: "allow_always", Name: "Always Allow", Kind: abi.OptionAllowAlways, Durable: true},
				{OptionID: "allow", Name: "Allow", Kind: abi.OptionAllowOnce},
				{OptionID: "reject", Name: "Reject", Kind: abi.OptionRejectOnce},
			},
		},
	}
}

// socketPath returns a socket path in a fresh private directory short
// enough for sun_path.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ldr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "leader.sock")
}

// person is a scripted Prompter: each prompt is published on shown and
// answered by what the test sends on answers; it checks that no two
// prompts are ever shown at once.
type person struct {
	t       *testing.T
	shown   chan Prompt
	answers chan string
	mu      sync.Mutex
	active  int
	overlap bool
	retract chan Prompt // prompts retracted by ctx
}

func newPerson(t *testing.T) *person {
	return &person{t: t, shown: make(chan Prompt, 16), answers: make(chan string), retract: make(chan Prompt, 16)}
}

func (p *person) Ask(ctx context.Context, pr Prompt) (string, error) {
	p.mu.Lock()
	p.active++
	if p.active > 1 {
		p.overlap = true
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.active--
		p.mu.Unlock()
	}()
	p.shown <- pr
	select {
	case a := <-p.answers:
		return a, nil
	case <-ctx.Done():
		p.retract <- pr
		return "", ctx.Err()
	}
}

// next waits for the next prompt.
func (p *person) next() Prompt {
	p.t.Helper()
	select {
	case pr := <-p.shown:
		return pr
	case <-time.After(10 * time.Second):
		p.t.Fatal("no prompt shown within 10s")
	}
	return Prompt{}
}

func (p *person) answer(id string) {
	p.t.Helper()
	select {
	case p.answers <- id:
	case <-time.After(10 * time.Second):
		p.t.Fatal("the prompt did not take an answer within 10s")
	}
}

// noPrompt checks that nothing is shown for a little while.
func (p *person) noPrompt(d time.Duration) {
	p.t.Helper()
	select {
	case pr := <-p.shown:
		p.t.Fatalf("unexpected prompt %q", pr.Request.ToolCall.Title)
	case <-time.After(d):
	}
}

// records collects OnDecision calls.
type records struct {
	mu   sync.Mutex
	list []Record
	ch   chan Record
}

func newRecords() *records { return &records{ch: make(chan Record, 64)} }

func (r *records) add(rec Record) {
	r.mu.Lock()
	r.list = append(r.list, rec)
	r.mu.Unlock()
	r.ch <- rec
}

func (r *records) next(t *testing.T) Record {
	t.Helper()
	select {
	case rec := <-r.ch:
		return rec
	case <-time.After(10 * time.Second):
		t.Fatal("no decision recorded within 10s")
	}
	return Record{}
}

// startServer listens on a fresh socket.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Socket == "" {
		opts.Socket = socketPath(t)
	}
	s, err := Listen(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// asked is the result of an Ask running in the background.
type asked struct {
	a   Answer
	err error
}

func askAsync(ctx context.Context, c *Client, q Question) <-chan asked {
	ch := make(chan asked, 1)
	go func() {
		a, err := c.Ask(ctx, q)
		ch <- asked{a, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan asked) asked {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return within 10s")
	}
	return asked{}
}

// waitQueued waits until the server holds n requests.
func waitQueued(t *testing.T, s *Server, n int) []Prompt {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q := s.Queued()
		if len(q) == n {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d requests, want %d", len(q), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawConn is a worker speaking the wire format by hand.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, path string) *rawConn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReaderSize(c, 1<<16)}
}

func (rc *rawConn) send(line []byte) {
	rc.t.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(line); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// reply reads one message; nil at end of stream.
func (rc *rawConn) reply() map[string]any {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := rc.r.ReadBytes('\n')
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		rc.t.Fatalf("reply %q: %v", line, err)
	}
	return m
}

func askLine(t *testing.T, id string, q Question) []byte {
	t.Helper()
	line, err := encode(&message{Type: TypeAsk, ID: id, Worker: &q.Worker, Request: &q.Request, Shown: q.Shown})
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func str(v any) string { return fmt.Sprint(v) }

// fakeLeader serves path by hand: every ask is answered with reply(id).
// It returns a function that stops it.
func fakeLeader(t *testing.T, path string, reply func(id string) *message) func() {
	t.Helper()
	return rawLeader(t, path, func(id string) string {
		out, _ := encode(reply(id))
		return strings.TrimSuffix(string(out), "\n")
	})
}

// rawLeader serves path by hand, answering every ask with the line reply
// builds from its id, written as it is.
func rawLeader(t *testing.T, path string, reply func(id string) string) func() {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				lr := newLineReader(c, MaxMessageBytes)
				for {
					line, err := lr.next()
					if err != nil {
						return
					}
					if m, _, err := decode(line); err == nil && m.Type == TypeAsk {
						c.Write([]byte(reply(m.ID) + "\n"))
					}
				}
			}()
		}
	}()
	return func() { l.Close(); wg.Wait() }
}

func netDial(path string) (net.Conn, error) { return net.Dial("unix", path) }
