package policy

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/permhost/permhost/internal/jsontext"
)

// member is one key of a JSON object with its value's original bytes.
type member struct {
	key   string
	value json.RawMessage
}

// splitObject returns the members of a JSON object in their original order,
// values byte-for-byte. It is how permhost edits a message it must change
// (adding _meta.permhost, narrowing options) without disturbing the rest.
// It reads strictly (internal/jsontext): an object with a key twice, in any
// case and at any depth, is an error, so what permhost edits is what every
// parser reads.
func splitObject(obj json.RawMessage) ([]member, error) {
	ms, err := jsontext.Object(obj)
	if err != nil {
		return nil, err
	}
	out := make([]member, len(ms))
	for i, m := range ms {
		out[i] = member{m.Key, json.RawMessage(m.Value)}
	}
	return out, nil
}

// joinObject writes members back as one object.
func joinObject(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsontext.Quote(m.key))
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// setMember sets key to value, in place when present, else appended.
func setMember(ms []member, key string, value json.RawMessage) []member {
	for i := range ms {
		if ms[i].key == key {
			ms[i].value = value
			return ms
		}
	}
	return append(ms, member{key, value})
}

func getMember(ms []member, key string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// withMeta returns obj with _meta[key] = value, keeping every other _meta key
// and every other member. A _meta that is null or absent becomes an object;
// one that is not an object is replaced (its bytes are not ours to keep in a
// field the spec types as an object).
func withMeta(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	ms, err := splitObject(obj)
	if err != nil {
		return nil, err
	}
	var meta []member
	if raw, ok := getMember(ms, "_meta"); ok {
		meta, _ = splitObject(raw) // null or not an object: start afresh
	}
	meta = setMember(meta, key, value)
	return joinObject(setMember(ms, "_meta", joinObject(meta))), nil
}

// marshal encodes v without HTML escaping, as permhost writes all its JSON.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("policy: marshal %T: %v", v, err)) // only our own types are encoded
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}
