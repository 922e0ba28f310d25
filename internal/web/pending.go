package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/leader"
	"github.com/permhost/permhost/internal/safetext"
)

// This file renders one pending request as the page shows it. Every
// string a peer or a plugin wrote goes through safetext.HTML; the options
// are named by their index among the options shown, so that the page can
// only ever send back one of them.

// esc is the one renderer of untrusted text on the page.
func esc(s string) string { return safetext.HTML(s) }

// agentOf names the request's agent.
func agentOf(p leader.Prompt) string {
	if p.Worker.Agent != "" {
		return p.Worker.Agent
	}
	if a := p.Request.Session.Agent; a != nil {
		return strings.TrimSpace(a.Name + " " + a.Version)
	}
	return "unknown agent"
}

// projectOf is the request's working directory.
func projectOf(p leader.Prompt) string {
	if p.Worker.Cwd != "" {
		return p.Worker.Cwd
	}
	return p.Request.Session.Cwd
}

// riskOf is the explainers' risk: the first level given, with its words.
func riskOf(p leader.Prompt) (level, text string) {
	for _, x := range p.Explanations {
		if x.RiskLevel != "" || x.Risk != "" {
			return x.RiskLevel, x.Risk
		}
	}
	return "", ""
}

// scopeOf says what choosing o grants beyond this call.
func scopeOf(o abi.Option) string {
	if !o.Durable {
		return "this call only"
	}
	if g := o.Grants; g != nil {
		s := "scope " + g.Scope
		if g.Rule != "" {
			s += ": " + g.Rule
		}
		if g.Mode != "" {
			s += ", mode " + g.Mode
		}
		return s
	}
	return "durable: later calls too"
}

// renderPending is the request's card, on one line (it is sent as one
// server-sent event).
func renderPending(p leader.Prompt, now time.Time) string {
	var b strings.Builder
	title := p.Request.ToolCall.Title
	if title == "" {
		title = "(untitled tool call)"
	}
	fmt.Fprintf(&b, `<article class="req" id="req-%d" data-seq="%d"`, p.Seq, p.Seq)
	if !p.Deadline.IsZero() {
		fmt.Fprintf(&b, ` data-left-ms="%d"`, p.Deadline.Sub(now).Milliseconds())
	}
	b.WriteString(`>`)
	fmt.Fprintf(&b, `<h3><span class="seq">#%d</span> <span class="title">%s</span></h3>`, p.Seq, esc(title))
	fmt.Fprintf(&b, `<p class="meta"><span class="agent">%s</span> · <span class="project">%s</span> · %s`,
		esc(agentOf(p)), esc(projectOf(p)), esc(p.Worker.String()))
	if k := p.Request.ToolCall.Kind; k != "" {
		fmt.Fprintf(&b, ` · kind <span class="kind">%s</span>`, esc(k))
	}
	b.WriteString(`</p>`)
	if level, text := riskOf(p); level != "" || text != "" {
		fmt.Fprintf(&b, `<p class="risk risk-%s">risk: <b>%s</b> %s</p>`, classOf(level), esc(level), esc(text))
	}
	if sh := p.Request.Shell; sh != nil && sh.Source != "" {
		fmt.Fprintf(&b, `<pre class="command">%s</pre>`, esc(sh.Source))
	}
	if len(p.Request.Paths) > 0 {
		b.WriteString(`<ul class="paths">`)
		for _, path := range p.Request.Paths {
			out := ""
			if !path.InsideCwd {
				out = ` <b>outside the project</b>`
			}
			fmt.Fprintf(&b, `<li>%s %s%s</li>`, esc(path.Access), esc(path.Path), out)
		}
		b.WriteString(`</ul>`)
	}
	if len(p.Explanations) > 0 {
		b.WriteString(`<ul class="expl">`)
		for _, x := range p.Explanations {
			fmt.Fprintf(&b, `<li><b>%s</b>: %s`, esc(x.Plugin), esc(x.Summary))
			if x.RiskLevel != "" || x.Risk != "" {
				fmt.Fprintf(&b, ` — risk %s %s`, esc(x.RiskLevel), esc(x.Risk))
			}
			if x.Reason != "" {
				fmt.Fprintf(&b, ` — %s`, esc(x.Reason))
			}
			b.WriteString(`</li>`)
		}
		b.WriteString(`</ul>`)
	}
	if p.Reason != "" {
		fmt.Fprintf(&b, `<p class="why">asked because: %s</p>`, esc(p.Reason))
	}
	if !p.Deadline.IsZero() {
		b.WriteString(`<p class="countdown"></p>`)
	}
	b.WriteString(`<label class="said-label">reason for the agent (optional) <input class="said" type="text" maxlength="1000"></label><div class="options">`)
	for i, o := range p.Options {
		cls := "other"
		switch {
		case strings.HasPrefix(o.Kind, "allow"):
			cls = "allow"
		case strings.HasPrefix(o.Kind, "reject"):
			cls = "reject"
		}
		fmt.Fprintf(&b, `<button type="button" class="opt %s" data-index="%d" data-kind="%s">%s <small>%s · %s</small></button>`,
			cls, i, esc(o.Kind), esc(o.Name), esc(o.Kind), esc(scopeOf(o)))
	}
	b.WriteString(`</div><p class="status"></p></article>`)
	return b.String()
}

// classOf keeps a CSS class to letters.
func classOf(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "unknown"
	}
	return b.String()
}
