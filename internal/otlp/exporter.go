package otlp

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Defaults of Options.
const (
	DefaultQueueSize = 4096
	DefaultBatchSize = 512
	DefaultInterval  = time.Second
	DefaultTimeout   = 10 * time.Second
	DefaultRetries   = 5
)

// ErrClosed is Close called twice.
var ErrClosed = errors.New("otlp: exporter closed")

// Options configure an [Exporter].
type Options struct {
	// URL is where batches are POSTed: the collector's OTLP/HTTP logs
	// endpoint ("http://127.0.0.1:4318/v1/logs").
	URL string
	// TracesURL, when set, is where the records' spans are POSTed: the
	// collector's OTLP/HTTP traces endpoint (".../v1/traces"). Empty: no
	// spans, and log records carry no trace ids.
	TracesURL string
	// Headers are added to every request (an API key).
	Headers map[string]string
	// Resource is the attributes every resource has (service.name, ...);
	// a record adds its own (Record.Resource).
	Resource map[string]string
	// Scope names the instrumentation scope.
	Scope, ScopeVersion string
	// QueueSize, BatchSize, Interval, Timeout (of one request) and Retries
	// (after the first attempt); 0 means the default.
	QueueSize, BatchSize int
	Interval, Timeout    time.Duration
	Retries              int
	// Backoff is the first retry's wait, doubled each time up to 5s; 0
	// means 200ms.
	Backoff time.Duration
	// Logger receives the exporter's troubles, each once until it
	// recovers; nil discards them.
	Logger *slog.Logger
}

// Record is one log record.
type Record struct {
	Time      time.Time
	EventName string
	Severity  logspb.SeverityNumber
	Body      string
	Attrs     []KeyValue
	// Resource is the attributes of the resource the record comes from,
	// added to Options.Resource (the agent it decided for): a batch has
	// one ResourceLogs (and ResourceSpans) per distinct resource.
	Resource []KeyValue
	// Span, when set and Options.TracesURL is, is also exported as a span
	// of its own trace, and the log record carries its trace and span ids
	// so that the two correlate.
	Span *Span
}

// Span is the span a record is also exported as.
type Span struct {
	Name       string
	Start, End time.Time
	// Error sets the span's status to error.
	Error bool
	Attrs []KeyValue
}

// KeyValue is an attribute, made by String, Int, Bool or Strings (typed
// fields rather than an any: no allocation on the caller's goroutine).
type KeyValue struct {
	Key  string
	kind byte // 's', 'i', 'b', 'a'
	str  string
	num  int64
	strs []string
}

// String is a string attribute.
func String(k, v string) KeyValue { return KeyValue{Key: k, kind: 's', str: v} }

// Int is an integer attribute.
func Int(k string, v int64) KeyValue { return KeyValue{Key: k, kind: 'i', num: v} }

// Bool is a boolean attribute.
func Bool(k string, v bool) KeyValue {
	var n int64
	if v {
		n = 1
	}
	return KeyValue{Key: k, kind: 'b', num: n}
}

// Strings is an array-of-strings attribute.
func Strings(k string, v []string) KeyValue { return KeyValue{Key: k, kind: 'a', strs: v} }

// Exporter sends records to a collector in the background.
type Exporter struct {
	opts    Options
	client  *http.Client
	log     *slog.Logger
	queue   chan Record
	dropped atomic.Int64
	sent    atomic.Int64
	spans   atomic.Int64
	flush   chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	// ctx bounds every request; Close cancels it once its own ctx ends.
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	// failing holds the URLs whose requests fail, so that an outage is
	// logged once per endpoint (a collector may take logs and refuse
	// traces); read and written by the sending goroutine only.
	failing map[string]bool
	// dropLogged likewise for a full queue.
	dropLogged atomic.Bool
}

// New starts an exporter; it must be closed.
func New(opts Options) *Exporter {
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Retries <= 0 {
		opts.Retries = DefaultRetries
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 200 * time.Millisecond
	}
	x := &Exporter{opts: opts, client: &http.Client{Timeout: opts.Timeout}, log: opts.Logger,
		queue: make(chan Record, opts.QueueSize), flush: make(chan chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{}), failing: map[string]bool{}}
	if x.log == nil {
		x.log = slog.New(slog.DiscardHandler)
	}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	go x.run()
	return x
}

// Emit queues r without waiting: when the queue is full r is dropped and
// counted (Dropped). r is encoded later, on the exporter's goroutine: the
// caller must not change r.Attrs afterwards.
func (x *Exporter) Emit(r Record) {
	select {
	case x.queue <- r:
	default:
		if x.dropped.Add(1); x.dropLogged.CompareAndSwap(false, true) {
			x.log.Warn("OTLP export queue full; dropping decision records (the local decision log has them)", "queue", x.opts.QueueSize)
		}
	}
}

