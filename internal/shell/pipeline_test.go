package shell

import (
	"fmt"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
)

// flows lists, for a script, every pair "a>b" of commands (by argv[0])
// where a's output can reach b's input through pipes: same pipeline, b at a
// higher stage.
func flows(sh *abi.Shell) []string {
	var out []string
	for _, a := range sh.Commands {
		for _, b := range sh.Commands {
			if a.Pipeline != 0 && a.Pipeline == b.Pipeline && a.Stage < b.Stage {
				out = append(out, a.Argv[0]+">"+b.Argv[0])
			}
		}
	}
	return out
}

// TestPipelines checks which commands feed which: the fact a plugin needs to
// tell "curl x | sh" from "curl x; echo hi | bash".
func TestPipelines(t *testing.T) {
	tests := []struct {
		script string
		want   string // flows, space separated
	}{
		{"curl x | sh", "curl>sh"},
		{"curl x; echo hi | bash", "echo>bash"},
		{"curl x && echo hi | bash", "echo>bash"},
		{"curl x |& sh", "curl>sh"},
		{"a | b | c", "a>b a>c b>c"},
		// A nested pipeline inside a stage continues the outer one.
		{"(curl x | cat) | sh", "curl>cat curl>sh cat>sh"},
		{"curl x | (cd /tmp && sh)", "curl>cd curl>sh"},
		// Stages are a sound order, not an exact one: d (stage 2) cannot
		// feed c (stage 3), but every real flow goes up the stages.
		{"a | (b | c; d)", "a>b a>c a>d b>c d>c"},
		// Wrappers and shells keep the stage of the command they run.
		{"curl x | sudo sh", "curl>sh"},
		{"curl x | bash -c 'cat | sh'", "curl>cat curl>sh cat>sh"},
		{"bash -c 'curl x | sh'", "curl>sh"},
		{`eval "curl x | sh"`, "curl>sh"},
		// A substitution of a stage reads that stage's input.
		{"curl x | echo $(sh)", "curl>sh curl>echo"},
		// Outside any pipe, nothing flows.
		{"curl x > f; sh < f", ""},
		{"echo $(curl x | sh)", "curl>sh"},
		{"curl x & sh", ""},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			sh, _ := AnalyzeScript(tt.script, cwd, home)
			if !sh.Parsed {
				t.Fatalf("not parsed: %s", sh.Reason)
			}
			got := strings.Join(flows(sh), " ")
			if got != tt.want {
				t.Errorf("flows %q, want %q\n%s", got, tt.want, dump(sh))
			}
			for _, c := range sh.Commands {
				if c.Pipeline < 1 || c.Stage < 1 {
					t.Errorf("%q: pipeline %d stage %d, want both ≥ 1", c.Argv, c.Pipeline, c.Stage)
				}
			}
		})
	}
}

// TestPipelineNumbers checks that separate statements get separate
// pipelines, numbered from 1.
func TestPipelineNumbers(t *testing.T) {
	sh, _ := AnalyzeScript("a; b | c; d && e", cwd, home)
	var got []string
	for _, c := range sh.Commands {
		got = append(got, fmt.Sprintf("%s:%d.%d", c.Argv[0], c.Pipeline, c.Stage))
	}
	if want := "a:1.1 b:2.1 c:2.2 d:3.1 e:4.1"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
}

// TestCommandSource checks each command's byte range against the source:
// the statement it is written in, redirects included; a command a wrapper
// runs from a single-quoted script points into the quotes; one run from a
// script not written verbatim points to the wrapper's statement.
func TestCommandSource(t *testing.T) {
	tests := []struct {
		script string
		want   map[string]string // argv[0] -> source text, "" for no range
	}{
		{"git status && npm test > out.txt 2>&1", map[string]string{"git": "git status", "npm": "npm test > out.txt 2>&1"}},
		{"curl -s x | sh", map[string]string{"curl": "curl -s x", "sh": "sh"}},
		{"sudo rm -rf /", map[string]string{"rm": "sudo rm -rf /"}},
		{"bash -c 'rm -rf build; ls'", map[string]string{"rm": "rm -rf build", "ls": "ls"}},
		{`bash -c "rm -rf build"`, map[string]string{"rm": `bash -c "rm -rf build"`}},
		{"eval rm -rf build", map[string]string{"rm": "eval rm -rf build"}},
		{"ls -la &", map[string]string{"ls": "ls -la"}},
		{"! grep -q x f", map[string]string{"grep": "! grep -q x f"}},
		{"eval 'rm -rf build'", map[string]string{"rm": "rm -rf build"}},
		{"echo $(id -u)", map[string]string{"id": "id -u", "echo": "echo $(id -u)"}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			sh, _ := AnalyzeScript(tt.script, cwd, home)
			for _, c := range sh.Commands {
				want, ok := tt.want[c.Argv[0]]
				if !ok {
					continue
				}
				got := ""
				if c.Source != nil {
					got = tt.script[c.Source.Start:c.Source.End]
				}
				if got != want {
					t.Errorf("%q: source %q, want %q", c.Argv, got, want)
				}
			}
		})
	}
}

// TestArgvSource checks the ranges of an argv (codex-acp 0.16's form): the
// script given to bash -lc is found inside its quotes.
func TestArgvSource(t *testing.T) {
	sh, _ := AnalyzeArgv([]string{"/bin/bash", "-lc", "git status && rm -rf build"}, cwd, home)
	if sh.Source != "/bin/bash -lc 'git status && rm -rf build'" {
		t.Fatalf("source %q", sh.Source)
	}
	for _, c := range sh.Commands {
		if c.Source == nil {
			t.Fatalf("%q: no source", c.Argv)
		}
		got := sh.Source[c.Source.Start:c.Source.End]
		if got != strings.Join(c.Argv, " ") {
			t.Errorf("%q: source %q", c.Argv, got)
		}
	}
	sh, _ = AnalyzeArgv([]string{"ls", "-la"}, cwd, home)
	if c := sh.Commands[0]; c.Source == nil || sh.Source[c.Source.Start:c.Source.End] != "ls -la" {
		t.Errorf("plain argv: %+v", c.Source)
	}
}
