package worker

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/hostlink"
	"github.com/permhost/permhost/internal/jsontext"
	"github.com/permhost/permhost/sandbox"
)

// The wire protocol between the parent and its child, over the child's
// stdin (parent → child) and stdout (child → parent). Each frame is a
// 13-byte header — the payload's length (uint32), a type byte, a call id
// (uint64), big-endian — and the payload, a JSON value or nothing.
// Length-prefixed rather than one JSON line per message, so that the
// reader knows how much it is about to read before reading it (an answer
// over the bound is skipped and failed, not buffered), and knows whose
// answer it skipped: the id is in the header.
//
// Payloads are JSON but for the requests (appendDecide) and the logs
// (appendLogs), which have plain binary parts. A session: the child says hello (its
// protocol version); the parent sets
// the child's limits and sends load (the plugin's options); the child
// answers ready (what it loaded) or failed (why not, then exits). Then the
// parent sends decide (id, the request) and cancel (id); the child sends
// answer (id, the result) and, once, retire (it is near its CPU limit and
// wants replacing). The parent closes the child's stdin to end it.
const protocolVersion = 2

// Frame types.
const (
	frameHello  byte = 'H' // child → parent: helloMsg
	frameLoad   byte = 'L' // parent → child: loadMsg
	frameReady  byte = 'R' // child → parent: readyMsg
	frameFailed byte = 'F' // child → parent: failureMsg, at load
	frameDecide byte = 'D' // parent → child: id, the request (appendDecide)
	frameCancel byte = 'C' // parent → child: id, no payload
	frameAnswer byte = 'A' // child → parent: id, answerMsg
	frameLogs   byte = 'G' // child → parent: id, the call's logs (appendLogs), just before its answer
	frameRetire byte = 'X' // child → parent: retireMsg
)

const headerSize = 13

// Bounds on frames. What the child sends is bounded by the plugin's
// limits (maxAnswerBytes); what the parent sends is trusted, but bounded so
// that a broken parent cannot make the child allocate without end.
const (
	maxHelloBytes = 4 << 10
	maxLoadBytes  = 512 << 20 // a module given as bytes travels in base64
	maxReadyBytes = 1 << 20
	maxParentSent = 1 << 30
)

// maxAnswerBytes bounds an answer frame of a plugin with limits l: its
// decision (at most MaxOutput bytes from the plugin, each of which JSON may
// escape to six) and its logs (MaxLogBytes of messages, likewise, plus the
// entries' own syntax), with room to spare.
func maxAnswerBytes(l sandbox.Limits) int {
	return 6*(l.MaxOutput+l.MaxLogBytes) + 1<<20
}

type helloMsg struct {
	Protocol int `json:"protocol"`
}

// loadMsg is host.Options without the logger, and the child's log level.
type loadMsg struct {
	Protocol int             `json:"protocol"`
	Name     string          `json:"name"`
	Path     string          `json:"path,omitempty"`
	Wasm     []byte          `json:"wasm,omitempty"`
	SHA256   string          `json:"sha256,omitempty"`
	Config   json.RawMessage `json:"config,omitempty"`
	Limits   sandbox.Limits  `json:"limits"`
	CacheDir string          `json:"cacheDir,omitempty"`
	PoolSize int             `json:"poolSize,omitempty"`
	LogLevel slog.Level      `json:"logLevel"`
	// PollFor is how long the child polls for the next request before it
	// parks (Options.PollFor).
	PollFor time.Duration `json:"pollFor,omitempty"`
}

func (m *loadMsg) options() host.Options {
	return host.Options{Name: m.Name, Path: m.Path, Wasm: m.Wasm, SHA256: m.SHA256, Config: m.Config,
		Limits: m.Limits, CacheDir: m.CacheDir, PoolSize: m.PoolSize}
}

type readyMsg struct {
	Name   string         `json:"name"`
	SHA256 string         `json:"sha256"`
	ABI    abi.Version    `json:"abi"`
	Info   abi.Info       `json:"info"`
	Limits sandbox.Limits `json:"limits"`
	// ConfigProblems is what the plugin's permhost_check_config found.
	ConfigProblems []abi.ConfigProblem `json:"configProblems,omitempty"`
}

type failureMsg struct {
	Kind    host.Kind `json:"kind"`
	Message string    `json:"message"`
}

type answerMsg struct {
	Decision *abi.Decision `json:"decision"`
	Failure  *failureMsg   `json:"failure"`
}

// A call's logs travel in a frame of their own, in a plain binary form:
// per entry the level and the message, each a uvarint length and its
// bytes. They are shown, never acted on, and can be many (a plugin may
// log thousands of short lines within its bound): as strict JSON they cost
// the parent ~10 ms per 4,096 entries, here ~0.1 ms.
func appendLogs(b []byte, logs []host.Log) []byte {
	for _, l := range logs {
		b = binary.AppendUvarint(b, uint64(len(l.Level)))
		b = append(b, l.Level...)
		b = binary.AppendUvarint(b, uint64(len(l.Message)))
		b = append(b, l.Message...)
	}
	return b
}

// logLevels are the levels a log entry may have (host.Log).
var logLevels = map[string]string{"stdout": "stdout", "stderr": "stderr", "debug": "debug", "info": "info",
	"warn": "warn", "error": "error", "trace": "trace"}

