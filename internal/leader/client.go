package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/answer"
)

// Errors of Client.Ask. Every one of them means: fall back to the local
// policy.
var (
	// ErrUnreachable means no leader accepted the connection.
	ErrUnreachable = errors.New("leader: unreachable")
	// ErrGone means the leader closed the connection without answering.
	ErrGone = errors.New("leader: connection closed before an answer")
	// ErrRefused is wrapped by every *RefusedError.
	ErrRefused = errors.New("leader: request refused")
	// ErrNotOffered means the leader's answer named an option the person
	// could not choose; it is never used.
	ErrNotOffered = errors.New("leader: answer names an option that was not offered")
	// ErrWithdrawn means the request was withdrawn because Ask's context
	// ended.
	ErrWithdrawn = errors.New("leader: request withdrawn")
	// ErrForeignLeader means the socket is served by another user.
	ErrForeignLeader = errors.New("leader: the socket belongs to another user")
	// ErrBadQuestion means the question cannot be sent as it is.
	ErrBadQuestion = errors.New("leader: bad question")
)

// RefusedError is the leader's error message about a request.
type RefusedError struct {
	Code    string // one of the Code constants
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("leader refused the request (%s): %s", e.Code, e.Message)
}

// Unwrap returns ErrRefused.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Answer is the leader's decision on one question.
type Answer struct {
	// OptionID is the chosen option, one the question's person could
	// choose; "" means cancelled.
	OptionID string
	// DecidedBy is "person" or the name of the leader's plugin.
	DecidedBy string
	Reason    string
	Leader    Leader
	// AnsweredBy names where the person answered ("terminal", "web:…"),
	// "" for a plugin; Said is what the person typed with the answer.
	AnsweredBy string
	Said       string
}

// Client asks a leader on behalf of a worker. It holds no connection
// between questions: each Ask dials, so that a leader restarted in between
// is found again. A Client is safe for concurrent use.
type Client struct {
	socket string
	uid    int
}

// NewClient returns a client of the leader at socket.
func NewClient(socket string) (*Client, error) {
	if err := checkSocketPath(socket); err != nil {
		return nil, err
	}
	path, err := filepath.Abs(socket)
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	return &Client{socket: path, uid: os.Getuid()}, nil
}

// Socket is the absolute path of the leader's socket.
func (c *Client) Socket() string { return c.socket }

// Ask puts q to the leader and waits for its answer. When ctx ends first
// the request is withdrawn (the leader removes it from its queue, or
// retracts its prompt) and the error wraps ErrWithdrawn and ctx's cause.
// Every error means the worker must decide by itself.
func (c *Client) Ask(ctx context.Context, q Question) (Answer, error) {
	shown, err := q.shownOptions()
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %v", ErrBadQuestion, err)
	}
	id := newID()
	if d, ok := ctx.Deadline(); ok {
		q.Deadline = d
	}
	line, err := encode(&message{Type: TypeAsk, ID: id, Worker: &q.Worker, Request: &q.Request,
		Shown: q.Shown, Explanations: q.Explanations, Reason: q.Reason, Deadline: q.Deadline})
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrBadQuestion, err)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		if ctx.Err() != nil {
			return Answer{}, fmt.Errorf("%w: %w", ErrWithdrawn, context.Cause(ctx))
		}
		return Answer{}, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	conn := nc.(*net.UnixConn)
	defer conn.Close()
	// The worker checks the leader too: a socket someone else serves could
	// approve anything.
	cred, err := peerCred(conn)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: reading its credentials: %v", ErrUnreachable, err)
	}
	if int(cred.Uid) != c.uid {
		return Answer{}, fmt.Errorf("%w: %s is served by uid %d (pid %d), not uid %d", ErrForeignLeader, c.socket, cred.Uid, cred.Pid, c.uid)
	}

	type result struct {
		a   Answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := c.await(conn, id, shown)
		done <- result{a, err}
	}()
	if err := c.write(ctx, conn, line); err != nil {
		conn.Close()
		r := <-done
		if r.err != nil && !errors.Is(r.err, ErrGone) {
			return Answer{}, r.err // the leader's own reason, if it gave one
		}
		return Answer{}, fmt.Errorf("%w: sending: %v", ErrGone, err)
	}
	select {
	case r := <-done:
		return r.a, r.err
	case <-ctx.Done():
		m := &message{Type: TypeWithdraw, ID: id}
		var ae answeredElsewhere
		if errors.As(context.Cause(ctx), &ae) {
			if by, at := ae.AnsweredElsewhere(); by == ByEditor {
				m.AnsweredBy, m.AnsweredAt = by, at.UTC()
			}
		}
		if w, err := encode(m); err == nil {
			conn.SetWriteDeadline(time.Now().Add(time.Second))
			conn.Write(w)
		}
		conn.Close()
		<-done
		return Answer{}, fmt.Errorf("%w: %w", ErrWithdrawn, context.Cause(ctx))
	}
}

func (c *Client) write(ctx context.Context, conn *net.UnixConn, line []byte) error {
	deadline := time.Now().Add(writeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetWriteDeadline(deadline)
	_, err := conn.Write(line)
	conn.SetWriteDeadline(time.Time{})
	return err
}

// await reads the leader's replies about id until the answer or an error.
func (c *Client) await(conn *net.UnixConn, id string, shown []abi.Option) (Answer, error) {
	lr := newLineReader(conn, MaxMessageBytes)
	for {
		line, err := lr.next()
		if err != nil {
			return Answer{}, fmt.Errorf("%w: %v", ErrGone, err)
		}
		m, _, err := decode(line)
		if err != nil {
			return Answer{}, fmt.Errorf("%w: unreadable reply: %v", ErrGone, err)
		}
		if m.ID != "" && m.ID != id {
			continue
		}
		switch m.Type {
		case TypeQueued:
			continue
		case TypeError:
			return Answer{}, &RefusedError{Code: m.Code, Message: m.Message}
		case TypeAnswer:
			return checkAnswer(m, shown)
		}
	}
}

// checkAnswer accepts an answer only when it chooses an option the person
// could have chosen, or cancels: the outcome is read by internal/answer,
// the one reader of permission answers.
func checkAnswer(m *message, shown []abi.Option) (Answer, error) {
	r, err := answer.FromOutcome(m.Outcome, m.OptionID)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrNotOffered, err)
	}
	if err := r.Check(func(id string) bool { return offered(shown, id) }); err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrNotOffered, err)
	}
	a := Answer{OptionID: r.OptionID, DecidedBy: m.DecidedBy, Reason: m.Reason, AnsweredBy: m.AnsweredBy, Said: m.Said}
	if m.Leader != nil {
		a.Leader = *m.Leader
	}
	return a, nil
}

// newID returns a request id unique enough for one connection.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
