package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chainConfig is a permhost.toml of scripted plugins, each deciding what
// its [plugin.config] says: "name layer decision" each.
func chainConfig(t *testing.T, plugins ...[3]string) string {
	t.Helper()
	scripted, err := filepath.Abs(wasmFixture("scripted"))
	require.NoError(t, err)
	var b strings.Builder
	for _, p := range plugins {
		fmt.Fprintf(&b, "[[plugin]]\nname = %q\npath = %q\nlayer = %q\n[plugin.config]\ndecision = '%s'\n\n", p[0], scripted, p[1], p[2])
	}
	return writeFile(t, "permhost.toml", b.String())
}

// eval --config without --plugin runs the configuration's whole chain as
// the proxy decides: layer order, a final reject, an admin's ask that
// narrows the person's choice to one-time options, permhost's grants
// offered beside the agent's one-time options, a closed failure's
// fallback; and prints each plugin's vote.
func TestEvalWholeChain(t *testing.T) {
	const (
		allow   = `{"outcome":"allow","optionId":"allow","reason":"fine"}`
		reject  = `{"outcome":"reject","optionId":"reject","reason":"no"}`
		ask     = `{"outcome":"ask","reason":"a person looks"}`
		abstain = `{"outcome":"abstain"}`
		broken  = `{"outcome":"maybe"}`
	)
	type vote struct{ Name, Layer, Outcome, Skipped string }
	for _, tt := range []struct {
		name    string
		plugins [][3]string
		code    int
		want    string // the decision: outcome decidedBy [shown...]
		votes   []vote
	}{
		{"the user layer allows", [][3]string{{"u", "user", allow}, {"t", "team", abstain}}, exitOK,
			"allow u", []vote{{"t", "team", "abstain", ""}, {"u", "user", "allow", ""}}},
		{"a reject is final", [][3]string{{"u", "user", allow}, {"a", "admin", reject}}, exitOK,
			"reject a", []vote{{"a", "admin", "reject", ""}, {"u", "user", "", "a reject is final"}}},
		{"no plugin decides: the person, with permhost's grants", [][3]string{{"t", "team", abstain}}, exitOK,
			"abstain  allow reject permhost-grant-session permhost-grant-project", []vote{{"t", "team", "abstain", ""}}},
		{"an admin asks: one-time options only", [][3]string{{"a", "admin", ask}, {"u", "user", allow}}, exitOK,
			"ask  allow reject", []vote{{"a", "admin", "ask", ""}, {"u", "user", "allow", ""}}},
		{"a closed failure: the fallback", [][3]string{{"t", "team", broken}, {"u", "user", allow}}, exitPluginFailed,
			"ask  allow reject", []vote{{"t", "team", "", ""}, {"u", "user", "allow", ""}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := chainConfig(t, tt.plugins...)
			code, stdout, stderr := runEvalCmd(t, "", "--config", cfg, "--cache-dir", "off", "--command", "npm test")
			require.Equal(t, tt.code, code, "stdout %s\nstderr %s", stdout, stderr)
			var out struct {
				Decision struct {
					Outcome, DecidedBy, Fallback string
					Shown                        []string
				}
				Plugins []struct {
					vote
					Failure *struct{ Kind string }
				}
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
			got := strings.TrimSpace(strings.Join(append([]string{out.Decision.Outcome, out.Decision.DecidedBy}, out.Decision.Shown...), " "))
			assert.Equal(t, tt.want, got)
			var votes []vote
			for _, p := range out.Plugins {
				votes = append(votes, p.vote)
				assert.Equal(t, p.Outcome == "" && p.Skipped == "", p.Failure != nil, "plugin %s: a vote or a failure", p.Name)
			}
			assert.Equal(t, tt.votes, votes)
			assert.Equal(t, tt.code == exitPluginFailed, out.Decision.Fallback != "", "fallback %q", out.Decision.Fallback)
		})
	}
}

// The whole chain takes its plugins' limits from the configuration, and
// a configuration's mistake is reported as it is before an agent starts.
func TestEvalWholeChainUsage(t *testing.T) {
	cfg := chainConfig(t, [3]string{"t", "team", `{"outcome":"abstain"}`})
	for _, flag := range []string{"--bench=2", "--timeout=1s", "--memory=32MiB", "--isolation=process"} {
		code, stdout, stderr := runEvalCmd(t, "", "--config", cfg, flag, "--command", "ls")
		assert.Equal(t, exitUsage, code, flag)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "is for one plugin (--plugin)", flag)
	}
	bad := chainConfig(t, [3]string{"t", "team", `{"outcome":"abstain"}`})
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(mustReadFile(t, bad), "decision =", "decison =", 1)), 0o600))
	code, stdout, stderr := runEvalCmd(t, "", "--config", bad, "--cache-dir", "off", "--command", "ls")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `permhost.toml:6: plugin[0].config.decison: `)
	assert.Contains(t, stderr, `(did you mean "decision"?)`)
}

func mustReadFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
