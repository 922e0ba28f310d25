package policy_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/auditlog"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/otlp/otlptest"
	"github.com/permhost/permhost/policy"
)

func signedConfig(t testing.TB) (*config.Config, ed25519.PublicKey) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject,
		LogPath: filepath.Join(t.TempDir(), "decisions.jsonl"), LogKey: key}, pub
}

var chainFields = regexp.MustCompile(`^\{"seq":[0-9]+,"prev":"[0-9a-f]{64}",`)

// TestSignedLogEntries: decisions taken from many goroutines are logged in
// a chain that verifies, and each entry line is the plain log's line with
// seq and prev put first: every field a reader of the plain log reads is
// there, byte for byte.
func TestSignedLogEntries(t *testing.T) {
	cfg, pub := signedConfig(t)
	dlog, err := policy.OpenConfiguredLog(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, Log: dlog, Home: "/home/dev",
		Members: []host.Member{member("ok", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow, OptionID: "allow"}})}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if _, err := e.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), &fakeClient{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	e.Close(context.Background())
	if err := dlog.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(cfg.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if r := auditlog.Verify([]auditlog.File{{Name: "decisions.jsonl", Data: b}}, []ed25519.PublicKey{pub}); r.Problem != nil || r.Lines-r.Seals != 80 {
		t.Fatalf("Verify: %+v, want 80 entries and no problem", r)
	}
	n := 0
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if bytes.Contains(line, []byte(`"seal":{`)) {
			continue
		}
		n++
		var entry policy.LogEntry
		if err := json.Unmarshal(line, &entry); err != nil {
			t.Fatal(err)
		}
		var plain bytes.Buffer
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		enc.Encode(entry)
		got := chainFields.ReplaceAll(line, []byte("{"))
		if !bytes.Equal(got, bytes.TrimSpace(plain.Bytes())) || entry.OptionID != "allow" || entry.DecidedBy != "ok" {
			t.Fatalf("entry line without seq and prev:\n%s\nplain log line:\n%s", got, plain.Bytes())
		}
	}
	if n != 80 {
		t.Errorf("%d entries, want 80", n)
	}
}

// TestSignedLogOrder: entries written from many goroutines are chained in
// the order written: each goroutine's in its own order.
func TestSignedLogOrder(t *testing.T) {
	cfg, pub := signedConfig(t)
	dlog, err := policy.OpenConfiguredLog(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				dlog.Write(policy.LogEntry{DecisionID: fmt.Sprintf("g%d-%03d", g, i)})
			}
		})
	}
	wg.Wait()
	dlog.Close()
	b, _ := os.ReadFile(cfg.LogPath)
	if r := auditlog.Verify([]auditlog.File{{Name: "d", Data: b}}, []ed25519.PublicKey{pub}); r.Problem != nil || r.Lines-r.Seals != 800 {
		t.Fatalf("Verify: %+v", r)
	}
	last := map[byte]string{}
	for _, m := range regexp.MustCompile(`"decisionId":"g(\d)-(\d{3})"`).FindAllSubmatch(b, -1) {
		g, i := m[1][0], string(m[2])
		if i <= last[g] && last[g] != "" {
			t.Fatalf("goroutine %c: entry %s after %s", g, i, last[g])
		}
		last[g] = i
	}
}

// BenchmarkDecisionLog: a decision's latency with the plain log, with the
// chained, signed one, and with the plain log and [log.otlp] exporting to
// a receiver on loopback, taken in turns in one loop so that all see the
// same load (the log and the exporter have their own goroutines, whose
// hashing, signing and sending share the cores). It reports the median and
// p99 of each (make bench shows them side by side).
func BenchmarkDecisionLog(b *testing.B) {
	type side struct {
		h     acp.Handler
		times []time.Duration
	}
	names := []string{"plain", "signed", "otlp"}
	var sides [3]*side
	for i, name := range names {
		cfg, _ := signedConfig(b)
		if name != "signed" {
			cfg.LogKey = nil
		}
		if name == "otlp" {
			cfg.OTLP = config.OTLP{Endpoint: otlptest.Start(b).URL}
		}
		dlog, err := policy.OpenConfiguredLog(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		e, err := policy.New(context.Background(), policy.Options{Config: cfg, Log: dlog, Home: "/home/dev",
			Members: []host.Member{member("ok", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow, OptionID: "allow"}})}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { e.Close(context.Background()); dlog.Close() })
		sides[i] = &side{h: e.Handler()}
	}
	req := permissionRequest(b, claudeBash)
	c := &fakeClient{}
	for b.Loop() {
		for _, s := range sides {
			start := time.Now()
			if _, err := s.h.RequestPermission(context.Background(), req, c); err != nil {
				b.Fatal(err)
			}
			s.times = append(s.times, time.Since(start))
		}
	}
	for i, name := range names {
		t := sides[i].times
		slices.Sort(t)
		b.ReportMetric(float64(t[len(t)/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(t[len(t)*99/100].Microseconds()), name+"-p99-µs")
	}
}

// TestSignedLogSealsWhileOpen: an entry is sealed while the log stays
// open, without waiting for Close.
func TestSignedLogSealsWhileOpen(t *testing.T) {
	cfg, pub := signedConfig(t)
	dlog, err := policy.OpenConfiguredLog(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dlog.Close()
	dlog.Write(policy.LogEntry{DecisionID: "d-1"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(cfg.LogPath)
		r := auditlog.Verify([]auditlog.File{{Name: "d", Data: b}}, []ed25519.PublicKey{pub})
		if r.Problem == nil && r.Seals == 1 && r.Lines == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no seal while the log is open: %v\n%s", r.Problem, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
