// Package otlptest is an OTLP/HTTP logs and traces receiver for tests: a
// real HTTP server that decodes each request as the OTLP specification
// defines it, an ExportLogsServiceRequest (on /v1/logs) or an
// ExportTraceServiceRequest (on /v1/traces) of the official protobuf
// types, and answers the matching response (or the status a test
// scripts).
package otlptest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is a running receiver.
type Receiver struct {
	// URL is its logs endpoint, ".../v1/logs".
	URL string
	// TracesURL is its traces endpoint, ".../v1/traces".
	TracesURL string
	srv       *httptest.Server

	mu       sync.Mutex
	requests []*collogspb.ExportLogsServiceRequest
	traces   []*coltracepb.ExportTraceServiceRequest
	statuses []int // answered to the next requests, then 200
	attempts int
	hold     chan struct{} // when set, requests wait for it to close
	arrived  chan struct{} // receives each request as it arrives
	bad      []string      // what did not decode
}

// Start starts a receiver for the rest of the test.
func Start(t testing.TB) *Receiver {
	r := &Receiver{arrived: make(chan struct{}, 1024)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL + "/v1/logs"
	r.TracesURL = r.srv.URL + "/v1/traces"
	t.Cleanup(func() {
		r.Release()
		r.srv.Close()
	})
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.arrived <- struct{}{}
	r.mu.Lock()
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		<-hold
	}
	body, err := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts++
	var msg, reply proto.Message
	switch req.URL.Path {
	case "/v1/logs":
		msg, reply = &collogspb.ExportLogsServiceRequest{}, &collogspb.ExportLogsServiceResponse{}
	case "/v1/traces":
		msg, reply = &coltracepb.ExportTraceServiceRequest{}, &coltracepb.ExportTraceServiceResponse{}
	}
	switch {
	case req.Method != http.MethodPost || msg == nil:
		r.bad = append(r.bad, req.Method+" "+req.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	case req.Header.Get("Content-Type") != "application/x-protobuf":
		r.bad = append(r.bad, "content type "+req.Header.Get("Content-Type"))
		http.Error(w, "unsupported media type", http.StatusUnsupportedMediaType)
		return
	case err != nil:
		r.bad = append(r.bad, err.Error())
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if err := (proto.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(body, msg); err != nil {
		r.bad = append(r.bad, err.Error())
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if len(r.statuses) > 0 {
		status := r.statuses[0]
		r.statuses = r.statuses[1:]
		w.WriteHeader(status)
		return
	}
	switch msg := msg.(type) {
	case *collogspb.ExportLogsServiceRequest:
		r.requests = append(r.requests, msg)
	case *coltracepb.ExportTraceServiceRequest:
		r.traces = append(r.traces, msg)
	}
	out, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// FailNext answers the next requests with these statuses (then 200).
func (r *Receiver) FailNext(statuses ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, statuses...)
}

// Hold makes requests wait until Release.
func (r *Receiver) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold == nil {
		r.hold = make(chan struct{})
	}
}

// Release lets held requests go on.
func (r *Receiver) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold != nil {
		close(r.hold)
		r.hold = nil
	}
}

// Arrived receives once per request as it arrives.
func (r *Receiver) Arrived() <-chan struct{} { return r.arrived }

// Traces are the traces requests accepted so far.
func (r *Receiver) Traces() []*coltracepb.ExportTraceServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*coltracepb.ExportTraceServiceRequest(nil), r.traces...)
}

// Requests are the logs requests accepted so far.
func (r *Receiver) Requests() []*collogspb.ExportLogsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*collogspb.ExportLogsServiceRequest(nil), r.requests...)
}

// Attempts is how many requests arrived, logs or traces (accepted or not).
func (r *Receiver) Attempts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts
}

// Bad lists the requests that were not OTLP.
func (r *Receiver) Bad() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}