// parseLogs reads what appendLogs wrote, as from an untrusted peer: known
// levels only, messages made valid UTF-8.
func parseLogs(b []byte) ([]host.Log, error) {
	var logs []host.Log
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, fmt.Errorf("%w: logs frame cut short", ErrProtocol)
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	for len(b) > 0 {
		level, err := next()
		if err != nil {
			return nil, err
		}
		lv, ok := logLevels[string(level)]
		if !ok {
			return nil, fmt.Errorf("%w: log level %.20q", ErrProtocol, level)
		}
		msg, err := next()
		if err != nil {
			return nil, err
		}
		logs = append(logs, host.Log{Level: lv, Message: strings.ToValidUTF8(string(msg), "\uFFFD")})
	}
	return logs, nil
}

type retireMsg struct {
	Reason string `json:"reason"`
}

// knownKinds are the kinds a child may report; anything else breaks the
// protocol.
var knownKinds = map[host.Kind]bool{
	host.KindLoad: true, host.KindABI: true, host.KindForbiddenImport: true, host.KindTimeout: true,
	host.KindTrap: true, host.KindMemory: true, host.KindOutputTooLarge: true, host.KindBadOutput: true,
	host.KindCancelled: true, host.KindPluginError: true, host.KindInputTooLarge: true,
}

// appendFrame appends one frame to b.
func appendFrame(b []byte, typ byte, id uint64, payload []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, typ)
	b = binary.BigEndian.AppendUint64(b, id)
	return append(b, payload...)
}

// tooLargeError is a frame whose payload exceeds the reader's bound; its
// payload has been skipped, so the stream can go on.
type tooLargeError struct {
	typ  byte
	id   uint64
	size int
	max  int
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("frame %q of %d bytes exceeds the bound of %d", e.typ, e.size, e.max)
}

// readFrame reads one frame whose payload may be up to maxFor(typ) bytes.
// A larger one is skipped and reported as a *tooLargeError; any other
// error leaves the stream unusable.
func readFrame(r *bufio.Reader, maxFor func(byte) int) (typ byte, id uint64, payload []byte, err error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, nil, err
	}
	n := int64(binary.BigEndian.Uint32(h[0:4]))
	typ, id = h[4], binary.BigEndian.Uint64(h[5:13])
	if max := maxFor(typ); n > int64(max) {
		if _, err := io.CopyN(io.Discard, r, n); err != nil {
			return 0, 0, nil, fmt.Errorf("%w: skipping an oversized frame: %v", ErrProtocol, err)
		}
		return typ, id, nil, &tooLargeError{typ: typ, id: id, size: int(n), max: max}
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, nil, err
	}
	return typ, id, payload, nil
}

// marshal encodes v as JSON without HTML escaping, the way the host
// encodes a request for a plugin (so that its size is the size the host
// checks against MaxInput).
func marshal(v any) ([]byte, error) {
	var buf jsonBuffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf[:len(buf)-1], nil // Encode's newline
}

type jsonBuffer []byte

func (b *jsonBuffer) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}

// decodeStrict decodes what the child sent: one strict JSON object
// (jsontext: no duplicate keys in any case, at any depth) with only the
// keys named, into v.
func decodeStrict(b []byte, v any, keys ...string) error {
	if _, err := jsontext.Fields(b, keys...); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// A decide frame's payload is the request's options, in the plain binary
// form below, then the request's JSON as the host gives it to the plugin
// (hostlink.AppendRequest): the child hands those bytes to its host as
// they are, and checks the plugin's decision against the options as the
// host does in process. Of an option the check reads only its id, kind,
// whether it is durable and whether it describes changes, known or not:
// per option the id and the kind, each a uvarint length and its bytes,
// then a byte of flags.
const (
	optionDurable      = 1 << iota // Option.Durable
	optionChanges                  // Option.Changes != nil
	optionChangesKnown             // Option.Changes.Known
)

// appendDecide appends a decide payload for req to b.
func appendDecide(b []byte, req *abi.Request) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(req.Options)))
	for _, o := range req.Options {
		b = binary.AppendUvarint(b, uint64(len(o.OptionID)))
		b = append(b, o.OptionID...)
		b = binary.AppendUvarint(b, uint64(len(o.Kind)))
		b = append(b, o.Kind...)
		var f byte
		if o.Durable {
			f |= optionDurable
		}
		if o.Changes != nil {
			f |= optionChanges
			if o.Changes.Known {
				f |= optionChangesKnown
			}
		}
		b = append(b, f)
	}
	return hostlink.AppendRequest(b, req)
}

// errDecideCut is a decide frame cut short.
var errDecideCut = fmt.Errorf("%w: decide frame cut short", ErrProtocol)

// parseDecide splits a decide payload into the options and the request's
// JSON.
func parseDecide(b []byte) ([]abi.Option, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64((len(b)-k)/3) { // an option takes at least three bytes
		return nil, nil, errDecideCut
	}
	b = b[k:]
	next := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	options := make([]abi.Option, 0, n)
	for range n {
		id, ok := next()
		if !ok {
			return nil, nil, errDecideCut
		}
		kind, ok := next()
		if !ok || len(b) == 0 {
			return nil, nil, errDecideCut
		}
		f := b[0]
		b = b[1:]
		o := abi.Option{OptionID: id, Kind: kind, Durable: f&optionDurable != 0}
		if f&optionChanges != 0 {
			o.Changes = &abi.ChangeSet{Known: f&optionChangesKnown != 0}
		}
		options = append(options, o)
	}
	return options, b, nil
}
