package answer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/permhost/permhost/internal/jsontext"
)

// Outcomes of a permission answer (ACP's RequestPermissionOutcome).
const (
	OutcomeSelected  = "selected"
	OutcomeCancelled = "cancelled"
)

// Errors of decoding and checking an answer; every error wraps one of them.
var (
	// ErrMalformed: the answer is not exactly an ACP permission answer
	// (bad JSON, a duplicate key in any case, a key of another spelling or
	// one ACP does not define, a wrong type, an unknown outcome).
	ErrMalformed = errors.New("answer: malformed permission answer")
	// ErrNotOffered: the answer selects an option that was not offered.
	ErrNotOffered = errors.New("answer: the answer selects an option that was not offered")
)

// Reply is a permission answer as permhost read and checked it: the only
// thing the agent's answer is ever encoded from.
type Reply struct {
	// Outcome is OutcomeSelected or OutcomeCancelled.
	Outcome string
	// OptionID is the selected option; "" when cancelled.
	OptionID string
	// Meta is result._meta and OutcomeMeta the selected outcome's _meta,
	// each a strictly decoded object; nil when absent, null or not an
	// object.
	Meta, OutcomeMeta json.RawMessage
}

// Cancelled is the cancelled outcome.
func Cancelled() Reply { return Reply{Outcome: OutcomeCancelled} }

// Selected is the selection of optionID.
func Selected(optionID string) Reply { return Reply{Outcome: OutcomeSelected, OptionID: optionID} }

// Selects reports whether r selects an option.
func (r Reply) Selects() bool { return r.Outcome == OutcomeSelected }

// Check returns ErrNotOffered unless r cancels or selects an option for
// which offered is true.
func (r Reply) Check(offered func(optionID string) bool) error {
	if r.Outcome == OutcomeSelected && (r.OptionID == "" || !offered(r.OptionID)) {
		return fmt.Errorf("%w: %q", ErrNotOffered, r.OptionID)
	}
	return nil
}

// FromOutcome builds a Reply from an outcome and option id given as two
// fields (the leader protocol's answer): selected needs a non-empty option
// id, cancelled must have none, anything else is ErrMalformed.
func FromOutcome(outcome, optionID string) (Reply, error) {
	switch {
	case outcome == OutcomeSelected && optionID != "":
		return Selected(optionID), nil
	case outcome == OutcomeSelected:
		return Reply{}, fmt.Errorf("%w: selected without an optionId", ErrMalformed)
	case outcome == OutcomeCancelled && optionID == "":
		return Cancelled(), nil
	case outcome == OutcomeCancelled:
		return Reply{}, fmt.Errorf("%w: cancelled with optionId %q", ErrMalformed, optionID)
	}
	return Reply{}, fmt.Errorf("%w: unknown outcome %q", ErrMalformed, outcome)
}

// DecodeResult reads the result of a session/request_permission response,
// {"outcome":{"outcome":"selected","optionId":"x"}} or
// {"outcome":{"outcome":"cancelled"}}, with an optional _meta on the result
// and on the selected outcome. Keys must match exactly, none may repeat in
// any case (at any depth, _meta included), and no other key is accepted.
func DecodeResult(b []byte) (Reply, error) {
	f, err := jsontext.Fields(b, "outcome", "_meta")
	if err != nil {
		return Reply{}, malformed("result", err)
	}
	raw, ok := f["outcome"]
	if !ok {
		return Reply{}, fmt.Errorf("%w: the result has no outcome", ErrMalformed)
	}
	o, err := jsontext.Fields(raw, "outcome", "optionId", "_meta")
	if err != nil {
		return Reply{}, malformed("outcome", err)
	}
	kind, err := stringField(o, "outcome")
	if err != nil {
		return Reply{}, err
	}
	r := Reply{Outcome: kind, Meta: metaObject(f["_meta"])}
	switch kind {
	case OutcomeCancelled:
		if len(o) != 1 {
			return Reply{}, fmt.Errorf("%w: a cancelled outcome has only its outcome", ErrMalformed)
		}
	case OutcomeSelected:
		if r.OptionID, err = stringField(o, "optionId"); err != nil {
			return Reply{}, err
		}
		if r.OptionID == "" {
			return Reply{}, fmt.Errorf("%w: an empty optionId", ErrMalformed)
		}
		r.OutcomeMeta = metaObject(o["_meta"])
	default:
		return Reply{}, fmt.Errorf("%w: unknown outcome %s", ErrMalformed, strconv.Quote(kind))
	}
	return r, nil
}

