package acptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"
)

// peer is the other end of a Conn under test, driven line by line.
type peer struct {
	t  *testing.T
	r  *bufio.Reader
	w  io.WriteCloser
	rc io.Closer
}

func newConnPair(t *testing.T, h Handler) (*Conn, *peer) {
	t.Helper()
	toConnR, toConnW := io.Pipe()
	fromConnR, fromConnW := io.Pipe()
	c := NewConn(toConnR, fromConnW, h)
	t.Cleanup(func() {
		toConnW.Close()
		fromConnR.Close()
		c.Close()
		<-c.Done()
	})
	return c, &peer{t: t, r: bufio.NewReader(fromConnR), w: toConnW, rc: fromConnR}
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := p.w.Write([]byte(line + "\n")); err != nil {
		p.t.Fatal(err)
	}
}

func (p *peer) expect(want string) {
	p.t.Helper()
	got, err := p.r.ReadString('\n')
	if err != nil {
		p.t.Fatalf("reading from Conn: %v", err)
	}
	if got != want+"\n" {
		p.t.Fatalf("Conn wrote %s", Diff([]byte(want+"\n"), []byte(got)))
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestConnCall(t *testing.T) {
	c, p := newConnPair(t, nil)
	type res struct {
		raw json.RawMessage
		err error
	}
	done := make(chan res, 1)
	go func() {
		r, err := c.Call(ctxT(t), "initialize", map[string]int{"protocolVersion": 1})
		done <- res{r, err}
	}()
	p.expect(`{"id":0,"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1}}`)
	p.send(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1, "x":12345678901234567890}}`)
	r := <-done
	if r.err != nil || string(r.raw) != `{"protocolVersion":1, "x":12345678901234567890}` {
		t.Fatalf("Call = %s, %v", r.raw, r.err)
	}

	go func() {
		r, err := c.Call(ctxT(t), "session/new", json.RawMessage(`{"cwd":"/"}`))
		done <- res{r, err}
	}()
	p.expect(`{"id":1,"jsonrpc":"2.0","method":"session/new","params":{"cwd":"/"}}`)
	p.send(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad cwd"}}`)
	r = <-done
	var rpcErr *RPCError
	if !errors.As(r.err, &rpcErr) || rpcErr.Code != -32602 || rpcErr.Message != "bad cwd" {
		t.Fatalf("Call error = %v, want RPCError -32602", r.err)
	}
}

func TestConnAnswersPeerRequests(t *testing.T) {
	handler := func(ctx context.Context, req *Message) (any, error) {
		switch req.Method {
		case "session/request_permission":
			return json.RawMessage(`{"outcome":{"outcome":"cancelled"}}`), nil
		case "fs/read_text_file":
			return nil, &RPCError{Code: -32002, Message: "no such file"}
		default:
			return nil, errors.New("boom")
		}
	}
	c, p := newConnPair(t, handler)
	// The Conn's own request 0 is pending while the peer uses id 0 too.
	pending := make(chan error, 1)
	go func() {
		_, err := c.Call(ctxT(t), "session/prompt", nil)
		pending <- err
	}()
	p.expect(`{"id":0,"jsonrpc":"2.0","method":"session/prompt","params":null}`)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}`)
	p.expect(`{"id":0,"jsonrpc":"2.0","result":{"outcome":{"outcome":"cancelled"}}}`)
	p.send(`{"id":"abc","jsonrpc":"2.0","method":"fs/read_text_file"}`)
	p.expect(`{"error":{"code":-32002,"message":"no such file"},"id":"abc","jsonrpc":"2.0"}`)
	p.send(`{"jsonrpc":"2.0","id":7,"method":"terminal/create"}`)
	p.expect(`{"error":{"code":-32603,"message":"boom"},"id":7,"jsonrpc":"2.0"}`)
	select {
	case err := <-pending:
		t.Fatalf("a peer request completed the Conn's own call: %v", err)
	default:
	}
	p.send(`{"jsonrpc":"2.0","id":0,"result":{"stopReason":"end_turn"}}`)
	if err := <-pending; err != nil {
		t.Fatal(err)
	}
}

func TestConnWithoutHandlerAnswersMethodNotFound(t *testing.T) {
	_, p := newConnPair(t, nil)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{}}`)
	p.expect(`{"error":{"code":-32601,"message":"method not found: fs/read_text_file"},"id":3,"jsonrpc":"2.0"}`)
}

func TestConnNotificationsAndWaitFor(t *testing.T) {
	c, p := newConnPair(t, nil)
	notified := make(chan error, 1)
	go func() { notified <- c.Notify("session/cancel", map[string]string{"sessionId": "s"}) }()
	p.expect(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
	if err := <-notified; err != nil {
		t.Fatal(err)
	}
	p.send(`{"jsonrpc":"2.0","method":"session/update","params":{"n":1}}`)
	p.send(`not json`)
	p.send(`{"jsonrpc":"2.0","method":"session/update","params":{"n":2}}`)
	m, err := c.WaitFor(ctxT(t), func(m *Message) bool { return string(m.Params) == `{"n":2}` })
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Raw) != `{"jsonrpc":"2.0","method":"session/update","params":{"n":2}}` {
		t.Errorf("Raw = %s", m.Raw)
	}
	if n := len(c.Notifications("session/update")); n != 2 {
		t.Errorf("%d session/update notifications, want 2", n)
	}
	if got := c.Received(); len(got) != 3 || string(got[1].Raw) != "not json" {
		t.Errorf("Received() = %d messages; the unparsable line must be kept", len(got))
	}
}

func TestConnStreamEnd(t *testing.T) {
	c, p := newConnPair(t, nil)
	pending := make(chan error, 1)
	go func() {
		_, err := c.Call(ctxT(t), "session/prompt", nil)
		pending <- err
	}()
	p.expect(`{"id":0,"jsonrpc":"2.0","method":"session/prompt","params":null}`)
	p.w.Close()
	if err := <-pending; !errors.Is(err, ErrConnClosed) {
		t.Errorf("pending Call error = %v, want ErrConnClosed", err)
	}
	<-c.Done()
	if _, err := c.Call(ctxT(t), "x", nil); !errors.Is(err, ErrConnClosed) {
		t.Errorf("Call after the end = %v, want ErrConnClosed", err)
	}
	if _, err := c.WaitFor(ctxT(t), func(*Message) bool { return false }); !errors.Is(err, ErrConnClosed) {
		t.Errorf("WaitFor after the end = %v, want ErrConnClosed", err)
	}
	if err := errors.Join(c.Close(), c.Close()); err != nil {
		t.Errorf("Close twice: %v", err)
	}
}