// item is a queued record as OTLP: its resource (res, keyed by resKey),
// log record, and span if any.
type item struct {
	resKey string
	res    []KeyValue
	log    *logspb.LogRecord
	span   *tracepb.Span
}

// item converts r, giving it a span when spans are exported.
func (x *Exporter) item(r Record) item {
	it := item{res: r.Resource, log: record(r)}
	var key []byte
	for _, a := range r.Resource {
		key = fmt.Appendf(key, "%s\x00%c%s\x00%d\x00%q\x00", a.Key, a.kind, a.str, a.num, a.strs)
	}
	it.resKey = string(key)
	if r.Span != nil && x.opts.TracesURL != "" {
		var ids [24]byte
		rand.Read(ids[:]) // never fails (crypto/rand)
		sp := &tracepb.Span{
			TraceId: ids[:16], SpanId: ids[16:], Name: r.Span.Name, Kind: tracepb.Span_SPAN_KIND_INTERNAL,
			StartTimeUnixNano: uint64(r.Span.Start.UnixNano()), EndTimeUnixNano: uint64(r.Span.End.UnixNano()),
			Attributes: attributes(r.Span.Attrs),
		}
		if r.Span.Error {
			sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}
		}
		it.span = sp
		it.log.TraceId, it.log.SpanId = sp.TraceId, sp.SpanId
		it.log.Flags = 1 // W3C trace flags: sampled
	}
	return it
}

// record is r as OTLP.
func record(r Record) *logspb.LogRecord {
	lr := &logspb.LogRecord{
		TimeUnixNano:         uint64(r.Time.UnixNano()),
		ObservedTimeUnixNano: uint64(r.Time.UnixNano()),
		SeverityNumber:       r.Severity,
		SeverityText:         severityText(r.Severity),
		Body:                 &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: r.Body}},
		Attributes:           attributes(r.Attrs),
	}
	if r.EventName != "" {
		// The event.name attribute: the LogRecord field of that name is
		// newer than the proto module this build uses.
		lr.Attributes = append([]*commonpb.KeyValue{kv("event.name", r.EventName)}, lr.Attributes...)
	}
	return lr
}

// Dropped is how many records Emit dropped for a full queue.
func (x *Exporter) Dropped() int64 { return x.dropped.Load() }

// Sent is how many records the collector accepted.
func (x *Exporter) Sent() int64 { return x.sent.Load() }

// SpansSent is how many spans the collector accepted.
func (x *Exporter) SpansSent() int64 { return x.spans.Load() }

// Flush sends what is queued now and returns once it was sent or given up
// on, or ctx ends.
func (x *Exporter) Flush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case x.flush <- ack:
	case <-x.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close sends what is queued, until ctx ends, then gives up what is not
// sent yet and stops.
func (x *Exporter) Close(ctx context.Context) error {
	err := ErrClosed
	x.once.Do(func() {
		err = nil
		close(x.stop)
	})
	if err != nil {
		return err
	}
	defer x.cancel()
	select {
	case <-x.done:
		return nil
	case <-ctx.Done():
		x.cancel()
		<-x.done
		return ctx.Err()
	}
}

func (x *Exporter) run() {
	defer close(x.done)
	t := time.NewTicker(x.opts.Interval)
	defer t.Stop()
	var batch []item
	// drain moves what is queued into batch, sending full batches.
	drain := func(ctx context.Context) {
		for {
			select {
			case r := <-x.queue:
				batch = append(batch, x.item(r))
				if len(batch) >= x.opts.BatchSize {
					x.send(ctx, batch)
					batch = nil
				}
			default:
				return
			}
		}
	}
	for {
		select {
		case r := <-x.queue:
			batch = append(batch, x.item(r))
			if len(batch) >= x.opts.BatchSize {
				x.send(x.ctx, batch)
				batch = nil
			}
		case <-t.C:
			if len(batch) > 0 {
				x.send(x.ctx, batch)
				batch = nil
			}
		case ack := <-x.flush:
			drain(x.ctx)
			if len(batch) > 0 {
				x.send(x.ctx, batch)
				batch = nil
			}
			close(ack)
		case <-x.stop:
			drain(x.ctx)
			if len(batch) > 0 {
				x.send(x.ctx, batch)
			}
			return
		}
	}
}

// send posts one batch: its log records, then its spans.
func (x *Exporter) send(ctx context.Context, batch []item) {
	logs, spans := x.requests(batch)
	if x.deliver(ctx, x.opts.URL, logs, len(batch)) {
		x.sent.Add(int64(len(batch)))
	}
	if n := countSpans(batch); n > 0 && x.deliver(ctx, x.opts.TracesURL, spans, n) {
		x.spans.Add(int64(n))
	}
}

func countSpans(batch []item) int {
	n := 0
	for _, it := range batch {
		if it.span != nil {
			n++
		}
	}
	return n
}

