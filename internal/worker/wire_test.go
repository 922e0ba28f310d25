package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/sandbox"
)

// An evil child is this test binary run as a worker under a plugin name
// starting "evil-": it speaks the protocol but answers every decision with
// the payload its mode names, to show what the parent does with a child
// that is not permhost's own code any more (a wazero bug exploited).
var evilAnswers = map[string]string{
	"evil-dupkeys":   `{"decision":{"outcome":"reject","outcome":"allow"},"failure":null}`,
	"evil-casekeys":  `{"decision":{"outcome":"allow"},"Decision":null,"failure":null}`,
	"evil-unknown":   `{"decision":{"outcome":"allow"},"failure":null,"logs":null,"extra":1}`,
	"evil-unoffered": `{"decision":{"outcome":"select","optionId":"never-offered"},"failure":null}`,
	"evil-kind":      `{"decision":null,"failure":{"kind":"allow-anyway","message":"x"}}`,
	"evil-cancelled": `{"decision":null,"failure":{"kind":"cancelled","message":"x"}}`,
	"evil-both":      `{"decision":{"outcome":"allow"},"failure":{"kind":"trap","message":"x"}}`,
	"evil-neither":   `{"decision":null,"failure":null}`,
	"evil-notjson":   `{"decision":`,
}

// evilLogs are logs frames an evil child sends before a valid answer.
var evilLogs = map[string][]byte{
	"evil-loglevel": appendLogs(nil, []host.Log{{Level: "fatal", Message: "x"}}),
	"evil-logscut":  appendLogs(nil, []host.Log{{Level: "info", Message: "x"}})[:4],
	"evil-logshuge": {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
}

func runEvil(mode string) int {
	w := os.Stdout
	send := func(typ byte, id uint64, payload []byte) {
		w.Write(appendFrame(nil, typ, id, payload))
	}
	if mode == "evil-hello" {
		send(frameHello, 0, []byte(`{"protocol":99}`))
		return 0
	}
	hello, _ := marshal(helloMsg{Protocol: protocolVersion})
	send(frameHello, 0, hello)
	r := bufio.NewReader(os.Stdin)
	_, _, payload, err := readFrame(r, func(byte) int { return maxLoadBytes })
	var lm loadMsg
	if err != nil || json.Unmarshal(payload, &lm) != nil {
		return 1
	}
	ready, _ := marshal(readyMsg{Name: mode, SHA256: strings.Repeat("0", 64), ABI: abi.Current, Limits: lm.Limits.WithDefaults()})
	send(frameReady, 0, ready)
	n := 0
	for {
		typ, id, _, err := readFrame(r, func(byte) int { return maxParentSent })
		if err != nil {
			return 0
		}
		if typ != frameDecide {
			continue
		}
		n++
		switch {
		case evilLogs[mode] != nil:
			send(frameLogs, id, evilLogs[mode])
			send(frameAnswer, id, []byte(`{"decision":{"outcome":"abstain"},"failure":null}`))
		case mode == "evil-fast": // not evil: BenchmarkCallFloor's child
			send(frameAnswer, id, []byte(`{"decision":{"outcome":"abstain"},"failure":null}`))
		case mode == "evil-frame":
			send('?', id, nil)
		case mode == "evil-huge" && n == 1:
			// Over the bound: the parent skips it and fails the call.
			big := make([]byte, maxAnswerBytes(sandbox.DefaultLimits())+1)
			send(frameAnswer, id, big)
		case mode == "evil-huge":
			send(frameAnswer, id, []byte(`{"decision":{"outcome":"abstain","reason":"after the skip"},"failure":null}`))
		case mode == "evil-short":
			// A header promising more than ever comes, then the end.
			var h [headerSize]byte
			binary.BigEndian.PutUint32(h[:4], 100)
			h[4] = frameAnswer
			binary.BigEndian.PutUint64(h[5:], id)
			w.Write(h[:])
			w.Write([]byte(`{"dec`))
			return 0
		default:
			send(frameAnswer, id, []byte(evilAnswers[mode]))
		}
	}
}

// TestEvilChild: whatever a child sends, the parent decodes it as it
// decodes any peer: a malformed or dishonest answer fails that call with
// kind trap (ErrProtocol) and the child is killed, never believed.
func TestEvilChild(t *testing.T) {
	// The outcome is the point, not the time: a deadline no loaded machine
	// misses.
	patient := sandbox.Limits{Timeout: 30 * time.Second}
	modes := slices.Collect(maps.Keys(evilAnswers))
	for m := range evilLogs {
		modes = append(modes, m)
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			p := startWorker(t, host.Options{Name: mode, Path: fixture(t, "good"), Limits: patient})
			pid := p.pid()
			r := p.Call(context.Background(), request("e1", "plain"))
			assert.Equal(t, host.KindTrap, host.KindOf(r.Err), "%v", r.Err)
			assert.ErrorIs(t, r.Err, ErrProtocol)
			assert.Equal(t, abi.Decision{}, r.Decision)
			eventually(t, "the evil child killed", func() bool { return !alive(pid) })
		})
	}
	t.Run("evil-frame", func(t *testing.T) {
		p := startWorker(t, host.Options{Name: "evil-frame", Path: fixture(t, "good"), Limits: patient})
		r := p.Call(context.Background(), request("e1", "plain"))
		assert.Equal(t, host.KindTrap, host.KindOf(r.Err), "%v", r.Err)
		assert.ErrorIs(t, r.Err, ErrCrashed)
		assert.Contains(t, r.Err.Error(), "unexpected frame")
	})
	t.Run("evil-short", func(t *testing.T) {
		p := startWorker(t, host.Options{Name: "evil-short", Path: fixture(t, "good"), Limits: patient})
		r := p.Call(context.Background(), request("e1", "plain"))
		assert.Equal(t, host.KindTrap, host.KindOf(r.Err), "%v", r.Err)
		assert.ErrorIs(t, r.Err, ErrCrashed)
	})
	t.Run("evil-huge", func(t *testing.T) {
		// Skipped by its header, without reading it into memory; the
		// stream goes on.
		p := startWorker(t, host.Options{Name: "evil-huge", Path: fixture(t, "good"), Limits: patient})
		r := p.Call(context.Background(), request("e1", "plain"))
		assert.Equal(t, host.KindOutputTooLarge, host.KindOf(r.Err), "%v", r.Err)
		r = p.Call(context.Background(), request("e2", "plain"))
		require.NoError(t, r.Err)
		assert.Equal(t, "after the skip", r.Decision.Reason)
	})
	t.Run("evil-hello", func(t *testing.T) {
		_, err := Load(context.Background(), Options{Plugin: host.Options{Name: "evil-hello", Path: fixture(t, "good"), CacheDir: testCache}})
		assert.Equal(t, host.KindLoad, host.KindOf(err), "%v", err)
		assert.ErrorIs(t, err, ErrCrashed)
		assert.Contains(t, err.Error(), "want protocol "+strconv.Itoa(protocolVersion))
	})
}

