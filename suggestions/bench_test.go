package suggestions

import (
	"encoding/json"
	"testing"
)

func BenchmarkOptionsNoMeta(b *testing.B) {
	raw := json.RawMessage(`[{"kind":"allow_always","name":"Always Allow","optionId":"allow_always"},{"kind":"allow_once","name":"Allow","optionId":"allow"},{"kind":"reject_once","name":"Reject","optionId":"reject"}]`)
	for b.Loop() {
		Options("execute", raw)
	}
}

func BenchmarkOptionsWithChanges(b *testing.B) {
	raw := json.RawMessage(`[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"always","name":"Always","kind":"allow_always","_meta":{"claudeCode":{"updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],"behavior":"allow","destination":"localSettings"}]}}},{"optionId":"x","name":"X","kind":"allow_always","_meta":{"permission":{"version":1,"changes":[{"type":"policy_rule","operation":"add","ruleBehavior":"allow","description":"d","targets":[{"type":"command","matcher":{"type":"argv_prefix","argv":["rm","-rf","build"]}}]}]}}}]`)
	for b.Loop() {
		Options("execute", raw)
	}
}
