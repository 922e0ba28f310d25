package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
)

// runMain runs the CLI in-process and returns the exit status, stdout and
// stderr.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// Help asked for is output: on stdout with exit 0 for every command, so
// that `permhost COMMAND -h | less` shows it; nothing on stderr.
func TestHelpOnStdout(t *testing.T) {
	var names []string
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) < 9 {
		t.Fatalf("only %d commands: %v", len(names), names)
	}
	type invocation struct {
		args []string
		want string
	}
	var cases []invocation
	for _, n := range names {
		for _, h := range []string{"-h", "--help"} {
			cases = append(cases, invocation{[]string{n, h}, "usage:"})
		}
		cases = append(cases, invocation{[]string{"help", n}, "usage:"})
	}
	for _, sub := range []string{"keygen", "sign", "verify", "manifest"} {
		cases = append(cases, invocation{[]string{"bundle", sub, "-h"}, "permhost bundle " + sub})
	}
	cases = append(cases,
		invocation{[]string{"-h"}, "usage: permhost COMMAND"},
		invocation{[]string{"--help"}, "usage: permhost COMMAND"},
		invocation{[]string{"help"}, "usage: permhost COMMAND"},
	)
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := runMain(t, c.args...)
			if code != exitOK || !strings.Contains(stdout, c.want) || stderr != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0, %q on stdout and nothing on stderr", code, stdout, stderr, c.want)
			}
		})
	}
}

// Mistakes still go to stderr with exit 2, the usage after the message.
func TestUsageMistakesOnStderr(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"nosuchcommand"},
		{"help", "nosuchcommand"},
		{"run", "--no-such-flag"},
		{"version", "extra"},
		{"bundle"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runMain(t, args...)
			if code != exitUsage || stdout != "" || stderr == "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2, nothing on stdout, a message on stderr", code, stdout, stderr)
			}
		})
	}
	_, _, stderr := runMain(t, "run", "--no-such-flag")
	if !strings.HasPrefix(stderr, "flag provided but not defined: -no-such-flag\n") || !strings.Contains(stderr, "usage: permhost run") {
		t.Errorf("bad flag: stderr %q", stderr)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, stdout, stderr := runMain(t, args...)
		if code != exitOK || !strings.HasPrefix(stdout, "permhost ") || stderr != "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

func TestVersionText(t *testing.T) {
	setting := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go install of a release", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/permhost/permhost", Version: "v1.4.0"},
			Settings: setting("GOOS", "linux", "GOARCH", "amd64")},
			"permhost v1.4.0\nrevision unknown (built without VCS information, e.g. -buildvcs=false or outside a checkout)\nbuilt with go1.26.0 for linux/amd64\n"},
		{"a checkout with changes", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261201095943-42e2479c0a8b+dirty"},
			Settings: setting("vcs", "git", "vcs.revision", "42e2479c0a8ba4602cbc5438c6481e00eda92e6b", "vcs.time", "2026-12-01T09:59:43Z", "vcs.modified", "true", "GOOS", "darwin", "GOARCH", "arm64")},
			"permhost v0.0.0-20261201095943-42e2479c0a8b+dirty\nrevision 42e2479c0a8ba4602cbc5438c6481e00eda92e6b (with uncommitted changes)\ncommit time 2026-12-01T09:59:43Z\nbuilt with go1.26.0 for darwin/arm64\n"},
		{"a clean checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: setting("vcs.revision", "42e2479c", "vcs.modified", "false")},
			"permhost (devel)\nrevision 42e2479c\nbuilt with go1.26.0\n"},
		{"no build info", nil, "permhost unknown (no build information in the binary)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionText(tt.bi); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 permission decisions"}, {1, "1 permission decision"}, {2, "2 permission decisions"}, {21, "21 permission decisions"}} {
		if got := count(tt.n, "permission decision"); got != tt.want {
			t.Errorf("count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	var stderr bytes.Buffer
	p := newRunPrinter(&bytes.Buffer{}, &stderr, false)
	p.event(permEvent("selected", "allow", "allow_once", "Allow", "team-rules", "ok", true))
	p.stopped("end_turn")
	if want := "(0 tool calls, 1 permission decision)"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
}

// An unknown command near a real one is named as the probable typo.
func TestUnknownCommandDidYouMean(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"chek"}, `permhost: unknown command "chek" (did you mean "check"?)`},
		{[]string{"help", "replya"}, `permhost help: unknown command "replya" (did you mean "replay"?)`},
		{[]string{"zzzzzzzz"}, `permhost: unknown command "zzzzzzzz"`},
	} {
		code, _, stderr := runMain(t, tt.args...)
		if first, _, _ := strings.Cut(stderr, "\n"); code != exitUsage || first != tt.want {
			t.Errorf("%v: exit %d, first line %q; want %d, %q", tt.args, code, first, exitUsage, tt.want)
		}
	}
}

