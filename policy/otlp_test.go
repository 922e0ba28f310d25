package policy_test

import (
	"bytes"
	"context"
	"net"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/otlp/otlptest"
	"github.com/permhost/permhost/policy"
)

func otlpAttrs(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// With [log.otlp], each decision reaches a real OTLP/HTTP receiver as a
// log record carrying the local log entry's fields, under a resource
// naming permhost, its version, the project and the agent, and as a span
// of the decision's duration whose ids the log record carries.
func TestOTLPExportsDecisions(t *testing.T) {
	r := otlptest.Start(t)
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject,
		OTLP: config.OTLP{Endpoint: r.URL, TracesEndpoint: r.TracesURL}}
	s := newEngine(t, cfg, member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "rm -rf"}}))
	if _, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), &fakeClient{}); err != nil {
		t.Fatal(err)
	}
	// A second agent in another project (as a leader serves): its own resource.
	qwen := permissionRequest(t, claudeBash)
	qwen.Session.Agent, qwen.Session.Cwd = acp.Peer{Name: "qwen-code", Version: "0.24.4"}, "/home/dev/other"
	if _, err := s.engine.Handler().RequestPermission(context.Background(), qwen, &fakeClient{}); err != nil {
		t.Fatal(err)
	}
	entries := s.entries(t) // closes the engine, which sends what is queued
	if len(entries) != 2 {
		t.Fatalf("%d local log entries", len(entries))
	}
	local := entries[0]
	if bad := r.Bad(); len(bad) > 0 {
		t.Fatalf("not OTLP: %v", bad)
	}
	recs := map[string]*logspb.LogRecord{}            // agent name -> its record
	res := map[string]map[string]*commonpb.AnyValue{} // agent name -> its resource
	for _, req := range r.Requests() {
		for _, rl := range req.ResourceLogs {
			a := otlpAttrs(rl.Resource.Attributes)
			name := a["permhost.agent.name"].GetStringValue()
			res[name] = a
			for _, sl := range rl.ScopeLogs {
				for _, rec := range sl.LogRecords {
					if recs[name] != nil {
						t.Fatalf("two records under the resource of %q", name)
					}
					recs[name] = rec
				}
			}
		}
	}
	if len(recs) != 2 {
		t.Fatalf("%d records received, want 2 under their own resources: %v", len(recs), res)
	}
	for name, want := range map[string][3]string{
		"@zed-industries/claude-agent-acp": {"0.23.1", "claude-agent-acp", "/home/dev/project"},
		"qwen-code":                        {"0.24.4", "qwen-code", "/home/dev/other"},
	} {
		a := res[name]
		if a["service.name"].GetStringValue() != "permhost" || a["service.version"].GetStringValue() == "" || a["host.name"] == nil ||
			a["permhost.agent.version"].GetStringValue() != want[0] || a["permhost.agent.profile"].GetStringValue() != want[1] ||
			a["permhost.project"].GetStringValue() != want[2] {
			t.Errorf("resource of %s: %v", name, a)
		}
	}
	rec := recs["@zed-industries/claude-agent-acp"]
	a := otlpAttrs(rec.Attributes)
	want := map[string]string{
		"event.name":               "permhost.decision",
		"permhost.decision_id":     local["decisionId"].(string),
		"session.id":               "2a178532-7f3e-4eef-ad46-ab41b93044de",
		"permhost.outcome":         local["outcome"].(string),
		"permhost.option_id":       "reject",
		"permhost.decided_by":      "no-rm",
		"permhost.reason":          "rm -rf",
		"permhost.tool_call.id":    "toolu_fake_0001",
		"permhost.tool_call.title": "rm -rf build",
		"permhost.tool_call.kind":  "execute",
	}
	for k, v := range want {
		if got := a[k].GetStringValue(); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if votes := a["permhost.plugins"].GetArrayValue().GetValues(); len(votes) != 1 || votes[0].GetStringValue() != "no-rm=reject" {
		t.Errorf("permhost.plugins = %v", votes)
	}
	latency := int64(local["latencyUs"].(float64))
	if a["permhost.latency_us"].GetIntValue() != latency {
		t.Errorf("latency %v, local %v", a["permhost.latency_us"], local["latencyUs"])
	}

	// The span: under the same resource, with the record's ids, lasting
	// the decision's latency.
	var spans []*tracepb.Span
	var spanRes map[string]*commonpb.AnyValue
	for _, req := range r.Traces() {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					if bytes.Equal(sp.SpanId, rec.SpanId) {
						spanRes = otlpAttrs(rs.Resource.Attributes)
					}
					spans = append(spans, sp)
				}
			}
		}
	}
	if len(spans) != 2 || spanRes == nil {
		t.Fatalf("%d spans received, none with the record's span id %x", len(spans), rec.SpanId)
	}
	var sp *tracepb.Span
	for _, x := range spans {
		if bytes.Equal(x.SpanId, rec.SpanId) {
			sp = x
		}
	}
	sa := otlpAttrs(sp.Attributes)
	if !bytes.Equal(sp.TraceId, rec.TraceId) || len(sp.TraceId) != 16 || sp.Name != "permhost.decision" ||
		sp.StartTimeUnixNano != rec.TimeUnixNano || sp.EndTimeUnixNano-sp.StartTimeUnixNano != uint64(latency)*1000 ||
		sa["permhost.outcome"].GetStringValue() != local["outcome"] || sa["permhost.decided_by"].GetStringValue() != "no-rm" ||
		sa["permhost.decision_id"].GetStringValue() != local["decisionId"] || len(sa["permhost.plugins"].GetArrayValue().GetValues()) != 1 ||
		spanRes["permhost.agent.name"].GetStringValue() != "@zed-industries/claude-agent-acp" {
		t.Errorf("span %v under %v; record trace %x span %x", sp, spanRes, rec.TraceId, rec.SpanId)
	}
}

