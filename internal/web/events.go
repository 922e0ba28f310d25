package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file streams the pending requests to a page as server-sent events:
// "add" carries a request's card, "remove" the number of one that left,
// "resolved" a line saying how one ended. A page that reconnects gets the
// whole state again.

const heartbeat = 15 * time.Second

func (s *Server) events(w http.ResponseWriter, r *http.Request, sess *session) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	s.streamMu.Lock()
	if s.streams >= maxStreams {
		s.streamMu.Unlock()
		http.Error(w, "too many open pages", http.StatusTooManyRequests)
		return
	}
	s.streams++
	s.streamMu.Unlock()
	defer func() {
		s.streamMu.Lock()
		s.streams--
		s.streamMu.Unlock()
	}()
	// A stream outlives the server's read timeout (which would cancel
	// the request) and any write timeout.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The headers go out now, not with the first event or heartbeat: the
	// page says "live" when its EventSource opens, which would otherwise
	// wait up to a heartbeat when nothing is pending.
	if _, err := w.Write([]byte(": connected\n\n")); err != nil {
		return
	}
	fl.Flush()

	shown := map[uint64]bool{}
	var lastResolved uint64
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		changed := s.opts.Leader.Changed()
		now := time.Now()
		live := map[uint64]bool{}
		var b strings.Builder
		for _, p := range s.opts.Leader.Queued() {
			if !p.Ready {
				continue
			}
			live[p.Seq] = true
			if !shown[p.Seq] {
				shown[p.Seq] = true
				event(&b, "add", renderPending(p, now))
			}
		}
		for seq := range shown {
			if !live[seq] {
				delete(shown, seq)
				event(&b, "remove", strconv.FormatUint(seq, 10))
			}
		}
		done, resolvedChanged := s.resolved.since(lastResolved)
		for _, e := range done {
			lastResolved = e.n
			event(&b, "resolved", renderResolved(e.rec))
		}
		if b.Len() > 0 {
			if _, err := w.Write([]byte(b.String())); err != nil {
				return
			}
			fl.Flush()
		}
		select {
		case <-changed:
		case <-resolvedChanged:
		case <-tick.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
			fl.Flush()
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		}
	}
}

// event appends one server-sent event; data of several lines is sent as
// several data lines.
func event(b *strings.Builder, name, data string) {
	fmt.Fprintf(b, "event: %s\n", name)
	for _, line := range strings.Split(data, "\n") {
		fmt.Fprintf(b, "data: %s\n", line)
	}
	b.WriteString("\n")
}
