package web

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/permhost/permhost/internal/leader"
)

// This file remembers how the latest requests ended, so that every page
// says who answered and when: a person here or elsewhere, a plugin of the
// leader's, or the worker's own policy at its deadline.

const keepResolved = 200

type ended struct {
	n   uint64 // order of arrival here, from 1
	rec leader.Record
}

type resolved struct {
	mu      sync.Mutex
	n       uint64
	list    []ended // oldest first, at most keepResolved
	changed chan struct{}
}

func newResolved() *resolved { return &resolved{changed: make(chan struct{})} }

func (r *resolved) add(rec leader.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.list = append(r.list, ended{n: r.n, rec: rec})
	if len(r.list) > keepResolved {
		r.list = r.list[len(r.list)-keepResolved:]
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// since returns the entries after n, and the channel closed at the next.
func (r *resolved) since(n uint64) ([]ended, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ended
	for _, e := range r.list {
		if e.n > n {
			out = append(out, e)
		}
	}
	return out, r.changed
}

// who says who ended the request and how, for a person: "answered by" a
// person (a page, the leader's terminal, the editor of a proxy --leader),
// "decided by" a policy (the leader's plugin, the worker's builtin at its
// deadline).
func who(rec leader.Record) (verb, name string) {
	q := rec.Question
	switch {
	case rec.Outcome == leader.OutcomeWithdrawn && rec.By == leader.ByEditor:
		return "answered by", "the editor"
	case rec.Outcome == leader.OutcomeWithdrawn && !q.Deadline.IsZero() && !rec.Ended.Before(q.Deadline.Add(-50*time.Millisecond)):
		return "decided by", "the worker's builtin policy (nobody answered before the deadline)"
	case rec.Outcome == leader.OutcomeWithdrawn:
		return "ended:", rec.Reason
	case rec.Outcome == leader.OutcomeUndecided:
		return "left to", "the worker's own policy (" + rec.Reason + ")"
	case rec.By != "":
		return "answered by", rec.By
	case rec.DecidedBy == "person":
		return "answered by", "the leader's terminal"
	default:
		return "decided by", "the leader's plugin " + rec.DecidedBy
	}
}

// renderResolved is one line of the answered list.
func renderResolved(rec leader.Record) string {
	title := rec.Question.Request.ToolCall.Title
	what := rec.Outcome
	for _, o := range rec.Shown {
		if rec.Outcome == leader.OutcomeSelected && o.OptionID == rec.OptionID {
			what = o.Name + " (" + o.Kind + ")"
		}
	}
	verb, by := who(rec)
	var b strings.Builder
	fmt.Fprintf(&b, `<li class="done" data-seq="%d" data-outcome="%s"><span class="seq">#%d</span> <span class="title">%s</span>: <span class="what">%s</span> — %s <span class="by">%s</span> at <time>%s</time>`,
		rec.Seq, classOf(rec.Outcome), rec.Seq, esc(title), esc(what), verb, esc(by), rec.Ended.Local().Format("15:04:05"))
	if rec.Said != "" {
		fmt.Fprintf(&b, ` <q class="said">%s</q>`, esc(rec.Said))
	}
	b.WriteString(`</li>`)
	return b.String()
}
