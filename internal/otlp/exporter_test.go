package otlp_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/permhost/permhost/internal/otlp"
	"github.com/permhost/permhost/internal/otlp/otlptest"
)

func attrs(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

func received(r *otlptest.Receiver) (res map[string]*commonpb.AnyValue, recs []*logspb.LogRecord) {
	for _, req := range r.Requests() {
		for _, rl := range req.ResourceLogs {
			res = attrs(rl.Resource.Attributes)
			for _, sl := range rl.ScopeLogs {
				recs = append(recs, sl.LogRecords...)
			}
		}
	}
	return res, recs
}

// Records reach a real OTLP/HTTP receiver, decoded as the service's
// request type, in order, with the resource, body and attributes given;
// a batch is sent when full, the rest on Flush.
func TestExportReceived(t *testing.T) {
	r := otlptest.Start(t)
	x := otlp.New(otlp.Options{URL: r.URL, BatchSize: 2, Interval: time.Hour,
		Resource: map[string]string{"service.name": "permhost", "service.version": "v1.2.3"}, Scope: "permhost"})
	defer x.Close(context.Background())
	at := time.Unix(1700000000, 5)
	for i := range 3 {
		x.Emit(otlp.Record{Time: at, EventName: "permhost.decision", Severity: logspb.SeverityNumber_SEVERITY_NUMBER_INFO,
			Body: fmt.Sprint("decision ", i), Attrs: []otlp.KeyValue{otlp.Int("n", int64(i)), otlp.Bool("ok", true), otlp.Strings("plugins", []string{"a", "b"})}})
	}
	<-r.Arrived() // the full batch of 2, before any flush
	if err := x.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if bad := r.Bad(); len(bad) > 0 {
		t.Fatalf("not OTLP: %v", bad)
	}
	if n := len(r.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (a batch of 2, then the rest flushed)", n)
	}
	res, recs := received(r)
	if res["service.name"].GetStringValue() != "permhost" || res["service.version"].GetStringValue() != "v1.2.3" {
		t.Fatalf("resource %v", res)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for i, rec := range recs {
		a := attrs(rec.Attributes)
		if rec.Body.GetStringValue() != fmt.Sprint("decision ", i) || rec.TimeUnixNano != uint64(at.UnixNano()) ||
			rec.SeverityNumber != logspb.SeverityNumber_SEVERITY_NUMBER_INFO || rec.SeverityText != "INFO" ||
			a["event.name"].GetStringValue() != "permhost.decision" || a["n"].GetIntValue() != int64(i) || !a["ok"].GetBoolValue() ||
			len(a["plugins"].GetArrayValue().GetValues()) != 2 || a["plugins"].GetArrayValue().Values[1].GetStringValue() != "b" {
			t.Fatalf("record %d: %v", i, rec)
		}
	}
	if x.Sent() != 3 || x.Dropped() != 0 {
		t.Fatalf("sent %d dropped %d", x.Sent(), x.Dropped())
	}
}

// A collector answering 503 then 429 gets the batch again; one answering
// 400 does not (OTLP/HTTP's retryable statuses).
func TestExportRetries(t *testing.T) {
	r := otlptest.Start(t)
	x := otlp.New(otlp.Options{URL: r.URL, Interval: time.Hour, Backoff: time.Millisecond})
	defer x.Close(context.Background())
	r.FailNext(http.StatusServiceUnavailable, http.StatusTooManyRequests)
	x.Emit(otlp.Record{Body: "one"})
	x.Flush(context.Background())
	if _, recs := received(r); len(recs) != 1 || r.Attempts() != 3 || x.Sent() != 1 {
		t.Fatalf("%d records after %d attempts, want 1 after 3", len(recs), r.Attempts())
	}
	r.FailNext(http.StatusBadRequest)
	x.Emit(otlp.Record{Body: "two"})
	x.Flush(context.Background())
	if _, recs := received(r); len(recs) != 1 || r.Attempts() != 4 || x.Sent() != 1 {
		t.Fatalf("a 400 was retried: %d records after %d attempts", len(recs), r.Attempts())
	}
}

// A collector that does not answer never makes Emit wait: the queue fills,
// what does not fit is dropped and counted; once it answers again, what
// was queued is sent.
func TestExportNeverWaits(t *testing.T) {
	r := otlptest.Start(t)
	r.Hold()
	x := otlp.New(otlp.Options{URL: r.URL, QueueSize: 4, BatchSize: 1, Interval: time.Hour})
	defer x.Close(context.Background())
	x.Emit(otlp.Record{Body: "first"})
	<-r.Arrived() // the exporter is stuck sending "first"
	for i := range 10 {
		x.Emit(otlp.Record{Body: fmt.Sprint(i)}) // would block forever if Emit waited
	}
	if x.Dropped() != 6 {
		t.Fatalf("dropped %d, want 6 (10 emitted, 4 queued)", x.Dropped())
	}
	r.Release()
	if err := x.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, recs := received(r); len(recs) != 5 || recs[0].Body.GetStringValue() != "first" || recs[4].Body.GetStringValue() != "3" {
		t.Fatalf("received %v", recs)
	}
}

// An unreachable collector: Emit returns, Close returns once the batch is
// given up on.
func TestExportUnreachable(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + l.Addr().String() + "/v1/logs"
	l.Close()
	x := otlp.New(otlp.Options{URL: url, Interval: time.Hour, Backoff: time.Millisecond, Retries: 2})
	x.Emit(otlp.Record{Body: "lost"})
	if err := x.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if x.Sent() != 0 {
		t.Fatalf("sent %d", x.Sent())
	}
	if err := x.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(context.Background()); err != otlp.ErrClosed {
		t.Fatalf("second Close: %v", err)
	}
}

// Records of two resources in one batch go in two ResourceLogs, each with
// the base attributes and its own; each record's span reaches the traces
// endpoint under the same resource, and the log record carries the span's
// trace and span ids.
func TestExportResourcesAndSpans(t *testing.T) {
	r := otlptest.Start(t)
	x := otlp.New(otlp.Options{URL: r.URL, TracesURL: r.TracesURL, Interval: time.Hour,
		Resource: map[string]string{"service.name": "permhost"}})
	defer x.Close(context.Background())
	start := time.Unix(1700000000, 0)
	for i, agent := range []string{"claude", "codex", "claude"} {
		x.Emit(otlp.Record{Time: start, Body: fmt.Sprint(i), Resource: []otlp.KeyValue{otlp.String("agent", agent)},
			Span: &otlp.Span{Name: "decision", Start: start, End: start.Add(time.Duration(i+1) * time.Millisecond), Error: i == 1,
				Attrs: []otlp.KeyValue{otlp.String("n", fmt.Sprint(i))}}})
	}
	if err := x.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if bad := r.Bad(); len(bad) > 0 {
		t.Fatalf("not OTLP: %v", bad)
	}
	reqs, treqs := r.Requests(), r.Traces()
	if len(reqs) != 1 || len(treqs) != 1 {
		t.Fatalf("%d logs and %d traces requests, want 1 and 1", len(reqs), len(treqs))
	}
	type ids struct{ trace, span string }
	logIDs := map[string]ids{} // body -> ids
	var resources []string
	for _, rl := range reqs[0].ResourceLogs {
		a := attrs(rl.Resource.Attributes)
		if a["service.name"].GetStringValue() != "permhost" {
			t.Fatalf("resource %v", a)
		}
		agent := a["agent"].GetStringValue()
		resources = append(resources, agent)
		for _, rec := range rl.ScopeLogs[0].LogRecords {
			if len(rec.TraceId) != 16 || len(rec.SpanId) != 8 || rec.Flags != 1 {
				t.Fatalf("record %s: trace %x span %x flags %d", rec.Body.GetStringValue(), rec.TraceId, rec.SpanId, rec.Flags)
			}
			logIDs[agent+"/"+rec.Body.GetStringValue()] = ids{string(rec.TraceId), string(rec.SpanId)}
		}
	}
	if fmt.Sprint(resources) != "[claude codex]" || len(logIDs) != 3 {
		t.Fatalf("resources %v, records %d", resources, len(logIDs))
	}
	spans := 0
	for _, rs := range treqs[0].ResourceSpans {
		agent := attrs(rs.Resource.Attributes)["agent"].GetStringValue()
		for _, sp := range rs.ScopeSpans[0].Spans {
			spans++
			n := attrs(sp.Attributes)["n"].GetStringValue()
			want := logIDs[agent+"/"+n]
			if string(sp.TraceId) != want.trace || string(sp.SpanId) != want.span || sp.Name != "decision" ||
				sp.StartTimeUnixNano != uint64(start.UnixNano()) || sp.EndTimeUnixNano-sp.StartTimeUnixNano != uint64(int(n[0]-'0')+1)*1e6 ||
				(sp.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR) != (n == "1") {
				t.Fatalf("span %s of %s: %v, log ids %x", n, agent, sp, want)
			}
		}
	}
	if spans != 3 || x.SpansSent() != 3 || x.Sent() != 3 {
		t.Fatalf("%d spans received, %d sent, %d records sent", spans, x.SpansSent(), x.Sent())
	}
}

// Without a traces URL, no span is sent and log records carry no ids.
func TestExportNoSpans(t *testing.T) {
	r := otlptest.Start(t)
	x := otlp.New(otlp.Options{URL: r.URL, Interval: time.Hour})
	defer x.Close(context.Background())
	x.Emit(otlp.Record{Body: "one", Span: &otlp.Span{Name: "decision"}})
	x.Flush(context.Background())
	if _, recs := received(r); len(recs) != 1 || recs[0].TraceId != nil || len(r.Traces()) != 0 || r.Attempts() != 1 {
		t.Fatalf("records %v, %d traces requests", recs, len(r.Traces()))
	}
}

// A collector that takes logs and refuses traces: the records are sent,
// the spans are not, and the refusal is logged once, not once a batch nor
// alternating with the logs' successes.
func TestExportTracesRefused(t *testing.T) {
	r := otlptest.Start(t)
	var diag bytes.Buffer
	x := otlp.New(otlp.Options{URL: r.URL, TracesURL: strings.Replace(r.TracesURL, "/v1/traces", "/v1/none", 1), Interval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&diag, nil))})
	defer x.Close(context.Background())
	for i := range 3 {
		x.Emit(otlp.Record{Body: fmt.Sprint(i), Span: &otlp.Span{Name: "decision"}})
		if err := x.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, recs := received(r); len(recs) != 3 || x.Sent() != 3 || x.SpansSent() != 0 {
		t.Fatalf("%d records received, %d sent, %d spans sent", len(recs), x.Sent(), x.SpansSent())
	}
	if n := strings.Count(diag.String(), "OTLP export failed"); n != 1 || strings.Contains(diag.String(), "reachable again") {
		t.Fatalf("diagnostics:\n%s", diag.String())
	}
}
