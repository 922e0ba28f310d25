package policy_test

import (
	"context"
	"net"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/permhost/permhost/abi"
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
// naming permhost, its version and the project.
func TestOTLPExportsDecisions(t *testing.T) {
	r := otlptest.Start(t)
	cfg := &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject, OTLP: config.OTLP{Endpoint: r.URL}}
	s := newEngine(t, cfg, member("no-rm", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "rm -rf"}}))
	if _, err := s.engine.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), &fakeClient{}); err != nil {
		t.Fatal(err)
	}
	entries := s.entries(t) // closes the engine, which sends what is queued
	if len(entries) != 1 {
		t.Fatalf("%d local log entries", len(entries))
	}
	local := entries[0]
	if bad := r.Bad(); len(bad) > 0 {
		t.Fatalf("not OTLP: %v", bad)
	}
	var recs []*logspb.LogRecord
	var res map[string]*commonpb.AnyValue
	for _, req := range r.Requests() {
		for _, rl := range req.ResourceLogs {
			res = otlpAttrs(rl.Resource.Attributes)
			for _, sl := range rl.ScopeLogs {
				recs = append(recs, sl.LogRecords...)
			}
		}
	}
	if len(recs) != 1 {
		t.Fatalf("%d records received, want 1", len(recs))
	}
	if res["service.name"].GetStringValue() != "permhost" || res["service.version"].GetStringValue() == "" || res["permhost.project"].GetStringValue() == "" {
		t.Fatalf("resource %v", res)
	}
	a := otlpAttrs(recs[0].Attributes)
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
	if a["permhost.latency_us"].GetIntValue() != int64(local["latencyUs"].(float64)) {
		t.Errorf("latency %v, local %v", a["permhost.latency_us"], local["latencyUs"])
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
