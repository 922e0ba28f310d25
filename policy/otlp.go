package policy

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/permhost/permhost/internal/otlp"
)

// otlpCloseWait bounds how long Close waits for the last decisions to
// reach the collector.
const otlpCloseWait = 5 * time.Second

// startOTLP starts exporting decisions to [log.otlp]'s collector: every
// entry the decision log is given is also given, converted, to the
// exporter's queue, which never waits (internal/otlp).
func (e *Engine) startOTLP() {
	o := e.cfg.OTLP
	if o.Endpoint == "" {
		return
	}
	res := map[string]string{"service.name": "permhost", "service.version": buildVersion()}
	if cwd, err := os.Getwd(); err == nil {
		res["permhost.project"] = cwd // unless the decision's session names its own
	}
	if host, err := os.Hostname(); err == nil {
		res["host.name"] = host
	}
	x := otlp.New(otlp.Options{URL: o.Endpoint, TracesURL: o.TracesEndpoint, Headers: o.Headers, Resource: res,
		Scope: "github.com/permhost/permhost/policy", ScopeVersion: res["service.version"], Logger: e.log})
	e.otlp = x
	prev := e.observe
	e.observe = func(entry LogEntry) {
		x.Emit(decisionRecord(entry))
		if prev != nil {
			prev(entry)
		}
	}
}

// closeOTLP sends what is queued, waiting at most otlpCloseWait.
func (e *Engine) closeOTLP(ctx context.Context) {
	if e.otlp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, otlpCloseWait)
	defer cancel()
	if err := e.otlp.Close(ctx); err != nil {
		e.log.Warn("OTLP export: decisions not sent at exit (the local decision log has them)", "err", err)
	}
}

// buildVersion is the module's version and VCS revision.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}

// decisionRecord is entry as an OTLP log record: a one-line body and the
// entry's fields as attributes, the agent in the resource (a proxy learns
// it only at initialize, and a leader serves several agents), and the
// decision's duration as a span (docs/config.md lists them).
func decisionRecord(en LogEntry) otlp.Record {
	attrs := make([]otlp.KeyValue, 0, 24)
	attrs = append(attrs,
		otlp.String("permhost.decision_id", en.DecisionID),
		otlp.String("permhost.via", en.Via),
		otlp.String("session.id", en.Session),
		otlp.String("permhost.outcome", en.Outcome),
		otlp.String("permhost.decided_by", en.DecidedBy),
		otlp.Int("permhost.latency_us", en.LatencyUs),
	)
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, otlp.String(k, v))
		}
	}
	add("permhost.strategy", en.Strategy)
	if en.Agent != nil {
		add("permhost.agent.name", en.Agent.Name)
		add("permhost.agent.version", en.Agent.Version)
	}
	add("permhost.tool_call.id", en.ToolCall.ID)
	add("permhost.tool_call.title", en.ToolCall.Title)
	add("permhost.tool_call.kind", en.ToolCall.Kind)
	add("permhost.tool_call.raw_input_sha256", en.ToolCall.RawInputSHA256)
	add("permhost.option_id", en.OptionID)
	add("permhost.option_kind", en.OptionKind)
	add("permhost.reason", en.Reason)
	add("permhost.fallback", en.Fallback)
	add("permhost.request", en.Request)
	if en.Mode != nil {
		add("permhost.mode.action", en.Mode.Action)
	}
	if en.Person != nil {
		add("permhost.person.answer", en.Person.Answer)
	}
	if en.Unasked {
		attrs = append(attrs, otlp.Bool("permhost.unasked", true))
	}
	if len(en.Plugins) > 0 {
		votes := make([]string, 0, len(en.Plugins))
		for _, p := range en.Plugins {
			v := p.Outcome
			switch {
			case p.Failure != nil:
				v = "failed"
			case p.Skipped != "":
				v = "skipped"
			}
			votes = append(votes, p.Name+"="+v)
		}
		attrs = append(attrs, otlp.Strings("permhost.plugins", votes))
	}
	sev := logspb.SeverityNumber_SEVERITY_NUMBER_INFO
	if en.Fallback != "" {
		sev = logspb.SeverityNumber_SEVERITY_NUMBER_WARN
	}
	body := fmt.Sprintf("%s %s by %s", en.Outcome, en.OptionKind, en.DecidedBy)
	if en.ToolCall.Title != "" {
		body += ": " + en.ToolCall.Title
	}
	res := make([]otlp.KeyValue, 0, 4)
	if en.Cwd != "" {
		res = append(res, otlp.String("permhost.project", en.Cwd))
	}
	if en.Agent != nil {
		for _, a := range [...][2]string{{"permhost.agent.name", en.Agent.Name}, {"permhost.agent.version", en.Agent.Version}, {"permhost.agent.profile", en.Agent.Profile}} {
			if a[1] != "" {
				res = append(res, otlp.String(a[0], a[1]))
			}
		}
	}
	span := &otlp.Span{Name: "permhost.decision", Start: en.Time, End: en.Time.Add(time.Duration(en.LatencyUs) * time.Microsecond),
		Error: en.Fallback != "", Attrs: attrs[:6:6]} // decision id ... latency: the span's own attributes
	if len(en.Plugins) > 0 {
		span.Attrs = append(span.Attrs, attrs[len(attrs)-1]) // permhost.plugins
	}
	return otlp.Record{Time: en.Time, EventName: "permhost.decision", Severity: sev, Body: body, Attrs: attrs, Resource: res, Span: span}
}
