package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/permhost/permhost/internal/safetext"
)

// This file pushes a short notice when a request starts waiting for a
// person ([approve] webhook): an ntfy-compatible POST whose body is the
// notice and whose Title and Click headers name permhost and the page.
// It says the tool call's title only, unless Details is set; it never
// carries a login link. A failure is logged and never holds up anything.

// Webhook is where notices go.
type Webhook struct {
	URL string
	// Details adds the agent and the project to the notice.
	Details bool
	// Client defaults to one with a 10-second timeout.
	Client *http.Client
}

const webhookTimeout = 10 * time.Second

// notify posts one notice in the background.
func (h *Webhook) notify(log *slog.Logger, page, title, agent, project string) {
	body := "permhost: a request waits for you: " + safetext.Terminal(title)
	if h.Details {
		body += fmt.Sprintf(" (agent %s, project %s)", safetext.Terminal(agent), safetext.Terminal(project))
	}
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: webhookTimeout}
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), webhookTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, strings.NewReader(body))
		if err != nil {
			log.Warn("web: webhook", "err", err)
			return
		}
		req.Header.Set("Title", "permhost: permission request")
		req.Header.Set("Click", page)
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
		resp, err := c.Do(req)
		if err != nil {
			log.Warn("web: webhook failed", "err", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			log.Warn("web: webhook refused", "status", resp.StatusCode)
		}
	}()
}

// watchWebhook notifies once for every request that becomes ready, until
// stop is closed.
func (s *Server) watchWebhook(stop <-chan struct{}) {
	seen := map[uint64]bool{}
	for {
		changed := s.opts.Leader.Changed()
		live := map[uint64]bool{}
		for _, p := range s.opts.Leader.Queued() {
			if !p.Ready {
				continue
			}
			live[p.Seq] = true
			if !seen[p.Seq] {
				s.opts.Webhook.notify(s.log, s.base, p.Request.ToolCall.Title, agentOf(p), projectOf(p))
			}
		}
		seen = live
		select {
		case <-changed:
		case <-stop:
			return
		}
	}
}
