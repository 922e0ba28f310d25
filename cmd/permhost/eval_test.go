package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateEval = flag.Bool("update", false, "rewrite testdata/eval golden files")

var durationField = regexp.MustCompile(`"durationUs": \d+`)

// evalRequestJSON is a claude-agent-acp Bash request as eval reads it.
const evalRequestJSON = `{
  "decisionId": "d1",
  "session": {"id": "sess-1", "cwd": "/home/dev/project", "mode": "default"},
  "toolCall": {"id": "toolu_01", "title": "npm test", "kind": "execute",
               "rawInput": {"command": "npm test"}, "toolName": "Bash"},
  "options": [
    {"optionId": "allow_always", "name": "Always Allow", "kind": "allow_always", "durable": true},
    {"optionId": "allow", "name": "Allow", "kind": "allow_once", "durable": false},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once", "durable": false}
  ]
}`

func wasmFixture(name string) string {
	return filepath.Join("..", "..", "testdata", "wasm", name+".wasm")
}

// runEvalCmd runs "permhost eval ARGS" in-process with stdin as input.
func runEvalCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"eval"}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// TestEvalGolden checks eval's whole output against testdata/eval, with
// durationUs zeroed.
func TestEvalGolden(t *testing.T) {
	reqFile := writeFile(t, "req.json", evalRequestJSON)
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"good", []string{"--plugin", wasmFixture("good"), reqFile}, exitOK},
		{"wasi_path_open", []string{"--plugin", wasmFixture("wasi_path_open"), reqFile}, exitOK},
		{"unknown_outcome", []string{"--plugin", wasmFixture("unknown_outcome"), reqFile}, exitPluginFailed},
		{"select_not_offered", []string{"--plugin", wasmFixture("select_not_offered"), reqFile}, exitPluginFailed},
		{"unreachable", []string{"--plugin", wasmFixture("unreachable"), reqFile}, exitPluginFailed},
		{"forbidden_import", []string{"--plugin", wasmFixture("forbidden_import"), reqFile}, exitPluginFailed},
		{"abi_major", []string{"--plugin", wasmFixture("abi_major"), reqFile}, exitPluginFailed},
		{"memory_grow", []string{"--plugin", wasmFixture("memory_grow"), "--memory", "2MiB", "--timeout", "2s", reqFile}, exitPluginFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runEvalCmd(t, "", append(tt.args, "--cache-dir", "off")...)
			assert.Equal(t, tt.wantCode, code, "stderr: %s", stderr)
			assert.Empty(t, stderr)

			require.True(t, json.Valid([]byte(stdout)), "stdout: %s", stdout)
			require.Regexp(t, durationField, stdout)
			norm := durationField.ReplaceAllString(stdout, `"durationUs": 0`)

			golden := filepath.Join("testdata", "eval", tt.name+".golden")
			if *updateEval {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(norm), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create it")
			assert.Equal(t, string(want), norm)
		})
	}
}

