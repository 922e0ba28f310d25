package main

import (
	"strings"
	"testing"
)

func TestRenderFuzz(t *testing.T) {
	tsv := strings.Join([]string{
		"2026-11-30T03:00Z\tacp:FuzzLines\t5m\tFAILED\t100",
		"2026-11-30T04:00Z\tacp:FuzzLines\t5m\tok\t7000000",
		"2026-11-30T04:10Z\tacp:FuzzLines\t30s\tok\t10",
		"2026-11-30T03:00Z\thost:FuzzManifest\t30s\tok\t5",
		"2026-11-30T03:30Z\thost:FuzzManifest\t30s\tFAILED\t3",
		"2026-11-30T03:00Z\tabi:FuzzDecision\t1m\tFAILED\t0",
		"2026-11-30T03:00Z\tsandbox:FuzzInstrument\t5m\tok-go75804\t42",
		"2026-11-30T02:00Z\tsuggestions:FuzzOptions\t5m\tok\t7",
		"2026-11-30T03:00Z\tsuggestions:FuzzOptions\t5m\tok-go75804\t8",
		"not a record",
	}, "\n")
	got := renderFuzz(parseFuzzRuns(tsv))
	for _, want := range []string{
		"| `acp:FuzzLines` | 5m | 7000000 | 2026-11-30T04:00Z | clean |", // the longest clean run; the old failure was fixed
		"| `host:FuzzManifest` | 30s | 5 | 2026-11-30T03:00Z | clean, then **failed** (30s, 2026-11-30T03:30Z) |",
		"| `abi:FuzzDecision` | | | 2026-11-30T03:00Z | **failed**, no clean run |",
		"| `sandbox:FuzzInstrument` | 5m | 42 | 2026-11-30T03:00Z | clean; the run ended on Go's fuzz-coordinator deadline race",
		"| `suggestions:FuzzOptions` | 5m | 7 | 2026-11-30T02:00Z | clean |", // a plain end preferred
		"3 of 5 targets ran clean for at least 5 minutes.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}
