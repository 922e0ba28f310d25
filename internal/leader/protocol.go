package leader

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/jsontext"
	"github.com/permhost/permhost/internal/safetext"
)

// Version is the major version of the wire format. A message of another
// version is refused with [CodeVersion]; fields added within a version are
// ignored by peers that do not know them.
const Version = 1

// MaxMessageBytes bounds one message, newline included. A longer line is
// refused with [CodeTooLarge] and its connection closed, since the rest of
// the line cannot be trusted to be framed as its sender meant.
const MaxMessageBytes = 1 << 20

// Bounds on what one leader holds, so that a misbehaving worker cannot
// exhaust it.
const (
	maxIDBytes      = 128
	maxPendingConn  = 64
	maxPendingTotal = 1024
)

// Message types.
const (
	TypeAsk      = "ask"      // worker → leader: a request to decide
	TypeWithdraw = "withdraw" // worker → leader: the request is no longer needed
	TypeQueued   = "queued"   // leader → worker: accepted, waiting for a person
	TypeAnswer   = "answer"   // leader → worker: the decision
	TypeError    = "error"    // leader → worker: refused; see Code
)

// Outcomes of an answer.
const (
	OutcomeSelected  = "selected"
	OutcomeCancelled = "cancelled"
)

// Error codes the leader sends in an error message.
const (
	CodeTooLarge  = "too_large" // the line exceeds MaxMessageBytes; the connection is closed
	CodeMalformed = "malformed" // not a JSON object of the wire format
	CodeVersion   = "version"   // a version this leader does not speak
	CodeForbidden = "forbidden" // the peer is another user; the connection is closed
	CodeInvalid   = "invalid"   // well-formed but unusable (no id, no options, duplicate id...)
	CodeBusy      = "busy"      // too many requests pending
	CodeUndecided = "undecided" // nobody could decide (the prompt failed); fall back
	CodeClosing   = "closing"   // the leader is shutting down
)