func TestEvalResult(t *testing.T) {
	good, err := os.ReadFile(wasmFixture("good"))
	require.NoError(t, err)
	sum := sha256.Sum256(good)
	goodPin := hex.EncodeToString(sum[:])
	garbage := writeFile(t, "garbage.wasm", "not a module")

	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		wantKind string // "" for a decision
	}{
		{name: "stdin by default", stdin: evalRequestJSON, args: []string{"--plugin", wasmFixture("good")}, wantCode: exitOK},
		{name: "stdin as -", stdin: evalRequestJSON, args: []string{"--plugin", wasmFixture("good"), "-"}, wantCode: exitOK},
		{name: "request before flags", stdin: evalRequestJSON, args: []string{"-", "--plugin", wasmFixture("good")}, wantCode: exitOK},
		{name: "pinned", stdin: evalRequestJSON, args: []string{"--plugin", wasmFixture("good"), "--sha256", goodPin}, wantCode: exitOK},
		{name: "minimal request", stdin: `{}`, args: []string{"--plugin", wasmFixture("good")}, wantCode: exitOK},
		{name: "config", stdin: evalRequestJSON, args: []string{"--plugin", wasmFixture("good"), "--config-json", `{"globs":[".env"]}`}, wantCode: exitOK},
		{name: "wrong pin", stdin: evalRequestJSON, args: []string{"--plugin", wasmFixture("good"), "--sha256", strings.Repeat("0", 64)}, wantCode: exitPluginFailed, wantKind: "load"},
		{name: "garbage module", stdin: evalRequestJSON, args: []string{"--plugin", garbage}, wantCode: exitPluginFailed, wantKind: "load"},
		{name: "huge output", stdin: evalRequestJSON, args: []string{"--plugin", wasmFixture("huge_output")}, wantCode: exitPluginFailed, wantKind: "output-too-large"},
		// (Not golden: whether the guest was stopped or abandoned at
		// the deadline shows in the message.)
		{name: "infinite loop", stdin: evalRequestJSON, args: []string{"--plugin", wasmFixture("infinite_loop"), "--timeout", "50ms"}, wantCode: exitPluginFailed, wantKind: "timeout"},
		{name: "call tree", stdin: evalRequestJSON, args: []string{"--plugin", wasmFixture("call_tree"), "--timeout", "30ms"}, wantCode: exitPluginFailed, wantKind: "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runEvalCmd(t, tt.stdin, append(tt.args, "--cache-dir", "off")...)
			require.Equal(t, tt.wantCode, code, "stderr: %s", stderr)
			var got struct {
				Decision *struct {
					Outcome string `json:"outcome"`
					Reason  string `json:"reason"`
				} `json:"decision"`
				Failure *struct {
					Kind    string `json:"kind"`
					Message string `json:"message"`
				} `json:"failure"`
				DurationUs *int64            `json:"durationUs"`
				Logs       []json.RawMessage `json:"logs"`
			}
			dec := json.NewDecoder(strings.NewReader(stdout))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&got), "stdout: %s", stdout)
			require.NotNil(t, got.DurationUs)
			assert.GreaterOrEqual(t, *got.DurationUs, int64(0))
			assert.NotNil(t, got.Logs, "logs is [] rather than null")
			if tt.wantKind == "" {
				require.NotNil(t, got.Decision)
				assert.Equal(t, "abstain", got.Decision.Outcome)
				assert.Nil(t, got.Failure)
				return
			}
			assert.Nil(t, got.Decision)
			require.NotNil(t, got.Failure)
			assert.Equal(t, tt.wantKind, got.Failure.Kind)
			assert.NotEmpty(t, got.Failure.Message)
		})
	}
}

func TestEvalUsageErrors(t *testing.T) {
	reqFile := writeFile(t, "req.json", evalRequestJSON)
	good := wasmFixture("good")
	tests := []struct {
		name    string
		stdin   string
		args    []string
		wantErr string
	}{
		{name: "no plugin", args: []string{reqFile}, wantErr: "--plugin is required"},
		{name: "plugin not in the config", args: []string{"--config", writeFile(t, "permhost.toml", "[[plugin]]\npath = \"std:plan-mode\"\n"), "--plugin", "team-rules", reqFile}, wantErr: `--plugin "team-rules": `},
		{name: "missing plugin", args: []string{"--plugin", "no/such.wasm", reqFile}, wantErr: "no/such.wasm"},
		{name: "missing request", args: []string{"--plugin", good, "no/such.json"}, wantErr: "no/such.json"},
		{name: "plugin is a directory", args: []string{"--plugin", t.TempDir(), reqFile}, wantErr: "--plugin"},
		{name: "two requests", args: []string{"--plugin", good, reqFile, reqFile}, wantErr: "at most one REQUEST_FILE"},
		{name: "unknown flag", args: []string{"--plugin", good, "--verbose", reqFile}, wantErr: "-verbose"},
		{name: "bad timeout", args: []string{"--plugin", good, "--timeout", "100", reqFile}, wantErr: "needs a unit"},
		{name: "negative timeout", args: []string{"--plugin", good, "--timeout", "-1s", reqFile}, wantErr: "negative"},
		{name: "zero timeout", args: []string{"--plugin", good, "--timeout", "0s", reqFile}, wantErr: "positive deadline"},
		{name: "bad memory", args: []string{"--plugin", good, "--memory", "lots", reqFile}, wantErr: `"lots"`},
		{name: "memory below a page", args: []string{"--plugin", good, "--memory", "1KiB", reqFile}, wantErr: "MemoryBytes"},
		{name: "negative bench", args: []string{"--plugin", good, "--bench", "-1", reqFile}, wantErr: "--bench -1"},
		{name: "config not an object", args: []string{"--plugin", good, "--config-json", `["a"]`, reqFile}, wantErr: "--config-json: want a JSON object"},
		{name: "config not JSON", args: []string{"--plugin", good, "--config-json", `{a}`, reqFile}, wantErr: "--config-json"},
		{name: "empty request", stdin: "", args: []string{"--plugin", good}, wantErr: "request in standard input: not an abi.Request"},
		{name: "bad JSON", stdin: `{"decisionId":`, args: []string{"--plugin", good}, wantErr: "not an abi.Request"},
		{name: "misspelt field", stdin: `{"decision_id":"d1"}`, args: []string{"--plugin", good}, wantErr: `unknown field "decision_id"`},
		{name: "wrong type", stdin: `{"options":{}}`, args: []string{"--plugin", good}, wantErr: "not an abi.Request"},
		{name: "trailing data", stdin: `{} {}`, args: []string{"--plugin", good}, wantErr: "data after the JSON object"},
		{name: "ACP message of another method", stdin: `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`, args: []string{"--plugin", good}, wantErr: `not a session/request_permission message or its params: the last JSON value is "session/prompt"`},
		{name: "ACP params without a toolCall", stdin: `{"sessionId":"s","options":[]}`, args: []string{"--plugin", good}, wantErr: "params need a toolCall"},
		{name: "ACP request with a duplicate key", stdin: `{"sessionId":"s","toolCall":{"toolCallId":"t","title":"ls","title":"rm -rf ~"},"options":[]}`, args: []string{"--plugin", good}, wantErr: "the proxy would not show this request to plugins"},
		{name: "session flags on an abi.Request", args: []string{"--plugin", good, "--agent", "claude", reqFile}, wantErr: "--agent describes the session of an ACP request"},
		{name: "unknown agent", args: []string{"--plugin", good, "--agent", "cursor", "--command", "ls"}, wantErr: `--agent "cursor": want claude, codex, gemini, qwen`},
		{name: "two shorthands", args: []string{"--plugin", good, "--command", "ls", "--read", "x"}, wantErr: "give one of --command, --write, --read and --fetch"},
		{name: "shorthand and a file", args: []string{"--plugin", good, "--command", "ls", reqFile}, wantErr: "not both"},
		{name: "unknown option set", args: []string{"--plugin", good, "--command", "ls", "--options", "cursor"}, wantErr: `options "cursor" is not one of claude, codex, sdk`},
		{name: "unknown standard plugin", args: []string{"--plugin", "std:team-rule", "--command", "ls"}, wantErr: `no such standard plugin "team-rule"`},
		{name: "no plugin to run", args: []string{"--command", "ls"}, wantErr: "--plugin is required (or --config, for its whole chain, or --print-request)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runEvalCmd(t, tt.stdin, append(tt.args, "--cache-dir", "off")...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, stdout, "a usage error prints no result")
			assert.Contains(t, stderr, tt.wantErr)
			assert.True(t, strings.HasPrefix(stderr, "permhost eval: "), "stderr: %s", stderr)
		})
	}
}

