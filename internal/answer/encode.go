package answer

import (
	"bytes"
	"strconv"

	"github.com/permhost/permhost/internal/jsontext"
)

// Result returns r as a session/request_permission result, keys in ACP's
// order, _meta objects compacted; what permhost sends is only ever this.
func (r Reply) Result() []byte { return r.appendResult(nil) }

func (r Reply) appendResult(b []byte) []byte {
	b = append(b, `{"outcome":{"outcome":`...)
	if r.Outcome == OutcomeSelected {
		b = append(b, `"selected","optionId":`...)
		b = append(b, jsontext.Quote(r.OptionID)...)
		b = appendMeta(b, r.OutcomeMeta)
	} else {
		b = append(b, `"cancelled"`...)
	}
	b = append(b, '}')
	b = appendMeta(b, r.Meta)
	return append(b, '}')
}

func appendMeta(b, meta []byte) []byte {
	if meta == nil {
		return b
	}
	b = append(b, `,"_meta":`...)
	// Compacted: a value spread over lines must not break the framing.
	return jsontext.AppendCompact(b, meta)
}

// Encode returns the JSON-RPC response (no line terminator) that answers
// the request with id (the request's own id bytes) with r.
func Encode(id []byte, r Reply) []byte {
	b := appendHead(make([]byte, 0, 96+len(r.OptionID)+len(r.Meta)+len(r.OutcomeMeta)), id)
	b = append(b, `,"result":`...)
	b = r.appendResult(b)
	return append(b, '}')
}

// EncodeError returns the JSON-RPC error response (no line terminator) that
// answers the request with id with e. Data that is not strict JSON is left
// out.
func EncodeError(id []byte, e RPCError) []byte {
	b := appendHead(nil, id)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, `,"message":`...)
	b = append(b, jsontext.Quote(e.Message)...)
	if e.Data != nil && jsontext.Check(e.Data) == nil {
		b = append(b, `,"data":`...)
		b = jsontext.AppendCompact(b, e.Data)
	}
	return append(b, "}}"...)
}

func appendHead(b, id []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	return append(b, bytes.TrimSpace(id)...)
}
