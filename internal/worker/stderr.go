package worker

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/permhost/permhost/internal/jsontext"
)

// The child's stderr carries its diagnostics, one slog JSON record a line,
// and, when it crashes, the Go runtime's last words. The parent relays each
// line to its own logger, bounded: a line is cut at maxStderrLine bytes, and
// a token bucket (stderrBurst lines, stderrRate a second) drops what a
// flooding child writes beyond, counting it. The last lines are kept for
// the crash message.
const (
	maxStderrLine = 4 << 10
	stderrBurst   = 100
	stderrRate    = 10 // lines per second
	tailLines     = 8
)

type stderrRelay struct {
	log   *slog.Logger
	attrs []any // plugin, pid
	now   func() time.Time

	mu      sync.Mutex
	tail    []string
	fatal   string // the runtime's "fatal error: ..." or "panic: ..." line
	tokens  float64
	lastAt  time.Time
	dropped int
}

func newStderrRelay(log *slog.Logger, attrs ...any) *stderrRelay {
	return &stderrRelay{log: log, attrs: attrs, now: time.Now, tokens: stderrBurst}
}

// run relays r's lines until it ends.
func (s *stderrRelay) run(r io.Reader) {
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.line(string(line) + " …(cut)")
			// Skip the rest of the over-long line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				break
			}
			continue
		}
		if l := strings.TrimRight(string(line), "\r\n"); strings.TrimSpace(l) != "" {
			s.line(l)
		}
		if err != nil {
			break
		}
	}
	s.mu.Lock()
	dropped := s.dropped
	s.dropped = 0
	s.mu.Unlock()
	if dropped > 0 {
		s.log.Warn("plugin worker stderr: lines dropped at the rate limit", append(s.attrs, "lines", dropped)...)
	}
}

func (s *stderrRelay) line(l string) {
	l = strings.ToValidUTF8(l, "\uFFFD")
	s.mu.Lock()
	if len(s.tail) == tailLines {
		s.tail = append(s.tail[:0], s.tail[1:]...)
	}
	s.tail = append(s.tail, l)
	if s.fatal == "" && (strings.HasPrefix(l, "fatal error: ") || strings.HasPrefix(l, "panic: ") ||
		strings.HasPrefix(l, "runtime: ") || strings.HasPrefix(l, "SIG")) {
		s.fatal = l
	}
	now := s.now()
	if !s.lastAt.IsZero() {
		s.tokens = min(stderrBurst, s.tokens+now.Sub(s.lastAt).Seconds()*stderrRate)
	}
	s.lastAt = now
	if s.tokens < 1 {
		s.dropped++
		s.mu.Unlock()
		return
	}
	s.tokens--
	dropped := s.dropped
	s.dropped = 0
	s.mu.Unlock()
	attrs := s.attrs
	if dropped > 0 {
		attrs = append(attrs[:len(attrs):len(attrs)], "droppedBefore", dropped)
	}
	if level, msg, rec, ok := parseRecord(l); ok {
		s.log.Log(context.Background(), level, msg, append(append(attrs[:len(attrs):len(attrs)], rec...), "from", "plugin worker")...)
		return
	}
	s.log.Warn("plugin worker stderr", append(attrs[:len(attrs):len(attrs)], "line", l)...)
}

// parseRecord reads a slog JSON record of the child. Its level is capped
// at warn: the child is not trusted to raise errors in the parent's log.
func parseRecord(l string) (slog.Level, string, []any, bool) {
	ms, err := jsontext.Object([]byte(l))
	if err != nil {
		return 0, "", nil, false
	}
	var (
		level slog.Level
		msg   string
		attrs []any
		seen  int
	)
	for _, m := range ms {
		switch m.Key {
		case slog.TimeKey, "plugin", "pid": // the parent's own say which
		case slog.LevelKey:
			s, err := jsontext.String(m.Value)
			if err != nil || level.UnmarshalText([]byte(s)) != nil {
				return 0, "", nil, false
			}
			seen++
		case slog.MessageKey:
			s, err := jsontext.String(m.Value)
			if err != nil {
				return 0, "", nil, false
			}
			msg = s
			seen++
		default:
			if s, err := jsontext.String(m.Value); err == nil {
				attrs = append(attrs, m.Key, s)
			} else {
				attrs = append(attrs, m.Key, string(m.Value))
			}
		}
	}
	if seen != 2 {
		return 0, "", nil, false
	}
	return min(level, slog.LevelWarn), msg, attrs, true
}

// last returns the crash line, or the last line, of what was read.
func (s *stderrRelay) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal != "" {
		return s.fatal
	}
	for i := len(s.tail) - 1; i >= 0; i-- {
		if _, _, _, ok := parseRecord(s.tail[i]); !ok && strings.TrimSpace(s.tail[i]) != "" {
			return s.tail[i]
		}
	}
	return ""
}

// outOfMemory reports whether the child said it ran out of memory (or,
// in a -race build, of the address space its shadow memory needs).
func (s *stderrRelay) outOfMemory() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []string{"out of memory", "cannot allocate memory", "address space collisions"} {
		if strings.Contains(s.fatal, m) {
			return true
		}
	}
	for _, l := range s.tail {
		if strings.Contains(l, "out of memory") {
			if _, _, _, ok := parseRecord(l); !ok {
				return true
			}
		}
	}
	return false
}