func TestEvalHelp(t *testing.T) {
	code, stdout, stderr := runEvalCmd(t, "", "-h")
	assert.Equal(t, exitOK, code)
	assert.Empty(t, stderr)
	for _, s := range []string{"usage: permhost eval [--plugin FILE|std:NAME]", "--command CMD", "--print-request", "Exit status: 0", `"optionId": "allow"`, "-timeout DEADLINE", "-bench N"} {
		assert.Contains(t, stdout, s)
	}
	// The example in the help text is a request eval accepts.
	example := stdout[strings.Index(stdout, "  {\"decisionId\""):strings.Index(stdout, "With --print-request")]
	_, err := decodeEvalRequest([]byte(example))
	assert.NoError(t, err, "help example:\n%s", example)
}

func TestEvalBench(t *testing.T) {
	code, stdout, stderr := runEvalCmd(t, evalRequestJSON, "--plugin", wasmFixture("good"), "--bench", "50", "--cache-dir", "off")
	require.Equal(t, exitOK, code, "stderr: %s", stderr)
	var got benchResult
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got), "stdout: %s", stdout)
	assert.Equal(t, 50, got.Calls)
	assert.Zero(t, got.Failures)
	assert.Positive(t, got.MaxUs)
	assert.LessOrEqual(t, got.P50Us, got.P99Us)
	assert.LessOrEqual(t, got.P99Us, got.MaxUs)
	t.Logf("good fixture, 50 warm calls: p50 %dµs, p99 %dµs, max %dµs", got.P50Us, got.P99Us, got.MaxUs)

	// A plugin that fails on every call fails the warm-up and reports it.
	code, stdout, _ = runEvalCmd(t, evalRequestJSON, "--plugin", wasmFixture("unreachable"), "--bench", "5", "--cache-dir", "off")
	assert.Equal(t, exitPluginFailed, code)
	assert.Contains(t, stdout, `"kind": "trap"`)
}

