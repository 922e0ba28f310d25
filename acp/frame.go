package acp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/permhost/permhost/internal/jsontext"
)

// This file holds the framing helpers: the strict decoding of a message's
// envelope, id keys, and the lines permhost writes itself. (The cheap look
// that decides whether a line needs decoding at all is in fastpath.go.)

// trimEOL returns line without its terminator ("\n" or "\r\n").
func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	return line
}

// kind of a line.
type kind int

const (
	kindInvalid      kind = iota // not a JSON-RPC object, or one read two ways
	kindBlank                    // empty or whitespace only
	kindBatch                    // a JSON array
	kindRequest                  // method and id
	kindNotification             // method, no id
	kindResponse                 // id and result or error, no method
)

func (k kind) String() string {
	return [...]string{"invalid", "blank", "batch", "request", "notification", "response"}[k]
}

// decoded is a message's envelope. Its byte slices point into the text
// decoded: a caller that keeps them past the line clones the text first.
type decoded struct {
	kind   kind
	method string
	// The members of the envelope, as written; nil when absent.
	id, params, result, error, jsonrpc []byte
	// paramsAt is where params starts in the text decoded.
	paramsAt int
	// elems are a batch's elements.
	elems [][]byte
	// strict is nil when the message is strict JSON (jsontext.Check), else
	// why not: such a message may read differently in other parsers, so
	// permhost learns nothing from it and flags a permission request.
	strict error
	// unreadable is set when the method is present but cannot be read: the
	// message may be anything, a permission request included.
	unreadable bool
	err        error // why the line is invalid
}

// Errors that say why a line is invalid.
var (
	errNotJSONRPC = errors.New("acp: not a JSON-RPC request, notification or response")
	errAmbiguous  = errors.New("acp: the envelope can be read two ways")
)

// envelope names the top-level members permhost reads; any other spelling
// of one of them (another case, a second copy) makes the envelope
// ambiguous, since Go's encoding/json would take it for the member.
var envelope = [...]string{"id", "method", "params", "result", "error", "jsonrpc"}

// decode classifies body (a line without its terminator, or a batch
// element) and decodes its envelope with exact keys at the top level. It
// never fails: a line it cannot read one way only is kindInvalid.
func decode(body []byte) decoded {
	i := 0
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	if i == len(body) {
		return decoded{kind: kindBlank}
	}
	if body[i] == '[' {
		elems, err := jsontext.Elements(body)
		if err != nil {
			return decoded{err: err}
		}
		return decoded{kind: kindBatch, elems: elems}
	}
	var d decoded
	ms, err := jsontext.Object(body)
	if err != nil && !errors.Is(err, jsontext.ErrSyntax) && !errors.Is(err, jsontext.ErrType) {
		d.strict = err
		ms, err = jsontext.Members(body)
	}
	if err != nil {
		d.err = err
		return d
	}
	var method []byte
	for _, m := range ms {
		var dst *[]byte
		switch m.Key {
		case "id":
			dst = &d.id
		case "method":
			dst = &method
		case "params":
			dst, d.paramsAt = &d.params, m.Offset
		case "result":
			dst = &d.result
		case "error":
			dst = &d.error
		case "jsonrpc":
			dst = &d.jsonrpc
		default:
			if isEnvelopeVariant(m.Key) {
				d.err = fmt.Errorf("%w: key %q", errAmbiguous, m.Key)
				return d
			}
			continue
		}
		if *dst != nil {
			d.err = fmt.Errorf("%w: key %q twice", errAmbiguous, m.Key)
			return d
		}
		*dst = m.Value
	}
	if method != nil && string(method) != "null" && (d.result != nil || d.error != nil) ||
		d.result != nil && d.error != nil {
		// Parsers disagree on which of the two such a message is.
		d.err = fmt.Errorf("%w: a method or result with an error or result", errAmbiguous)
		return d
	}
	if method != nil && string(method) != "null" {
		s, err := jsontext.String(method)
		if err != nil {
			d.unreadable = true
			d.err = fmt.Errorf("acp: unreadable method: %w", err)
			return d
		}
		d.method = s
		if d.id != nil {
			d.kind = kindRequest
		} else {
			d.kind = kindNotification
		}
		return d
	}
	if d.id != nil && (d.result != nil || d.error != nil) {
		d.kind = kindResponse
		return d
	}
	d.err = errNotJSONRPC
	return d
}

func isEnvelopeVariant(key string) bool {
	if len(key) > 24 {
		return false
	}
	for _, e := range envelope {
		if jsontext.FoldEqual(key, e) {
			return true
		}
	}
	return false
}

// mayBePermission reports whether an agent line that is not one readable
// message could be a permission request to another parser: its method
// cannot be read, or its text names request_permission (through escapes
// too). Such a line fails closed instead of passing through.
func mayBePermission(body []byte, d decoded) bool {
	return d.unreadable || jsontext.Mentions(body, permissionWord)
}

// recoverIDs returns the ids a line that is not one readable message may
// carry: the values of its top-level keys that read as "id" in any case, as
// far as the line parses.
func recoverIDs(body []byte) [][]byte {
	ms, err := jsontext.Members(body)
	if err != nil {
		ms = jsontext.PrefixMembers(body)
	}
	var ids [][]byte
	for _, m := range ms {
		if len(m.Key) <= 6 && jsontext.FoldEqual(m.Key, "id") {
			if _, err := jsontext.CanonicalID(m.Value); err == nil && !jsontext.IsNull(m.Value) {
				ids = append(ids, m.Value)
			}
		}
	}
	return ids
}

// idKey is the key of an id in a pending table: one text per JSON value
// (55, 55.0 and 5.5e1 are one id; "a" and "\u0061" too), so that a peer
// cannot answer one request under two spellings. An id that has no
// canonical text (not a string, number or null) keys by its bytes.
func idKey(id []byte) string {
	if k, err := jsontext.CanonicalID(id); err == nil {
		return k
	}
	return "raw:" + string(bytes.TrimSpace(id))
}

// intValue parses a JSON integer; ok is false for anything else.
func intValue(raw []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return n, err == nil
}

// Lines permhost writes itself.

func responseLine(id, result []byte) []byte {
	b := make([]byte, 0, 40+len(id)+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, bytes.TrimSpace(id)...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

func errorLine(id []byte, code int, message string) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, bytes.TrimSpace(id)...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = append(b, jsontext.Quote(message)...)
	return append(b, "}}"...)
}

func requestLine(id []byte, method string, params []byte) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, bytes.TrimSpace(id)...)
	b = append(b, `,"method":`...)
	b = append(b, jsontext.Quote(method)...)
	b = append(b, `,"params":`...)
	b = append(b, params...)
	return append(b, '}')
}

func notificationLine(method string, params []byte) []byte {
	b := []byte(`{"jsonrpc":"2.0","method":`)
	b = append(b, jsontext.Quote(method)...)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// compactJSON checks params strictly and compacts it for a line of
// permhost's own.
func compactJSON(params []byte) ([]byte, error) {
	if err := jsontext.Check(params); err != nil {
		return nil, err
	}
	return jsontext.AppendCompact(nil, params), nil
}

// fields reads the members named of a strict JSON object (exact keys; see
// jsontext.Lookup); ok is false for anything else.
func fields(obj []byte, names ...string) (map[string][]byte, bool) {
	f, err := jsontext.Lookup(obj, names...)
	return f, err == nil
}

// stringOf reads a strict JSON string; "" for anything else.
func stringOf(raw []byte) string {
	s, _ := jsontext.String(raw)
	return s
}
