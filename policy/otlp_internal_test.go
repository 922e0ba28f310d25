package policy

import (
	"context"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/otlp"
	"github.com/permhost/permhost/internal/otlp/otlptest"
)

// BenchmarkOTLPDecisionPath is what [log.otlp] adds to the goroutine
// that writes a decision: converting the entry and queueing it (encoding
// and sending happen on the exporter's goroutine, held here).
func BenchmarkOTLPDecisionPath(b *testing.B) {
	r := otlptest.Start(b)
	r.Hold()
	x := otlp.New(otlp.Options{URL: r.URL, QueueSize: b.N + 1, Interval: time.Hour, BatchSize: b.N + 1})
	defer x.Close(context.Background())
	entry := LogEntry{DecisionID: "d-1", Time: time.Now(), Via: "proxy", Strategy: "sequential", Session: "s1",
		Agent:    &abi.Peer{Name: "claude-agent-acp", Version: "0.5.0"},
		ToolCall: LogToolCall{ID: "toolu_1", Title: "rm -rf build", Kind: "execute", RawInputSHA256: "ab"},
		Plugins:  []LogPlugin{{Name: "team-rules", Outcome: "reject"}, {Name: "explainer", Outcome: "abstain"}},
		Outcome:  "selected", OptionID: "reject", OptionKind: "reject_once", DecidedBy: "team-rules", Reason: "rm -rf", LatencyUs: 30}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N { // b.N, not b.Loop: the queue is sized for it
		x.Emit(decisionRecord(entry))
	}
	b.StopTimer()
	if x.Dropped() != 0 {
		b.Fatalf("dropped %d", x.Dropped())
	}
}