func TestPercentile(t *testing.T) {
	var d []int64
	for i := int64(1); i <= 100; i++ {
		d = append(d, i)
	}
	tests := []struct {
		n    int
		p    float64
		want int64
	}{
		{100, 50, 50}, {100, 99, 99}, {100, 100, 100}, {100, 1, 1}, {100, 0, 1},
		{1, 50, 1}, {1, 99, 1}, {3, 50, 2}, {3, 99, 3}, {0, 50, 0},
	}
	for _, tt := range tests {
		durations := toDurations(d[:tt.n])
		assert.EqualValues(t, tt.want, percentile(durations, tt.p), "n=%d p=%v", tt.n, tt.p)
	}
}

func toDurations(ns []int64) []time.Duration {
	d := make([]time.Duration, len(ns))
	for i, n := range ns {
		d[i] = time.Duration(n)
	}
	return d
}

// FuzzDecodeEvalRequest checks that any input either is refused with an
// error or decodes to a request that survives a round trip through JSON.
func FuzzDecodeEvalRequest(f *testing.F) {
	f.Add(evalRequestJSON)
	f.Add(`{}`)
	f.Add(`{"abi":{"major":1,"minor":0},"raw":{"sessionId":"s"},"config":{"a":1}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{}}`)
	f.Add(`{"options":[{"optionId":"a","kind":"allow_once","changes":{"known":false}}]} x`)
	f.Fuzz(func(t *testing.T, in string) {
		req, err := decodeEvalRequest([]byte(in))
		if err != nil {
			return
		}
		if req.ABI.Major == 0 && req.ABI.Minor == 0 {
			t.Fatalf("decoded request has no ABI version: %q", in)
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("re-encoding %q: %v", in, err)
		}
		back, err := decodeEvalRequest(again)
		if err != nil {
			t.Fatalf("re-decoding %s (from %q): %v", again, in, err)
		}
		again2, _ := json.Marshal(back)
		if !bytes.Equal(again, again2) {
			t.Fatalf("round trip changed the request:\n%s\n%s", again, again2)
		}
	})
}

func TestReadBounded(t *testing.T) {
	data, err := readAllBounded(strings.NewReader("12345678"), 8)
	require.NoError(t, err)
	assert.Equal(t, "12345678", string(data))

	_, err = readAllBounded(strings.NewReader("123456789"), 8)
	assert.ErrorIs(t, err, errTooLarge)
	assert.ErrorContains(t, err, "more than 8B")

	// An endless file stops at the bound instead of eating memory.
	_, err = readBounded("/dev/zero", 1<<10)
	assert.ErrorIs(t, err, errTooLarge)
}

// --print-request --compact prints the request as the plugin reads it:
// compact JSON on one line, with <, > and & as they are; the indented
// form is the same JSON.
func TestEvalPrintRequestCompact(t *testing.T) {
	args := []string{"--print-request", "--command", "cat a && echo '<b>' > c", "--cwd", "/p", "--home", "/h"}
	code, compact, stderr := runEvalCmd(t, "", append(args, "--compact")...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if strings.Count(compact, "\n") != 1 || !strings.HasSuffix(compact, "}\n") || !strings.Contains(compact, `"cat a && echo '<b>' > c"`) {
		t.Errorf("not one compact line with <, > and & unescaped:\n%s", compact)
	}
	_, indented, _ := runEvalCmd(t, "", args...)
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(indented)); err != nil || buf.String()+"\n" != compact {
		t.Errorf("the indented request compacts to\n%s\nnot\n%s", buf.String(), compact)
	}
	// With a plugin, its configuration is in the request, compact, as the
	// host adds it to every call.
	cfg := writeFile(t, "permhost.toml", "[[plugin]]\npath = \"std:plan-mode\"\n[plugin.config]\nonly_in_mode = \"plan\"\n")
	for _, tt := range []struct {
		extra  []string
		config string
	}{
		{[]string{"--plugin", "std:plan-mode", "--config-json", `{ "only_in_mode": "<plan>" }`}, `{"only_in_mode":"<plan>"}`},
		{[]string{"--config", cfg, "--plugin", "plan-mode"}, `{"only_in_mode":"plan"}`},
	} {
		_, got, stderr := runEvalCmd(t, "", append(append(args, "--compact"), tt.extra...)...)
		if want := strings.TrimSuffix(compact, "}\n") + `,"config":` + tt.config + "}\n"; got != want {
			t.Errorf("%q: got\n%s\nwant\n%s%s", tt.extra, got, want, stderr)
		}
	}
	if code, _, stderr := runEvalCmd(t, "", "--compact", "--plugin", "std:plan-mode", "--command", "ls"); code != exitUsage || !strings.Contains(stderr, "--compact is for --print-request") {
		t.Errorf("--compact without --print-request: exit %d, %q", code, stderr)
	}
}