// permhost help TOPIC prints the reference carried in the binary, and the
// help texts point to these topics rather than to repository files.
func TestHelpTopics(t *testing.T) {
	for topic, want := range map[string]string{
		"config":    "[[plugin]]",
		"test-file": "[[case]]",
		"abi":       "permhost_check_config",
	} {
		code, stdout, stderr := runMain(t, "help", topic)
		if code != exitOK || stderr != "" || !strings.Contains(stdout, want) || !strings.HasPrefix(stdout, "# ") {
			t.Errorf("help %s: exit %d, stderr %q, %d bytes without %q", topic, code, stderr, len(stdout), want)
		}
	}
	if _, stdout, _ := runMain(t, "help"); !strings.Contains(stdout, "test-file") {
		t.Errorf("help lists no topics:\n%s", stdout)
	}
	if _, stdout, _ := runMain(t, "help", "agents"); !strings.Contains(stdout, "`permhost help abi`") || strings.Contains(stdout, "](abi.md") {
		t.Errorf("help agents: its links to abi.md are not permhost help abi:\n%.500s", stdout)
	}
}

// repoPath matches a mention of a file of the repository, which a user
// with only the binary does not have.
var repoPath = regexp.MustCompile(`\b(?:docs|testdata|plugins/examples|examples)/|\.md\b|README|RATIONALE|BENCHMARKS`)

// Every help text, init's output and the starter configuration it writes
// point to what the binary prints (permhost help TOPIC, permhost plugins
// NAME), not to files of the repository.
func TestHelpNamesNoRepositoryFile(t *testing.T) {
	texts := map[string]string{}
	_, texts["permhost -h"], _ = runMain(t, "-h")
	for name, c := range commands {
		if !c.hidden {
			_, texts[name+" -h"], _ = runMain(t, name, "-h")
		}
	}
	for _, sub := range []string{"keygen", "sign", "verify"} {
		_, texts["bundle "+sub+" -h"], _ = runMain(t, "bundle", sub, "-h")
	}
	for _, sub := range []string{"list", "revoke", "clear"} {
		_, texts["grants "+sub+" -h"], _ = runMain(t, "grants", sub, "-h")
	}
	for _, agent := range []string{"", "claude", "codex", "gemini", "qwen"} {
		dir := t.TempDir()
		args := []string{"init", "--dir", dir}
		if agent != "" {
			args = append(args, "--agent", agent)
		}
		code, stdout, stderr := runMain(t, args...)
		if code != exitOK {
			t.Fatalf("init %s: exit %d: %s", agent, code, stderr)
		}
		file, err := os.ReadFile(filepath.Join(dir, "permhost.toml"))
		if err != nil {
			t.Fatal(err)
		}
		texts["init "+agent] = strings.ReplaceAll(stdout, dir, "DIR")
		texts["the starter of init "+agent] = string(file)
	}
	for name, text := range texts {
		if text == "" {
			t.Errorf("%s: no text", name)
		}
		for line := range strings.Lines(text) {
			if strings.HasPrefix(name, "the starter") && !strings.HasPrefix(line, "#") {
				continue // the policy's own globs name a project's docs/
			}
			if m := repoPath.FindString(line); m != "" {
				t.Errorf("%s names a repository file (%q): %s", name, m, strings.TrimSpace(line))
			}
		}
	}
	if !strings.Contains(texts["the starter of init "], "permhost plugins team-rules") || !strings.Contains(texts["the starter of init "], "permhost help config") {
		t.Errorf("the starter does not point to the docs the binary prints:\n%s", texts["the starter of init "])
	}
}

// permhost test reports what a plugin's own check finds in the test
// file's [config] as the file's mistake, with its line, rather than
// failing every case.
func TestTestFilePluginConfigCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tests.toml")
	os.WriteFile(file, []byte(`plugin = "std:team-rules"
[[config.rules]]
action = "allow"
family = "read"
[[config.rules]]
acton = "reject"
family = "shell"
[[case]]
kind = "read"
path = "a"
expect = "allow"
`), 0o600)
	code, _, stderr := runMain(t, "test", "--cache-dir", filepath.Join(dir, "cache"), file)
	want := "permhost test: " + file + `:6: config.rules[1].acton: plugin "team-rules": unknown key (did you mean "action"?)` + "\n"
	if code != exitUsage || stderr != want {
		t.Errorf("exit %d, stderr\n%s\nwant %d,\n%s", code, stderr, exitUsage, want)
	}
}
