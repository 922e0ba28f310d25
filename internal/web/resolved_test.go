package web

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/internal/leader"
)

// elsewhere is the cause permhost proxy --leader withdraws a request
// with when the editor's person answered first (policy's editorAnswered).
type elsewhere struct {
	by string
	at time.Time
}

func (e elsewhere) Error() string                          { return "answered by " + e.by }
func (e elsewhere) AnsweredElsewhere() (string, time.Time) { return e.by, e.at }

// resolvedLine reads the page's live stream until the line saying how
// request seq ended.
func (r *rig) resolvedLine(seq string) string {
	r.t.Helper()
	c := r.login()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.web.URL()+"/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") && strings.Contains(line, `data-seq="`+seq+`"`) && strings.Contains(line, `class="done"`) {
			return line
		}
	}
	r.t.Fatalf("no resolved line for #%s: %v", seq, sc.Err())
	return ""
}

// TestEditorAnswerShown: a request the editor's person answered first
// (proxy --leader withdraws it, naming the editor) is shown as answered
// by the editor at the editor's time, not as withdrawn.
func TestEditorAnswerShown(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	got := r.ask(ctx, question("Edit main.go"))
	r.waitReady(1)
	at := time.Now()
	cancel(elsewhere{leader.ByEditor, at})
	if a := recv(t, got); !errors.Is(a.err, leader.ErrWithdrawn) {
		t.Fatalf("the worker got %+v, %v", a.a, a.err)
	}
	line := r.resolvedLine("1")
	want := `answered by <span class="by">the editor</span> at <time>` + at.Local().Format("15:04:05") + `</time>`
	if !strings.Contains(line, want) {
		t.Fatalf("the page says %s\nwant %s", line, want)
	}
}

// TestResolvedSaysWho: each way a request ends reads as who answered or
// decided.
func TestResolvedSaysWho(t *testing.T) {
	deadline := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q := question("x")
	q.Deadline = deadline
	for _, tc := range []struct {
		name string
		rec  leader.Record
		want string
	}{
		{"editor", leader.Record{Outcome: leader.OutcomeWithdrawn, By: leader.ByEditor, Reason: "answered in the editor"}, `answered by <span class="by">the editor</span>`},
		{"builtin", leader.Record{Question: q, Outcome: leader.OutcomeWithdrawn, Ended: deadline, Reason: "withdrawn by the worker"}, `decided by <span class="by">the worker&#39;s builtin policy`},
		{"withdrawn", leader.Record{Outcome: leader.OutcomeWithdrawn, Reason: "the worker disconnected"}, `ended: <span class="by">the worker disconnected</span>`},
		{"page", leader.Record{Outcome: leader.OutcomeSelected, OptionID: "allow", DecidedBy: "person", By: "web:abc"}, `answered by <span class="by">web:abc</span>`},
		{"terminal", leader.Record{Outcome: leader.OutcomeSelected, OptionID: "allow", DecidedBy: "person"}, `answered by <span class="by">the leader&#39;s terminal</span>`},
		{"plugin", leader.Record{Outcome: leader.OutcomeSelected, OptionID: "allow", DecidedBy: "rules"}, `decided by <span class="by">the leader&#39;s plugin rules</span>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderResolved(tc.rec); !strings.Contains(got, tc.want) {
				t.Fatalf("%s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestEventsOpenAtOnce: the live stream starts with a comment, flushed,
// before any event or heartbeat, so that a page with nothing pending
// says "live" as soon as it connects.
func TestEventsOpenAtOnce(t *testing.T) {
	r := newRig(t, nil)
	c := r.login()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.web.URL()+"/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != ": connected\n" {
		t.Fatalf("the stream starts with %q, %v; want the connected comment before any heartbeat", line, err)
	}
}
