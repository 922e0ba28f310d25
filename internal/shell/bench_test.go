package shell

import (
	"encoding/json"
	"strings"
	"testing"
)

func BenchmarkAnalyzeClaude(b *testing.B) {
	raw := json.RawMessage(`{"command":"cd sub && git status && npm test 2>&1 | tee log.txt","description":"x"}`)
	for b.Loop() {
		Analyze(raw, cwd, home)
	}
}

func BenchmarkAnalyzeCodex(b *testing.B) {
	raw := json.RawMessage(`{"command":["/bin/bash","-lc","rm -rf build"],"cwd":"/home/dev/project"}`)
	for b.Loop() {
		Analyze(raw, cwd, home)
	}
}

func BenchmarkAnalyze500Commands(b *testing.B) {
	script := strings.Repeat("echo $(date) > out && ", 500) + "true"
	for b.Loop() {
		AnalyzeScript(script, cwd, home)
	}
}