// Worker identifies who asks. The leader replaces PID with the peer
// credentials of the connection, which the worker cannot forge.
type Worker struct {
	PID     int    `json:"pid"`
	Cwd     string `json:"cwd,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
	// Name is an optional label chosen by the person who started the
	// worker (for example the CI job).
	Name string `json:"name,omitempty"`
}

// String names the worker for a person and for decision logs. The
// worker's own words are rendered by safetext: they end up on a terminal.
func (w Worker) String() string {
	s := fmt.Sprintf("worker pid %d", w.PID)
	if w.Name != "" {
		s = fmt.Sprintf("worker %s (pid %d)", safetext.Terminal(w.Name), w.PID)
	}
	if w.Agent != "" {
		s += ", agent " + safetext.Terminal(w.Agent)
	}
	if w.Session != "" {
		s += ", session " + safetext.Terminal(w.Session)
	}
	return s
}

// Explanation is what one plugin said about a request, shown to the person.
type Explanation struct {
	Plugin    string `json:"plugin"`
	Summary   string `json:"summary,omitempty"`
	Risk      string `json:"risk,omitempty"`
	RiskLevel string `json:"riskLevel,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// Question is what a worker asks: the request with its full context, and
// what its own plugins said.
type Question struct {
	Worker  Worker      `json:"worker"`
	Request abi.Request `json:"request"`
	// Shown are the ids of the options the person may choose, a subset of
	// Request.Options (the worker's fallback may have removed the durable
	// ones); empty means every offered option.
	Shown        []string      `json:"shown,omitempty"`
	Explanations []Explanation `json:"explanations,omitempty"`
	// Reason says why the worker's plugins could not decide.
	Reason string `json:"reason,omitempty"`
	// Deadline is when the worker stops waiting and decides by itself;
	// Client.Ask sets it from its context.
	Deadline time.Time `json:"deadline,omitzero"`
}

// shownOptions resolves Shown against the offered options, in the agent's
// order, and checks that the question is usable.
func (q *Question) shownOptions() ([]abi.Option, error) {
	if len(q.Request.Options) == 0 {
		return nil, errors.New("the request offers no options")
	}
	offered := map[string]bool{}
	for _, o := range q.Request.Options {
		if o.OptionID == "" {
			return nil, errors.New("an offered option has an empty optionId")
		}
		if offered[o.OptionID] {
			return nil, fmt.Errorf("option %q is offered twice", o.OptionID)
		}
		offered[o.OptionID] = true
	}
	if len(q.Shown) == 0 {
		return q.Request.Options, nil
	}
	want := map[string]bool{}
	for _, id := range q.Shown {
		if !offered[id] {
			return nil, fmt.Errorf("shown option %q was not offered", id)
		}
		want[id] = true
	}
	var out []abi.Option
	for _, o := range q.Request.Options {
		if want[o.OptionID] {
			out = append(out, o)
		}
	}
	return out, nil
}

// Leader identifies the leader in an answer.
type Leader struct {
	PID    int    `json:"pid"`
	Socket string `json:"socket,omitempty"`
}

// String names the leader for decision logs.
func (l Leader) String() string {
	if l.Socket == "" {
		return fmt.Sprintf("leader pid %d", l.PID)
	}
	return fmt.Sprintf("leader pid %d at %s", l.PID, safetext.Terminal(l.Socket))
}

// message is every message of the wire format; Type says which fields
// mean something.
type message struct {
	V    int    `json:"v"`
	Type string `json:"type"`
	// ID is chosen by the worker, unique among its pending requests on the
	// connection, and echoed in every reply about the request.
	ID string `json:"id,omitempty"`

	// ask
	Worker       *Worker       `json:"worker,omitempty"`
	Request      *abi.Request  `json:"request,omitempty"`
	Shown        []string      `json:"shown,omitempty"`
	Explanations []Explanation `json:"explanations,omitempty"`
	Deadline     time.Time     `json:"deadline,omitzero"`

	// queued: how many requests are ahead of this one.
	Ahead *int `json:"ahead,omitempty"`

	// answer
	Outcome   string `json:"outcome,omitempty"`
	OptionID  string `json:"optionId,omitempty"`
	DecidedBy string `json:"decidedBy,omitempty"`
	// Reason is why the worker's plugins could not decide (ask), or why
	// the leader decided as it did (answer).
	Reason string  `json:"reason,omitempty"`
	Leader *Leader `json:"leader,omitempty"`
	// AnsweredBy names where the person answered ("terminal", "web:…");
	// Said is what the person typed with the answer, for the model.
	AnsweredBy string `json:"answeredBy,omitempty"`
	Said       string `json:"said,omitempty"`
	// AnsweredAt is, in a withdraw, when the person answered elsewhere
	// (answeredBy "editor").
	AnsweredAt time.Time `json:"answeredAt,omitzero"`

	// error
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// ErrTooLarge is returned by a lineReader for a line over its bound.
var ErrTooLarge = fmt.Errorf("leader: message exceeds %d bytes", MaxMessageBytes)

// lineReader reads newline-terminated lines of bounded size.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 16<<10), max: max}
}

// next returns the next line without its newline. A final line without a
// newline is returned with io.EOF left for the following call.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if len(lr.buf)+len(chunk) > lr.max {
			return nil, ErrTooLarge
		}
		lr.buf = append(lr.buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(lr.buf[:len(lr.buf)-1], []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(lr.buf) > 0:
			return lr.buf, nil
		default:
			return nil, err
		}
	}
}

// messageFields are the top-level keys of the wire format. A key that
// equals one of them only after case folding is refused: encoding/json would
// take it for the field.
var messageFields = []string{"v", "type", "id", "worker", "request", "shown", "explanations", "deadline",
	"ahead", "outcome", "optionId", "decidedBy", "reason", "leader", "answeredBy", "said", "answeredAt", "code", "message"}

// decode parses one line, refusing anything but a strict JSON object
// (internal/jsontext: no duplicate key in any case at any depth, top-level
// keys spelled exactly) of a known version; it returns the error code to
// send with the error. Unknown fields are ignored, as the format allows.
func decode(line []byte) (*message, string, error) {
	if !utf8.Valid(line) {
		return nil, CodeMalformed, errors.New("leader: message is not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, CodeMalformed, errors.New("leader: message is not a JSON object")
	}
	var m message
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&m); err != nil {
		return nil, CodeMalformed, fmt.Errorf("leader: malformed JSON: %v", err)
	}
	if dec.More() {
		return nil, CodeMalformed, errors.New("leader: more than one JSON value on a line")
	}
	if _, err := jsontext.Lookup(trimmed, messageFields...); err != nil {
		return nil, CodeMalformed, fmt.Errorf("leader: the message does not read one way only: %w", err)
	}
	if m.V != Version {
		return &m, CodeVersion, fmt.Errorf("leader: wire version %d not supported (this leader speaks %d)", m.V, Version)
	}
	return &m, "", nil
}

// encode marshals m as one line.
func encode(m *message) ([]byte, error) {
	m.V = Version
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	if buf.Len() > MaxMessageBytes {
		return nil, ErrTooLarge
	}
	return buf.Bytes(), nil
}
