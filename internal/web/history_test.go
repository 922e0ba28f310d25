package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/permhost/permhost/internal/grants"
)

// writeLog writes a decision log of n entries over the last hours.
func writeLog(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	var b strings.Builder
	now := time.Now().Truncate(time.Hour)
	kinds := []struct{ kind, by, who string }{
		{"allow_once", "person", "web:aaa111 at leader pid 1"},
		{"reject_once", "no-rm", ""},
		{"allow_once", "builtin", ""},
		{"reject_once", "person", "terminal"},
	}
	projects := []string{"/home/u/alpha", "/home/u/beta"}
	for i := range n {
		k := kinds[i%len(kinds)]
		e := map[string]any{"time": now.Add(-time.Duration(i%12) * time.Hour).Add(time.Duration(i) * time.Second), "via": "leader",
			"agent": map[string]string{"name": []string{"claude-agent-acp", "codex-acp"}[i%2]}, "session": "s",
			"toolCall": map[string]string{"title": fmt.Sprintf("call %d <script>", i)}, "outcome": "selected",
			"optionId": k.kind, "optionKind": k.kind, "decidedBy": k.by,
			// Half in each project; each reason names the other one,
			// which the project filter must not read.
			"cwd": projects[(i/2)%2], "reason": "not like " + projects[1-(i/2)%2]}
		if k.who != "" {
			e["person"] = map[string]string{"who": k.who}
		}
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

func TestHistoryFilters(t *testing.T) {
	path := writeLog(t, 40)
	r := newRig(t, func(o *Options) { o.LogPath = path })
	c := r.login()
	tests := []struct {
		query string
		rows  int
	}{
		{"", 40},
		{"?agent=codex", 20},
		{"?outcome=rejected", 20},
		{"?by=web:aaa111", 10},
		{"?outcome=allowed&agent=claude", 20},
		{"?by=nobody", 0},
		{"?project=alpha", 20},
		{"?project=/home/u/beta", 20},
		{"?project=beta&agent=claude", 10},
		{"?project=gamma", 0},
	}
	for _, tt := range tests {
		body := get(t, c, r.web.URL()+"/history"+tt.query)
		if got := strings.Count(body, "<tr><td>"); got != tt.rows {
			t.Errorf("history%s: %d rows, want %d", tt.query, got, tt.rows)
		}
		if strings.Contains(body, "<script>") {
			t.Errorf("history%s: a title's markup reached the page unescaped", tt.query)
		}
	}
	if body := get(t, c, r.web.URL()+"/history"); !strings.Contains(body, `<svg class="chart"`) || !strings.Contains(body, `class="bar o-rejected"`) {
		t.Fatalf("no chart of rejected decisions in the history")
	}
	// The chart counts the projects it shows.
	if body := get(t, c, r.web.URL()+"/history?project=alpha"); !strings.Contains(body, "projects: /home/u/alpha 20</title>") {
		t.Fatalf("the chart of project alpha does not say so: %s", body[:min(len(body), 600)])
	}
	if body := get(t, c, r.web.URL()+"/history"); !strings.Contains(body, "projects: /home/u/alpha 20, /home/u/beta 20</title>") {
		t.Fatalf("the chart does not count the projects: %s", body[:min(len(body), 600)])
	}
}

// memGrants is a grant store in memory.
type memGrants struct{ list []grants.Grant }

func (m *memGrants) List() ([]grants.Grant, error) { return m.list, nil }
func (m *memGrants) Revoke(id string) (grants.Grant, error) {
	for i, g := range m.list {
		if g.ID == id {
			m.list = append(m.list[:i], m.list[i+1:]...)
			return g, nil
		}
	}
	return grants.Grant{}, fmt.Errorf("no grant %s", id)
}

func TestGrantsListedAndRevoked(t *testing.T) {
	store := &memGrants{list: []grants.Grant{
		{ID: "g1", Scope: "project", Kind: "command", Project: "/p", Source: "make test", Name: "Always allow make test"},
		{ID: "g2", Scope: "project", Kind: "command", Project: "/p", Source: "go vet", Name: "Always allow go vet"},
	}}
	r := newRig(t, func(o *Options) { o.Grants = store })
	c := r.login()
	if body := get(t, c, r.web.URL()+"/grants"); !strings.Contains(body, `data-id="g1"`) || !strings.Contains(body, `data-id="g2"`) {
		t.Fatalf("grants page: %s", body)
	}
	tok := r.csrfOf(c)
	if code, _ := r.post(c, "/api/revoke", `{"id":"g1"}`, nil); code != http.StatusForbidden {
		t.Fatalf("revoke without CSRF: %d, want 403", code)
	}
	if code, body := r.post(c, "/api/revoke", `{"id":"g1"}`, map[string]string{csrfHeader: tok}); code != http.StatusOK {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if body := get(t, c, r.web.URL()+"/grants"); strings.Contains(body, `data-id="g1"`) || !strings.Contains(body, `data-id="g2"`) {
		t.Fatalf("after revoking g1: %s", body)
	}
}

func TestBrowserHistoryChart(t *testing.T) {
	path := writeLog(t, 120)
	r := newRig(t, func(o *Options) { o.LogPath = path })
	ctx := browser(t)
	r.open(ctx)
	do(t, ctx, chromedp.Click(css(`#tab-history`)), chromedp.WaitVisible(css(`svg.chart rect.bar`)), chromedp.WaitVisible(css(`table.history`)))
	screenshot(t, ctx, "history.png")
	// Filtering redraws the table and the chart.
	do(t, ctx, chromedp.SetValue(css(`#filters select[name="outcome"]`), "rejected"), chromedp.Click(css(`#filters button`)))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#history .rows") && document.querySelector("#history .rows").textContent.startsWith("60 ")`)); err != nil {
		t.Fatal(err)
	}
}