// TestFrames: frames round-trip, and an oversized one is skipped whole.
func TestFrames(t *testing.T) {
	var b []byte
	b = appendFrame(b, frameAnswer, 7, []byte(`{"a":1}`))
	b = appendFrame(b, frameAnswer, 8, bytes.Repeat([]byte("x"), 100))
	b = appendFrame(b, frameCancel, 9, nil)
	r := bufio.NewReader(bytes.NewReader(b))
	limit := func(byte) int { return 50 }
	typ, id, payload, err := readFrame(r, limit)
	require.NoError(t, err)
	assert.Equal(t, frameAnswer, typ)
	assert.Equal(t, uint64(7), id)
	assert.Equal(t, `{"a":1}`, string(payload))
	_, id, _, err = readFrame(r, limit)
	var tl *tooLargeError
	require.True(t, errors.As(err, &tl), "%v", err)
	assert.Equal(t, uint64(8), id)
	assert.Equal(t, 100, tl.size)
	typ, id, payload, err = readFrame(r, limit)
	require.NoError(t, err)
	assert.Equal(t, frameCancel, typ)
	assert.Equal(t, uint64(9), id)
	assert.Empty(t, payload)
	_, _, _, err = readFrame(r, limit)
	assert.ErrorIs(t, err, io.EOF)
	_, _, _, err = readFrame(bufio.NewReader(bytes.NewReader(b[:headerSize+3])), limit)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// TestLoadMessageCarriesEveryOption guards the wire against a field added
// to host.Options that the child would silently not get.
func TestLoadMessageCarriesEveryOption(t *testing.T) {
	carried := map[string]bool{"Name": true, "Path": true, "Wasm": true, "SHA256": true, "Config": true,
		"Limits": true, "CacheDir": true, "PoolSize": true,
		"Logger":  true, // stays in the parent, by design
		"Trusted": true} // the child always runs its guests on the goroutine that reads (serve.go)
	var fields []string
	b, _ := json.Marshal(host.Options{})
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for k := range m {
		fields = append(fields, k)
	}
	for _, f := range fields {
		assert.True(t, carried[f], "host.Options.%s is not carried to the child: add it to loadMsg", f)
	}
	assert.Len(t, fields, len(carried), "fields of host.Options: %v", fields)
}

// FuzzReadFrame feeds the parent's frame reader and answer decoder what a
// child might send: they return errors, never panic, and never accept a
// decision for an option not offered.
func FuzzReadFrame(f *testing.F) {
	for _, a := range evilAnswers {
		f.Add(appendFrame(nil, frameAnswer, 1, []byte(a)))
	}
	f.Add(appendFrame(appendFrame(nil, frameLogs, 1, appendLogs(nil, []host.Log{{Level: "info", Message: "m"}})),
		frameAnswer, 1, []byte(`{"decision":{"outcome":"allow"},"failure":null}`)))
	f.Add(appendFrame(nil, frameRetire, 0, []byte(`{"reason":"cpu"}`)))
	for _, l := range evilLogs {
		f.Add(appendFrame(nil, frameLogs, 1, l))
	}
	options := request("f", "").Options
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for {
			typ, _, payload, err := readFrame(r, func(byte) int { return 1 << 16 })
			var tl *tooLargeError
			if errors.As(err, &tl) {
				continue
			}
			if err != nil {
				return
			}
			if typ == frameLogs {
				logs, err := parseLogs(payload)
				for _, l := range logs {
					if logLevels[l.Level] == "" || !utf8.ValidString(l.Message) {
						t.Fatalf("accepted log %+v", l)
					}
				}
				if err == nil && !bytes.Equal(appendLogs(nil, logs), payload) && utf8.Valid(payload) {
					t.Fatalf("logs do not round-trip")
				}
				continue
			}
			if typ != frameAnswer {
				continue
			}
			a, err := decodeAnswerMsg(payload)
			if err != nil || a.Decision == nil {
				continue
			}
			if a.Decision.Validate(options) == nil {
				if a.Decision.Outcome == abi.OutcomeSelect {
					if _, ok := a.Decision.Option(options); !ok {
						t.Fatalf("accepted a select of %q, not offered", a.Decision.OptionID)
					}
				}
			}
		}
	})
}
