package worker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type records struct {
	mu  sync.Mutex
	all []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.all = append(r.all, rec)
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func attr(rec slog.Record, key string) string {
	var v string
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// TestStderrRelay: the child's slog records reach the parent's log at
// their level (at most warn), with the plugin named; the runtime's crash
// output is kept for the death message; over-long lines are cut.
func TestStderrRelay(t *testing.T) {
	h := &records{}
	s := newStderrRelay(slog.New(h), "plugin", "p")
	in := strings.Join([]string{
		`{"time":"2026-01-01T00:00:00Z","level":"WARN","msg":"compile cache not sealed","plugin":"p","err":"disk full"}`,
		`{"time":"2026-01-01T00:00:00Z","level":"ERROR","msg":"raised","n":3}`,
		`runtime: out of memory: cannot allocate 1099511627776-byte block (3768320 in use)`,
		`fatal error: out of memory`,
		``,
		`goroutine 1 [running]:`,
		strings.Repeat("x", 2*maxStderrLine),
		`last`,
	}, "\n") + "\n"
	s.run(strings.NewReader(in))
	recs := h.all
	if assert.Len(t, recs, 7) {
		assert.Equal(t, slog.LevelWarn, recs[0].Level)
		assert.Equal(t, "compile cache not sealed", recs[0].Message)
		assert.Equal(t, "disk full", attr(recs[0], "err"))
		assert.Equal(t, "p", attr(recs[0], "plugin"))
		assert.Equal(t, slog.LevelWarn, recs[1].Level, "capped")
		assert.Equal(t, "3", attr(recs[1], "n"))
		assert.Equal(t, "plugin worker stderr", recs[2].Message)
		assert.Equal(t, "runtime: out of memory: cannot allocate 1099511627776-byte block (3768320 in use)", attr(recs[2], "line"))
		assert.Less(t, len(attr(recs[5], "line")), maxStderrLine+20, "cut")
		assert.True(t, strings.HasSuffix(attr(recs[5], "line"), "…(cut)"))
		assert.Equal(t, "last", attr(recs[6], "line"))
	}
	assert.Equal(t, "runtime: out of memory: cannot allocate 1099511627776-byte block (3768320 in use)", s.last())
	assert.True(t, s.outOfMemory())
}

// TestStderrRateLimit: a flooding child is cut to the burst, then the
// rate; what is dropped is counted in the log.
func TestStderrRateLimit(t *testing.T) {
	h := &records{}
	s := newStderrRelay(slog.New(h), "plugin", "p")
	now := time.Unix(0, 0)
	s.now = func() time.Time { return now }
	var in bytes.Buffer
	for range 1000 {
		in.WriteString("flood\n")
	}
	s.run(&in)
	assert.Len(t, h.all, stderrBurst+1)
	assert.Equal(t, "900", attr(h.all[stderrBurst], "lines"))

	h.all = nil
	now = now.Add(time.Second) // 10 lines' worth
	s.run(strings.NewReader(strings.Repeat("again\n", 20)))
	assert.Len(t, h.all, stderrRate+1)
	assert.Equal(t, "10", attr(h.all[stderrRate], "lines"))
	assert.False(t, s.outOfMemory())
	assert.Equal(t, "again", s.last())
}