// RPCError is a JSON-RPC error object, read strictly.
type RPCError struct {
	Code    int64
	Message string
	// Data is the optional data member, strictly valid JSON; nil when
	// absent.
	Data json.RawMessage
}

// Response is a peer's JSON-RPC response to a permission request: a Reply,
// or an Error.
type Response struct {
	// ID is the response's id as written, for the caller to match by value
	// (jsontext.CanonicalID).
	ID    []byte
	Reply Reply
	// Error is the error response; nil for a result.
	Error *RPCError
}

// DecodeResponse reads a whole response line (without its terminator)
// strictly: "jsonrpc" (optional, "2.0" when present), "id", and exactly one
// of "result" (read as DecodeResult does) or "error" ({"code","message",
// "data"?}); nothing else.
func DecodeResponse(line []byte) (Response, error) {
	id, res, rpcErr, err := DecodeEnvelope(line)
	switch {
	case err != nil:
		return Response{}, err
	case rpcErr != nil:
		return Response{ID: id, Error: rpcErr}, nil
	}
	r, err := DecodeResult(res)
	if err != nil {
		return Response{}, err
	}
	return Response{ID: id, Reply: r}, nil
}

// DecodeEnvelope reads a whole response line as DecodeResponse does but
// leaves the result to the caller: for an answer to another request that
// carries a decision (an elicitation's), whose result the caller reads
// strictly itself. It returns the id as written, and the result or the
// error.
func DecodeEnvelope(line []byte) (id, result []byte, rpcErr *RPCError, err error) {
	f, err := jsontext.Fields(line, "jsonrpc", "id", "result", "error")
	if err != nil {
		return nil, nil, nil, malformed("response", err)
	}
	if v, ok := f["jsonrpc"]; ok {
		if s, err := jsontext.String(v); err != nil || s != "2.0" {
			return nil, nil, nil, fmt.Errorf("%w: jsonrpc is not \"2.0\"", ErrMalformed)
		}
	}
	id, ok := f["id"]
	if !ok {
		return nil, nil, nil, fmt.Errorf("%w: the response has no id", ErrMalformed)
	}
	res, hasResult := f["result"]
	e, hasError := f["error"]
	switch {
	case hasResult == hasError:
		return nil, nil, nil, fmt.Errorf("%w: a response has exactly one of result and error", ErrMalformed)
	case hasError:
		rpcErr, err := decodeError(e)
		if err != nil {
			return nil, nil, nil, err
		}
		return id, nil, rpcErr, nil
	}
	return id, res, nil, nil
}

func decodeError(b []byte) (*RPCError, error) {
	f, err := jsontext.Fields(b, "code", "message", "data")
	if err != nil {
		return nil, malformed("error", err)
	}
	code, err := strconv.ParseInt(string(f["code"]), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: the error code is not an integer", ErrMalformed)
	}
	msg, err := stringField(f, "message")
	if err != nil {
		return nil, err
	}
	e := &RPCError{Code: code, Message: msg}
	if d, ok := f["data"]; ok {
		e.Data = json.RawMessage(d)
	}
	return e, nil
}

func stringField(f map[string][]byte, key string) (string, error) {
	raw, ok := f[key]
	if !ok {
		return "", fmt.Errorf("%w: no %s", ErrMalformed, key)
	}
	s, err := jsontext.String(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrMalformed, key, err)
	}
	return s, nil
}

// metaObject returns a _meta value when it is an object, else nil: ACP types
// _meta as an object or null, and a peer's other values are not passed on.
func metaObject(raw []byte) json.RawMessage {
	if _, err := jsontext.Object(raw); err != nil {
		return nil
	}
	return json.RawMessage(raw)
}

func malformed(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
}

// Checked reads a result permhost is about to send the agent and holds it
// against the options offered: what the proxy relays and what the
// decision log records are both read back from those bytes with this one
// function, so that the two cannot disagree.
func Checked(result []byte, offered func(optionID string) bool) (Reply, error) {
	r, err := DecodeResult(result)
	if err != nil {
		return Reply{}, err
	}
	if err := r.Check(offered); err != nil {
		return Reply{}, err
	}
	return r, nil
}
