package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/otlp/otlptest"
)

// TestOTLPThroughBinary (#22): `permhost demo` through a configuration
// with [log.otlp]: every decision of the local log reaches a real OTLP/HTTP
// receiver as a log record with its decision id, outcome and deciding
// plugin, under permhost's resource naming the agent, and as a span whose
// trace and span ids the record carries.
func TestOTLPThroughBinary(t *testing.T) {
	t.Parallel()
	r := otlptest.Start(t)
	dir := t.TempDir()
	example, err := os.ReadFile(filepath.Join(repoRoot, "examples", "permhost.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(example), `path = ""   # e.g. "decisions.jsonl"`, "path = \"decisions.jsonl\"\n[log.otlp]\nendpoint = \""+r.URL+"\"", 1)
	if cfg == string(example) {
		t.Fatal("examples/permhost.toml has no [log] path line")
	}
	path := filepath.Join(dir, "permhost.toml")
	os.WriteFile(path, []byte(cfg), 0o600)
	cmd := exec.Command(permhostBin, "demo", "--config", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("permhost demo: %v\n%s", err, out.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	local := map[string][2]string{} // decision id -> outcome, decidedBy
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e struct{ DecisionID, Outcome, DecidedBy string }
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		local[e.DecisionID] = [2]string{e.Outcome, e.DecidedBy}
	}
	if len(local) == 0 {
		t.Fatal("no local decisions")
	}
	if bad := r.Bad(); len(bad) > 0 {
		t.Fatalf("not OTLP: %v", bad)
	}
	got := map[string][2]string{}
	ids := map[string]string{} // trace id + span id -> decision id
	for _, req := range r.Requests() {
		for _, rl := range req.ResourceLogs {
			res := map[string]string{}
			for _, kv := range rl.Resource.Attributes {
				res[kv.Key] = kv.Value.GetStringValue()
			}
			if res["service.name"] != "permhost" || res["service.version"] == "" || res["permhost.agent.name"] == "" {
				t.Fatalf("resource %v", res)
			}
			for _, sl := range rl.ScopeLogs {
				for _, rec := range sl.LogRecords {
					a := map[string]string{}
					for _, kv := range rec.Attributes {
						a[kv.Key] = kv.Value.GetStringValue()
					}
					got[a["permhost.decision_id"]] = [2]string{a["permhost.outcome"], a["permhost.decided_by"]}
					ids[string(rec.TraceId)+string(rec.SpanId)] = a["permhost.decision_id"]
				}
			}
		}
	}
	if len(got) != len(local) {
		t.Fatalf("%d records received, %d decisions logged locally:\n%v\n%v", len(got), len(local), got, local)
	}
	for id, want := range local {
		if got[id] != want {
			t.Errorf("decision %s: received %v, logged %v", id, got[id], want)
		}
	}
	spans := 0
	for _, req := range r.Traces() {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					spans++
					id := ids[string(sp.TraceId)+string(sp.SpanId)]
					var outcome string
					for _, kv := range sp.Attributes {
						if kv.Key == "permhost.outcome" {
							outcome = kv.Value.GetStringValue()
						}
					}
					if sp.Name != "permhost.decision" || id == "" || outcome != local[id][0] || sp.EndTimeUnixNano < sp.StartTimeUnixNano {
						t.Errorf("span %v: no log record with its ids, or not its decision's", sp)
					}
				}
			}
		}
	}
	if spans != len(local) {
		t.Errorf("%d spans received, %d decisions", spans, len(local))
	}
}
