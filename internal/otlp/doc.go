// Package otlp exports permhost's decisions as OpenTelemetry log records,
// and each as a span of its duration, to a collector over OTLP/HTTP with
// protobuf bodies (the official go.opentelemetry.io/proto/otlp types).
//
// Emit never waits: records go into a bounded queue, and when it is full
// a record is dropped and counted, so that a slow or unreachable
// collector never delays a decision (the local decision log, written
// separately, stays complete). One goroutine sends the queue in batches
// (by size or interval): the log records to the logs endpoint, then their
// spans to the traces endpoint, each batch with one resource per distinct
// record resource (the agent and project a leader's decisions differ in).
// A request is retried on network errors and on the status codes
// OTLP/HTTP calls retryable (429, 502, 503, 504), with backoff, a bounded
// number of times. A span's ids are random and set on its log record too,
// so that a backend correlates the two.
package otlp
