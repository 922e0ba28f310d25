package acptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Message is one JSON-RPC message received by a [Conn].
type Message struct {
	Raw    []byte          // the line as received, without its newline
	ID     json.RawMessage // nil for a notification
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *RPCError
}

// IsRequest reports whether m is a request (a method and an id).
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a notification (a method, no id).
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// RPCError is a JSON-RPC error object. A [Handler] returns one to answer
// with that error; [Conn.Call] returns one when the peer did.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message)
}

// Handler answers a request from the peer: the result is marshalled into
// the response; an *RPCError becomes an error response, any other error a
// -32603 one. ctx is cancelled when the Conn closes.
type Handler func(ctx context.Context, req *Message) (result any, err error)

// ErrConnClosed reports a call on a Conn whose peer stream has ended.
var ErrConnClosed = errors.New("acptest: connection closed")

// Conn is a minimal JSON-RPC 2.0 peer over newline-delimited streams, for
// driving real agents in tests. Its own request ids are integers counting
// from 0, as real ACP clients number them. Each incoming request runs its
// Handler in its own goroutine, so a handler may block, send notifications
// or make calls.
type Conn struct {
	w       io.Writer
	handler Handler
	ctx     context.Context
	cancel  context.CancelFunc

	writeMu sync.Mutex

	mu       sync.Mutex
	nextID   int
	pending  map[string]chan *Message
	received []*Message
	changed  chan struct{} // closed and replaced when received grows or the stream ends
	readErr  error         // why the stream ended, once it has
	closed   bool          // set by Close: no new handlers start
	done     chan struct{}
	handlers sync.WaitGroup
}

// NewConn starts reading messages from r; responses to the Conn's own calls
// complete them, requests go to handler (nil answers -32601), everything is
// recorded for Received. Close it when done.
func NewConn(r io.Reader, w io.Writer, handler Handler) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		w: w, handler: handler, ctx: ctx, cancel: cancel,
		pending: map[string]chan *Message{},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go c.read(r)
	return c
}

func (c *Conn) read(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReader(r)
	var err error
	for {
		var b []byte
		b, err = br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			c.dispatch(bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")))
		}
		if err != nil {
			break
		}
	}
	c.mu.Lock()
	c.readErr = err
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *Conn) dispatch(raw []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	msg := &Message{Raw: raw}
	if err := json.Unmarshal(raw, &m); err == nil {
		msg.ID, msg.Method, msg.Params, msg.Result, msg.Error = m.ID, m.Method, m.Params, m.Result, m.Error
	}
	c.mu.Lock()
	c.received = append(c.received, msg)
	close(c.changed)
	c.changed = make(chan struct{})
	var ch chan *Message
	if msg.Method == "" && msg.ID != nil {
		key := string(msg.ID)
		ch = c.pending[key]
		delete(c.pending, key)
	}
	serve := ch == nil && msg.IsRequest() && !c.closed
	if serve {
		c.handlers.Add(1) // under mu, so never concurrent with Close's Wait
	}
	c.mu.Unlock()
	if ch != nil {
		ch <- msg
	}
	if serve {
		go c.serve(msg)
	}
}

func (c *Conn) serve(req *Message) {
	defer c.handlers.Done()
	var result any
	err := error(&RPCError{Code: -32601, Message: "method not found: " + req.Method})
	if c.handler != nil {
		result, err = c.handler(c.ctx, req)
	}
	resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	var rpcErr *RPCError
	switch {
	case errors.As(err, &rpcErr):
		resp["error"] = rpcErr
	case err != nil:
		resp["error"] = &RPCError{Code: -32603, Message: err.Error()}
	default:
		resp["result"] = result
	}
	c.send(resp) // a write error means the peer is gone; nothing to tell it
}

// send writes v as one line.
func (c *Conn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.WriteLine(b)
}

// WriteLine writes b followed by a newline, unchanged: for messages a test
// wants to control byte for byte.
func (c *Conn) WriteLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(bytes.Clone(b), '\n'))
	return err
}

// Call sends a request and waits for its response. An error response is
// returned as an *RPCError.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.readErr != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %s: %v", ErrConnClosed, method, c.readErr)
	}
	id := c.nextID
	c.nextID++
	key := strconv.Itoa(id)
	ch := make(chan *Message, 1)
	c.pending[key] = ch
	c.mu.Unlock()

	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		c.forget(key)
		return nil, fmt.Errorf("acptest: sending %s: %w", method, err)
	}
	select {
	case <-ctx.Done():
		c.forget(key)
		return nil, fmt.Errorf("acptest: %s (id %d): %w", method, id, context.Cause(ctx))
	case resp, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%w before %s (id %d) was answered", ErrConnClosed, method, id)
		}
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	}
}

func (c *Conn) forget(key string) {
	c.mu.Lock()
	delete(c.pending, key)
	c.mu.Unlock()
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	return c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Received returns every message received so far, in order.
func (c *Conn) Received() []*Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Message(nil), c.received...)
}

// Notifications returns the notifications received so far with the given
// method, in order.
func (c *Conn) Notifications(method string) []*Message {
	var out []*Message
	for _, m := range c.Received() {
		if m.IsNotification() && m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// WaitFor waits until a received message satisfies match (messages already
// received count) and returns it.
func (c *Conn) WaitFor(ctx context.Context, match func(*Message) bool) (*Message, error) {
	seen := 0
	for {
		c.mu.Lock()
		msgs, changed, readErr := c.received[seen:], c.changed, c.readErr
		seen = len(c.received)
		c.mu.Unlock()
		for _, m := range msgs {
			if match(m) {
				return m, nil
			}
		}
		if readErr != nil {
			return nil, fmt.Errorf("%w: %v", ErrConnClosed, readErr)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-changed:
		}
	}
}

// Done is closed when the peer's stream has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close cancels running handlers' contexts and waits for them to return. It
// does not close the streams, which belong to the caller; close the writer
// first to let the peer finish, and the reader to stop the read loop. Close
// is idempotent.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.handlers.Wait()
	return nil
}
