package shell

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
)

var update = flag.Bool("update", false, "rewrite testdata/scripts.golden.json")

// TestGolden analyses the scripts of testdata/scripts.txt (separated by
// "----" lines) and compares the result with testdata/scripts.golden.json.
func TestGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/scripts.txt")
	require.NoError(t, err)
	type result struct {
		Shell *abi.Shell `json:"shell"`
		Paths []abi.Path `json:"paths"`
	}
	var out []result
	for _, script := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n----\n") {
		sh, paths := AnalyzeScript(script, cwd, home)
		out = append(out, result{sh, paths})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(out))
	const golden = "testdata/scripts.golden.json"
	if *update {
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./internal/shell -update")
	assert.Equal(t, string(want), buf.String())
}
