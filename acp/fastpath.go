package acp

import (
	"bytes"

	"github.com/permhost/permhost/internal/jsontext"
)

// This file is the fast path: the one cheap look at a line that lets the
// dominant traffic (plain session/update notifications, the agent's
// message chunks and plans) through without decoding.
//
// The rule: a line may skip the strict path only if it is certainly not
// something permhost acts on, in every parser's reading. The fast path
// (fastPath.plain; isPlainUpdate without a memo) claims a line only when
// all of these hold, and anything it is unsure of takes the strict path
// (decode, then agentMessage or clientMessage):
//
//   - its top level is one JSON object (Skim: brackets, strings and literals
//     as every parser reads them, nothing after it but whitespace) whose
//     keys are ASCII without escapes, with "method" exactly once, valued
//     exactly "session/update", "jsonrpc" and "params" at most once, and no
//     other key that is, in any case, one of the envelope's (so no id: a
//     request is not plain, nor a response);
//   - it has no escape that could spell a letter, a digit, "_" or "/" (only
//     \" \\ \n \r \t \b \f), so every word in it is written as itself;
//   - it mentions none of strictWords anywhere, keys or values, at any depth.
//
// What permhost learns from session/update (tool calls, mode and config
// changes) it learns on the strict path, since the kinds it tracks are
// strictWords. For code that makes permhost act on more:
//
//   - a request, a response or a notification other than session/update
//     (fs/*, elicitation/create, session results, set_mode...) never takes
//     the fast path: nothing to do here;
//   - a kind of session/update must add its sessionUpdate value (or another
//     word with an inner '_' every such line contains) to strictWords.
//
// The fuzz target FuzzLines checks the claims against the strict decoder
// and Go's encoding/json, with and without the memo.

// strictWords are the words whose mention anywhere in a line sends it to
// the strict path. Each must contain '_' (not first or last): the scan finds
// them at their first underscore, so that it costs one pass over the line
// for all of them.
var strictWords = [...]string{
	"tool_call", // tool_call and tool_call_update
	"current_mode_update",
	"config_option_update",
	permissionWord,
}

const permissionWord = "request_permission"

// strictWordAt holds, for each of strictWords, the offset of its first '_'
// (never the first or last byte), and the bytes either side of it.
var strictWordAt = func() (at [len(strictWords)]struct {
	off         int
	before, aft byte
}) {
	for i, w := range strictWords {
		k := bytes.IndexByte([]byte(w), '_')
		if k < 1 || k == len(w)-1 {
			panic("acp: strict word without an inner underscore: " + w)
		}
		at[i].off, at[i].before, at[i].aft = k, w[k-1], w[k+1]
	}
	return at
}()

var sessionUpdateValue = []byte(`"session/update"`)

// fastPath is the fast path of one direction: isPlainUpdate with a memo of
// the last plain line's shape (jsontext.SkimMemo), since an agent's updates
// mostly differ only in their text. It is not safe for concurrent use.
type fastPath struct {
	memo jsontext.SkimMemo
}

// plain reports whether line is certainly a session/update notification
// whose content permhost does not track, so it can be forwarded without
// being decoded. See the rule above. A line of the shape of the last plain
// one, differing only in its longest nested string, needs no walk, and only
// that string's new contents are looked at for escapes and words: the rest
// is the last plain line's.
func (fp *fastPath) plain(line []byte) bool {
	if text, ok := fp.memo.Contents(line); ok {
		return plainEscapes(text) && !mentionsStrictWord(text)
	}
	if !plainEscapes(line) || mentionsStrictWord(line) {
		return false
	}
	nested, ok := plainEnvelope(line)
	if ok {
		fp.memo.Set(line, nested)
	}
	return ok
}

// isPlainUpdate is plain without a memo.
func isPlainUpdate(line []byte) bool {
	var fp fastPath
	return fp.plain(line)
}

// plainEnvelope checks the top level of a line whose escapes and words were
// checked: one object with the envelope of a session/update notification.
func plainEnvelope(line []byte) (jsontext.Span, bool) {
	var method, params, jsonrpc bool
	nested, ok := jsontext.Skim(line, func(key, value []byte) bool {
		var seen *bool
		switch string(key) {
		case "method":
			if !bytes.Equal(value, sessionUpdateValue) {
				return false
			}
			seen = &method
		case "params":
			seen = &params
		case "jsonrpc":
			seen = &jsonrpc
		default:
			return !envelopeKeyFold(key)
		}
		if *seen {
			return false
		}
		*seen = true
		return true
	})
	return nested, ok && method
}

// plainEscapes reports whether every backslash in line starts an escape
// that stands for a character no word or key permhost reads contains.
func plainEscapes(line []byte) bool {
	for i := 0; ; {
		k := bytes.IndexByte(line[i:], '\\')
		if k < 0 {
			return true
		}
		i += k + 1
		if i == len(line) {
			return false
		}
		switch line[i] {
		case '"', '\\', 'n', 'r', 't', 'b', 'f':
			i++
		default: // \u, \/, or no escape at all
			return false
		}
	}
}

// mentionsStrictWord reports whether one of strictWords occurs in line.
func mentionsStrictWord(line []byte) bool {
	for i := 0; ; i++ {
		k := bytes.IndexByte(line[i:], '_')
		if k < 0 {
			return false
		}
		i += k
		if i == 0 || i+1 == len(line) {
			continue
		}
		before, aft := line[i-1], line[i+1]
		for j, w := range strictWords {
			at := &strictWordAt[j]
			if before == at.before && aft == at.aft {
				if s := i - at.off; s >= 0 && s+len(w) <= len(line) && string(line[s:s+len(w)]) == w {
					return true
				}
			}
		}
	}
}

// envelopeKeyFold reports whether key, a top-level key as written, may be
// read as one of the envelope's: it is one of them in any ASCII case, or it
// is not plain ASCII without escapes (Go's encoding/json folds "ſ" to "s"
// and "K" to "k").
func envelopeKeyFold(key []byte) bool {
	for _, c := range key {
		if c >= 0x80 || c == '\\' {
			return true
		}
	}
	for _, e := range envelope {
		if len(key) == len(e) && asciiEqualFold(key, e) {
			return true
		}
	}
	return false
}

func asciiEqualFold(a []byte, b string) bool {
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
