package web

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// This file is the history: the decision log (JSON lines) as a table of
// the latest decisions, filtered by agent, project, outcome and who
// decided, above a chart of decisions per hour (chart.go).

const (
	// maxHistoryRows bounds the table; the chart counts every match.
	maxHistoryRows = 500
	// maxLogRead bounds how much of the log one request reads: its tail.
	maxLogRead = 32 << 20
)

// logLine is what the history reads of one decision-log entry; the rest
// is left alone.
type logLine struct {
	Time    time.Time `json:"time"`
	Via     string    `json:"via"`
	Session string    `json:"session"`
	Agent   *struct {
		Name string `json:"name"`
	} `json:"agent"`
	ToolCall struct {
		Title string `json:"title"`
		Kind  string `json:"kind"`
	} `json:"toolCall"`
	Outcome    string `json:"outcome"`
	OptionID   string `json:"optionId"`
	OptionKind string `json:"optionKind"`
	DecidedBy  string `json:"decidedBy"`
	Reason     string `json:"reason"`
	Person     *struct {
		Who string `json:"who"`
	} `json:"person"`
	Cwd string `json:"cwd"`
}

// verdict sorts an entry as allowed, rejected, cancelled or the log's own
// outcome.
func (l logLine) verdict() string {
	switch {
	case l.Outcome == "selected" && strings.HasPrefix(l.OptionKind, "allow"):
		return "allowed"
	case l.Outcome == "selected" && strings.HasPrefix(l.OptionKind, "reject"):
		return "rejected"
	case l.Outcome == "":
		return "unknown"
	}
	return l.Outcome
}

// decider is who decided, with the person's place when known.
func (l logLine) decider() string {
	if l.Person != nil && l.Person.Who != "" && l.DecidedBy == "person" {
		return "person (" + l.Person.Who + ")"
	}
	return l.DecidedBy
}

func (l logLine) agent() string {
	if l.Agent != nil {
		return l.Agent.Name
	}
	return ""
}

type filter struct{ agent, project, outcome, by string }

func (f filter) keep(l logLine) bool {
	has := func(s, sub string) bool {
		return sub == "" || strings.Contains(strings.ToLower(s), strings.ToLower(sub))
	}
	return has(l.agent(), f.agent) && has(l.Cwd, f.project) &&
		(f.outcome == "" || l.verdict() == f.outcome) && has(l.decider(), f.by)
}

// readLog returns the entries of the log's tail that f keeps, oldest
// first; lines that do not read are skipped.
func readLog(path string, f filter) ([]logLine, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err == nil && fi.Size() > maxLogRead {
		fh.Seek(fi.Size()-maxLogRead, io.SeekStart)
	}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var out []logLine
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Time.IsZero() {
			continue
		}
		if f.keep(l) {
			out = append(out, l)
		}
	}
	return out, nil
}

func (s *Server) history(w http.ResponseWriter, r *http.Request, _ *session) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if s.opts.LogPath == "" {
		fmt.Fprint(w, `<p class="empty">No decision log is configured (log_path).</p>`)
		return
	}
	q := r.URL.Query()
	f := filter{agent: q.Get("agent"), project: q.Get("project"), outcome: q.Get("outcome"), by: q.Get("by")}
	lines, err := readLog(s.opts.LogPath, f)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprint(w, `<p class="empty">The decision log is empty.</p>`)
		return
	}
	if err != nil {
		s.log.Warn("web: reading the decision log", "err", err)
		fmt.Fprint(w, `<p class="empty">The decision log cannot be read.</p>`)
		return
	}
	var b strings.Builder
	b.WriteString(chart(lines))
	fmt.Fprintf(&b, `<table class="history"><thead><tr><th>time</th><th>agent</th><th>project</th><th>tool call</th><th>outcome</th><th>option</th><th>decided by</th><th>reason</th></tr></thead><tbody>`)
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-maxHistoryRows; i-- {
		l := lines[i]
		fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class="o-%s">%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`,
			l.Time.Local().Format("2006-01-02 15:04:05"), esc(l.agent()), esc(l.Cwd), esc(l.ToolCall.Title), classOf(l.verdict()), esc(l.verdict()),
			esc(l.OptionID), esc(l.decider()), esc(l.Reason))
	}
	b.WriteString(`</tbody></table>`)
	fmt.Fprintf(&b, `<p class="rows">%d decisions match</p>`, len(lines))
	w.Write([]byte(b.String()))
}