// deliver posts msg to url, retrying what OTLP/HTTP calls retryable;
// it reports whether the collector accepted it.
func (x *Exporter) deliver(ctx context.Context, url string, msg proto.Message, n int) bool {
	body, err := proto.Marshal(msg)
	if err != nil {
		x.log.Error("OTLP export: cannot encode a batch", "err", err)
		return false
	}
	wait := x.opts.Backoff
	for attempt := 0; ; attempt++ {
		retry, err := x.post(ctx, url, body)
		if err == nil {
			if x.failing[url] {
				delete(x.failing, url)
				x.log.Info("OTLP collector reachable again", "url", url)
			}
			x.dropLogged.Store(false)
			return true
		}
		if !retry || attempt >= x.opts.Retries {
			if !x.failing[url] {
				x.failing[url] = true
				x.log.Warn("OTLP export failed; records dropped (the local decision log has them)", "url", url, "records", n, "err", err)
			}
			return false
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return false
		case <-x.stop:
			// Closing: one more try at most, no more waiting.
			if attempt+1 < x.opts.Retries {
				attempt = x.opts.Retries - 1
			}
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// post sends body once; retry says whether a failure is worth retrying.
func (x *Exporter) post(ctx context.Context, url string, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range x.opts.Headers {
		req.Header.Set(k, v)
	}
	resp, err := x.client.Do(req)
	if err != nil {
		return true, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		return true, fmt.Errorf("collector answered %s", resp.Status)
	default:
		return false, fmt.Errorf("collector answered %s", resp.Status)
	}
}

// requests are the batch's ExportLogsServiceRequest and
// ExportTraceServiceRequest: one ResourceLogs (ResourceSpans) per
// distinct resource, in the order the batch first has it. LogsData and
// TracesData have the same wire form as those requests, and need no gRPC
// code in the binary.
func (x *Exporter) requests(batch []item) (*logspb.LogsData, *tracepb.TracesData) {
	logs, traces := &logspb.LogsData{}, &tracepb.TracesData{}
	scope := &commonpb.InstrumentationScope{Name: x.opts.Scope, Version: x.opts.ScopeVersion}
	byRes := map[string]int{}
	spanRes := map[string]*tracepb.ScopeSpans{}
	for _, it := range batch {
		i, ok := byRes[it.resKey]
		if !ok {
			i = len(logs.ResourceLogs)
			byRes[it.resKey] = i
			logs.ResourceLogs = append(logs.ResourceLogs, &logspb.ResourceLogs{Resource: x.resource(it.res),
				ScopeLogs: []*logspb.ScopeLogs{{Scope: scope}}})
		}
		sl := logs.ResourceLogs[i].ScopeLogs[0]
		sl.LogRecords = append(sl.LogRecords, it.log)
		if it.span == nil {
			continue
		}
		ss, ok := spanRes[it.resKey]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: scope}
			spanRes[it.resKey] = ss
			traces.ResourceSpans = append(traces.ResourceSpans, &tracepb.ResourceSpans{Resource: logs.ResourceLogs[i].Resource,
				ScopeSpans: []*tracepb.ScopeSpans{ss}})
		}
		ss.Spans = append(ss.Spans, it.span)
	}
	return logs, traces
}

// resource is Options.Resource with the record's own attributes (which
// win over a base attribute of the same key).
func (x *Exporter) resource(own []KeyValue) *resourcepb.Resource {
	res := &resourcepb.Resource{}
	for _, k := range sortedKeys(x.opts.Resource) {
		if !slices.ContainsFunc(own, func(a KeyValue) bool { return a.Key == k }) {
			res.Attributes = append(res.Attributes, kv(k, x.opts.Resource[k]))
		}
	}
	res.Attributes = append(res.Attributes, attributes(own)...)
	return res
}

func attributes(attrs []KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		var v any
		switch a.kind {
		case 'i':
			v = a.num
		case 'b':
			v = a.num != 0
		case 'a':
			v = a.strs
		default:
			v = a.str
		}
		out = append(out, kv(a.Key, v))
	}
	return out
}

func kv(k string, v any) *commonpb.KeyValue {
	var av commonpb.AnyValue
	switch v := v.(type) {
	case string:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: v}
	case int64:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: v}
	case int:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: int64(v)}
	case bool:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: v}
	case []string:
		arr := &commonpb.ArrayValue{}
		for _, s := range v {
			arr.Values = append(arr.Values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
		}
		av.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: arr}
	default:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: fmt.Sprint(v)}
	}
	return &commonpb.KeyValue{Key: k, Value: &av}
}

func severityText(s logspb.SeverityNumber) string {
	switch {
	case s >= logspb.SeverityNumber_SEVERITY_NUMBER_ERROR:
		return "ERROR"
	case s >= logspb.SeverityNumber_SEVERITY_NUMBER_WARN:
		return "WARN"
	case s >= logspb.SeverityNumber_SEVERITY_NUMBER_INFO:
		return "INFO"
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