// An unreachable collector: the decision is made and the local log is
// complete.
func TestOTLPUnreachableCollector(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + l.Addr().String() + "/v1/logs"
	l.Close()
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, OTLP: config.OTLP{Endpoint: url}}
	s := newEngine(t, cfg, member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "rm -rf"}}))
	for range 3 {
		if _, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), &fakeClient{}); err != nil {
			t.Fatal(err)
		}
	}
	if entries := s.entries(t); len(entries) != 3 || entries[2]["decidedBy"] != "no-rm" {
		t.Fatalf("local log: %v", entries)
	}
}

// A collector that holds every request does not hold a decision: they are
// answered while the export waits, and sent once it answers.
func TestOTLPHeldCollector(t *testing.T) {
	r := otlptest.Start(t)
	r.Hold()
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, OTLP: config.OTLP{Endpoint: r.URL}}
	s := newEngine(t, cfg, member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "rm -rf"}}))
	if _, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), &fakeClient{}); err != nil {
		t.Fatal(err)
	}
	<-r.Arrived() // the first record's export is held
	for range 2 {
		if _, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), &fakeClient{}); err != nil {
			t.Fatal(err)
		}
	}
	r.Release()
	s.entries(t)
	n := 0
	for _, req := range r.Requests() {
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				n += len(sl.LogRecords)
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d records received, want 3", n)
	}
}

// BenchmarkDecisionOTLP: a decision through the proxy's handler with and
// without [log.otlp] (a receiver on loopback): the export is queued, not
// waited for.
func BenchmarkDecisionOTLP(b *testing.B) {
	t := &testing.T{}
	for _, on := range []bool{false, true} {
		name := "off"
		cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject}
		if on {
			name = "on"
			r := otlptest.Start(b)
			cfg.OTLP = config.OTLP{Endpoint: r.URL}
		}
		b.Run(name, func(b *testing.B) {
			e, err := policy.New(context.Background(), policy.Options{Config: cfg, Members: []host.Member{member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject}})},
				Log: policy.NewDecisionLog(&logBuffer{}, nil)})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close(context.Background())
			pr := permissionRequest(t, claudeBash)
			h := e.Handler()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				h.RequestPermission(context.Background(), pr, &fakeClient{})
			}
		})
	}
}
