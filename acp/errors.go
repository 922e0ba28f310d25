package acp

import (
	"errors"
	"fmt"
	"strconv"
)

// JSON-RPC 2.0 and ACP error codes. This is the one place permhost defines
// them; other packages refer to these constants.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeRequestCancelled answers a request cancelled with $/cancel_request.
	CodeRequestCancelled = -32800
	// CodeAuthRequired is ACP's "authentication required".
	CodeAuthRequired = -32000
	// CodeResourceNotFound is ACP's "resource not found".
	CodeResourceNotFound = -32002
)

// ProtocolVersion is the only ACP protocol version permhost speaks.
const ProtocolVersion = 1

// Errors returned by this package.
var (
	// ErrLineTooLong means a peer sent a line longer than Options.MaxLineBytes.
	ErrLineTooLong = errors.New("acp: line exceeds the maximum line size")
	// ErrProtocolVersion means the agent answered initialize with a protocol
	// version other than ProtocolVersion; the proxy failed closed.
	ErrProtocolVersion = errors.New("acp: agent answered an unsupported protocol version")
	// ErrAlreadyAsked is returned by Client.Ask when the request was already
	// forwarded to the client once.
	ErrAlreadyAsked = errors.New("acp: permission request already forwarded to the client")
	// ErrAnswered is returned by Client.Ask when the agent has already been
	// answered (for example after a session/cancel).
	ErrAnswered = errors.New("acp: permission request already answered")
	// ErrClosed is returned when the proxy is no longer running.
	ErrClosed = errors.New("acp: proxy closed")
)

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Data is the optional data member, verbatim.
	Data []byte `json:"-"`
}

func (e *RPCError) Error() string {
	return "acp: JSON-RPC error " + strconv.Itoa(e.Code) + ": " + e.Message
}

// LineTooLongError reports which peer sent an oversized line.
type LineTooLongError struct {
	From  string // "client" or "agent"
	Limit int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("acp: %s sent a line longer than %d bytes (raise --max-line-bytes)", e.From, e.Limit)
}

func (e *LineTooLongError) Unwrap() error { return ErrLineTooLong }
