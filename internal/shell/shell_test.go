package shell

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
)

const (
	cwd  = "/home/dev/project"
	home = "/home/dev"
)

// check is one expectation about an analysis.
type check func(t *testing.T, sh *abi.Shell, paths []abi.Path)

// has wants a command with exactly this argv, and returns it for more checks.
func find(sh *abi.Shell, argv ...string) *abi.Command {
	for i, c := range sh.Commands {
		if strings.Join(c.Argv, "\x00") == strings.Join(argv, "\x00") {
			return &sh.Commands[i]
		}
	}
	return nil
}

func has(argv ...string) check {
	return func(t *testing.T, sh *abi.Shell, _ []abi.Path) {
		t.Helper()
		assert.NotNil(t, find(sh, argv...), "no command %q in %s", argv, dump(sh))
	}
}

// in wants a command with this argv in this context, wrapped so.
func in(ctx string, wrappers []string, argv ...string) check {
	return func(t *testing.T, sh *abi.Shell, _ []abi.Path) {
		t.Helper()
		c := find(sh, argv...)
		if assert.NotNil(t, c, "no command %q in %s", argv, dump(sh)) {
			assert.Equal(t, ctx, c.Context, "context of %q", argv)
			assert.Equal(t, wrappers, c.Wrappers, "wrappers of %q", argv)
		}
	}
}

func dynamic(argv ...string) check {
	return func(t *testing.T, sh *abi.Shell, _ []abi.Path) {
		t.Helper()
		c := find(sh, argv...)
		if assert.NotNil(t, c, "no command %q in %s", argv, dump(sh)) {
			assert.True(t, c.Dynamic, "%q should be dynamic", argv)
		}
	}
}

func static(argv ...string) check {
	return func(t *testing.T, sh *abi.Shell, _ []abi.Path) {
		t.Helper()
		c := find(sh, argv...)
		if assert.NotNil(t, c, "no command %q in %s", argv, dump(sh)) {
			assert.False(t, c.Dynamic, "%q should not be dynamic", argv)
		}
	}
}

func parsed(t *testing.T, sh *abi.Shell, _ []abi.Path) {
	t.Helper()
	assert.True(t, sh.Parsed, "reason: %s", sh.Reason)
	assert.Empty(t, sh.Reason)
}

func unparsed(reason string) check {
	return func(t *testing.T, sh *abi.Shell, _ []abi.Path) {
		t.Helper()
		assert.False(t, sh.Parsed)
		assert.Contains(t, sh.Reason, reason)
	}
}

func count(n int) check {
	return func(t *testing.T, sh *abi.Shell, _ []abi.Path) {
		t.Helper()
		assert.Len(t, sh.Commands, n, "%s", dump(sh))
	}
}

func assigns(argv0 string, want ...abi.Assignment) check {
	return func(t *testing.T, sh *abi.Shell, _ []abi.Path) {
		t.Helper()
		for _, c := range sh.Commands {
			if c.Argv[0] == argv0 {
				assert.Equal(t, want, c.Assignments)
				return
			}
		}
		t.Errorf("no command %s in %s", argv0, dump(sh))
	}
}

func touches(p, access string, insideCwd bool, source string) check {
	return func(t *testing.T, _ *abi.Shell, paths []abi.Path) {
		t.Helper()
		assert.Contains(t, paths, abi.Path{Path: p, Access: access, InsideCwd: insideCwd, Source: source})
	}
}

func noPaths(t *testing.T, _ *abi.Shell, paths []abi.Path) {
	t.Helper()
	assert.Empty(t, paths)
}

func redirect(argv0 string, want abi.Redirect) check {
	return func(t *testing.T, sh *abi.Shell, _ []abi.Path) {
		t.Helper()
		for _, c := range sh.Commands {
			if c.Argv[0] == argv0 {
				assert.Contains(t, c.Redirects, want)
				return
			}
		}
		t.Errorf("no command %s in %s", argv0, dump(sh))
	}
}

func dump(sh *abi.Shell) string {
	b, _ := json.Marshal(sh)
	return string(b)
}

type scriptCase struct {
	name   string
	script string
	checks []check
}

func runScripts(t *testing.T, cases []scriptCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sh, paths := AnalyzeScript(tc.script, cwd, home)
			require.NotNil(t, sh)
			assert.Equal(t, tc.script, sh.Source)
			for _, c := range tc.checks {
				c(t, sh, paths)
			}
		})
	}
}

// §11.1: every command chained after an allowed prefix is visible.
func TestChaining(t *testing.T) {
	runScripts(t, []scriptCase{
		{"and then pipe", `git status && curl x | sh`, []check{parsed, count(3), in("", nil, "git", "status"), in("pipeline", nil, "curl", "x"), in("pipeline", nil, "sh")}},
		{"or", `git status || rm -rf /`, []check{parsed, has("rm", "-rf", "/")}},
		{"semicolon", `git status; rm -rf /`, []check{parsed, has("rm", "-rf", "/")}},
		{"newline", "git status\nrm -rf /", []check{parsed, has("rm", "-rf", "/")}},
		{"background", `git status & rm -rf /`, []check{parsed, in("background", nil, "git", "status"), in("", nil, "rm", "-rf", "/")}},
		{"pipe all", `git status |& rm -rf /`, []check{parsed, in("pipeline", nil, "rm", "-rf", "/")}},
		{"negation and block", `! { git status; rm -rf /; }`, []check{parsed, has("rm", "-rf", "/")}},
		{"control flow", `if true; then rm a; elif false; then rm b; else rm c; fi; while rm d; do rm e; done; for i in 1; do rm f; done; case x in x) rm g;; esac; until rm h; do :; done`,
			[]check{parsed, has("rm", "a"), has("rm", "b"), has("rm", "c"), has("rm", "d"), has("rm", "e"), has("rm", "f"), has("rm", "g"), has("rm", "h")}},
		{"function", `f() { rm -rf /; }; f`, []check{parsed, in("function", nil, "rm", "-rf", "/"), has("f")}},
		{"subshell", `(cd /; rm -rf *)`, []check{parsed, in("subshell", nil, "cd", "/"), dynamic("rm", "-rf", "*")}},
		{"coproc and time", `coproc rm a; time rm b`, []check{parsed, in("background", nil, "rm", "a"), in("wrapped", []string{"time"}, "rm", "b")}},
	})
}

// §11.2: commands hidden in arguments are walked.
func TestHiddenSubstitution(t *testing.T) {
	runScripts(t, []scriptCase{
		{"dollar paren", `echo $(rm -rf /)`, []check{parsed, in("substitution", nil, "rm", "-rf", "/"), dynamic("echo", "$(rm -rf /)")}},
		{"backticks", "echo `rm -rf /`", []check{parsed, in("substitution", nil, "rm", "-rf", "/")}},
		{"process substitution in", `diff <(curl a) b`, []check{parsed, in("process-substitution", nil, "curl", "a")}},
		{"process substitution out", `echo x > >(sh)`, []check{parsed, in("process-substitution", nil, "sh")}},
		{"arithmetic", `echo $(( $(rm -rf /) + 1 ))`, []check{parsed, has("rm", "-rf", "/")}},
		{"arithmetic command", `(( x = $(rm a) ))`, []check{parsed, has("rm", "a")}},
		{"parameter default", `echo ${x:-$(rm a)}`, []check{parsed, has("rm", "a")}},
		{"test clause", `[[ -n $(rm a) ]]`, []check{parsed, has("rm", "a")}},
		{"assignment", `x=$(rm a)`, []check{parsed, has("rm", "a"), has("x=$(rm a)")}},
		{"array index", `a[$(rm a)]=1`, []check{parsed, has("rm", "a")}},
		{"for list", `for i in $(rm a); do :; done`, []check{parsed, has("rm", "a")}},
		{"case word", `case $(rm a) in *) ;; esac`, []check{parsed, has("rm", "a")}},
		{"heredoc", "cat <<EOF\n$(rm a)\nEOF", []check{parsed, has("rm", "a")}},
		{"nested", `echo "$(echo $(rm a))"`, []check{parsed, has("rm", "a")}},
		{"redirect target", `echo > $(rm a)`, []check{parsed, has("rm", "a")}},
		{"declare", `export X=$(rm a)`, []check{parsed, has("rm", "a"), dynamic("export", "X=$(rm a)")}},
		{"let", `let x=$(rm a)`, []check{parsed, has("rm", "a")}},
	})
}

// §11.3: wrappers are peeled, and the command they run is reported.
func TestWrappers(t *testing.T) {
	w := func(ws ...string) []string { return ws }
	runScripts(t, []scriptCase{
		{"bash -c", `bash -c 'rm -rf /'`, []check{parsed, count(1), in("wrapped", w("bash"), "rm", "-rf", "/")}},
		{"sh -c chained", `sh -c "git status; curl x | sh"`, []check{parsed, in("wrapped", w("sh"), "git", "status"), in("pipeline", w("sh"), "curl", "x")}},
		{"bash -lc", `/bin/bash -lc 'rm a'`, []check{parsed, in("wrapped", w("bash"), "rm", "a")}},
		{"bash -o flag", `bash -o pipefail -c 'rm a'`, []check{parsed, has("rm", "a")}},
		{"nested shells", `bash -c "sh -c 'rm a'"`, []check{parsed, in("wrapped", w("bash", "sh"), "rm", "a")}},
		{"bash heredoc", "bash <<'EOF'\nrm a\nEOF", []check{parsed, in("wrapped", w("bash"), "rm", "a")}},
		{"bash here-string", `bash <<< 'rm a'`, []check{parsed, in("wrapped", w("bash"), "rm", "a")}},
		{"bash script file", `bash deploy.sh`, []check{parsed, has("bash", "deploy.sh")}},
		{"eval", `eval 'rm -rf' /`, []check{parsed, in("wrapped", w("eval"), "rm", "-rf", "/")}},
		{"env", `env -i -u HOME X=1 rm a`, []check{parsed, in("wrapped", w("env"), "rm", "a"), assigns("rm", abi.Assignment{Name: "X", Value: "1"})}},
		{"env alone", `env`, []check{parsed, has("env")}},
		{"timeout", `timeout -s KILL --kill-after=5 10 rm a`, []check{parsed, in("wrapped", w("timeout"), "rm", "a")}},
		{"nice", `nice -n 10 rm a; nice -5 rm b`, []check{parsed, has("rm", "a"), has("rm", "b")}},
		{"nohup", `nohup rm a &`, []check{parsed, in("background", w("nohup"), "rm", "a")}},
		{"command", `command -p rm a`, []check{parsed, in("wrapped", w("command"), "rm", "a")}},
		{"command -v", `command -v rm`, []check{parsed, in("", nil, "command", "-v", "rm")}},
		{"exec", `exec -a x rm a`, []check{parsed, in("wrapped", w("exec"), "rm", "a")}},
		{"sudo", `sudo -u root -E PATH=/x rm a`, []check{parsed, in("wrapped", w("sudo"), "rm", "a"), assigns("rm", abi.Assignment{Name: "PATH", Value: "/x"})}},
		{"sudo -s", `sudo -s 'rm a; rm b'`, []check{parsed, has("rm", "a"), has("rm", "b")}},
		{"setsid stdbuf time", `setsid -f stdbuf -oL time -p rm a`, []check{parsed, in("wrapped", w("setsid", "stdbuf", "time"), "rm", "a")}},
		{"xargs", `ls | xargs -0 -n 1 rm -f`, []check{parsed, in("pipeline", w("xargs"), "rm", "-f"), dynamic("rm", "-f")}},
		{"xargs sh -c", `ls | xargs -I{} sh -c 'rm {}'`, []check{parsed, in("pipeline", w("xargs", "sh"), "rm", "{}")}},
		{"xargs default", `ls | xargs`, []check{parsed, in("pipeline", w("xargs"), "echo")}},
		{"find -exec", `find . -name '*.o' -exec rm -f {} \; -delete`, []check{parsed, has("find", ".", "-name", "*.o", "-exec", "rm", "-f", "{}", ";", "-delete"), in("wrapped", w("find"), "rm", "-f", "{}")}},
		{"find -execdir +", `find . -execdir sh -c 'rm "$@"' _ {} +`, []check{parsed, in("wrapped", w("find", "sh"), "rm", `"$@"`)}},
		{"watch", `watch -n 1 'rm a'`, []check{parsed, in("wrapped", w("watch"), "rm", "a")}},
		{"flock", `flock /tmp/l rm a; flock -w 3 /tmp/l -c 'rm b'`, []check{parsed, in("wrapped", w("flock"), "rm", "a"), in("wrapped", w("flock"), "rm", "b")}},
		{"trap", `trap 'rm a' EXIT`, []check{parsed, in("wrapped", w("trap"), "rm", "a")}},
		{"builtin", `builtin command rm a`, []check{parsed, in("wrapped", w("builtin", "command"), "rm", "a")}},
		{"all at once", `env X=1 timeout 5 nice nohup sudo bash -c 'eval rm a'`, []check{parsed, in("wrapped", w("env", "timeout", "nice", "nohup", "sudo", "bash", "eval"), "rm", "a")}},
		{"empty bash -c", `bash -c ''`, []check{parsed, has("bash", "-c", "")}},
		{"non-literal bash -c", `bash -c "$X"`, []check{unparsed("not literal"), has("bash", "-c", `"$X"`)}},
		{"non-literal eval", `eval "$CMD"`, []check{unparsed("eval of a non-literal"), dynamic("eval", `"$CMD"`)}},
		{"unknown wrapper option", `timeout --frobnicate 5 rm a`, []check{unparsed("unknown option --frobnicate"), has("timeout", "--frobnicate", "5", "rm", "a")}},
		{"env -S", `env -S 'rm a'`, []check{unparsed("env -S")}},
		{"fish", `fish -c 'rm a'`, []check{unparsed("fish"), has("fish", "-c", "rm a")}},
	})
}

// §11.4: however a name is written, the resolved argv shows it.
func TestNameObfuscation(t *testing.T) {
	runScripts(t, []scriptCase{
		{"absolute path", `/bin/rm a`, []check{parsed, static("/bin/rm", "a")}},
		{"backslash", `\rm a`, []check{parsed, static("rm", "a")}},
		{"double quotes", `"r"m a`, []check{parsed, static("rm", "a")}},
		{"empty single quotes", `r''m a`, []check{parsed, static("rm", "a")}},
		{"ansi-c", `$'\x72m' a`, []check{parsed, static("rm", "a")}},
		{"variable", `$CMD a`, []check{parsed, dynamic("$CMD", "a")}},
		{"braced variable", `${x} a`, []check{parsed, dynamic("${x}", "a")}},
		{"brace expansion", `{rm,-rf,/}`, []check{parsed, dynamic("{rm,-rf,/}")}},
		{"command rm", `command rm a`, []check{parsed, in("wrapped", []string{"command"}, "rm", "a")}},
		{"alias", `alias ls='rm -rf /'; ls`, []check{unparsed("alias")}},
		{"glob", `find * -name x`, []check{parsed, dynamic("find", "*", "-name", "x")}},
		{"quoted tilde", `echo "~"`, []check{parsed, static("echo", "~")}},
		{"tilde", `ls ~ ~/a`, []check{parsed, static("ls", home, home+"/a")}},
		{"other user's tilde", `ls ~root`, []check{parsed, dynamic("ls", "~root")}},
	})
}

// §11.5: assignments before a command are reported.
func TestEnvironment(t *testing.T) {
	runScripts(t, []scriptCase{
		{"PATH prefix", `PATH=/evil:$PATH git status`, []check{parsed, static("git", "status"), assigns("git", abi.Assignment{Name: "PATH", Value: "/evil:$PATH"})}},
		{"LD_PRELOAD", `LD_PRELOAD=/tmp/x.so ls`, []check{parsed, assigns("ls", abi.Assignment{Name: "LD_PRELOAD", Value: "/tmp/x.so"})}},
		{"env GIT_SSH_COMMAND", `env GIT_SSH_COMMAND='sh -c x' git fetch`, []check{parsed, assigns("git", abi.Assignment{Name: "GIT_SSH_COMMAND", Value: "sh -c x"})}},
		{"inherited into bash -c", `A=1 bash -c 'B=2 git status'`, []check{parsed, assigns("git", abi.Assignment{Name: "A", Value: "1"}, abi.Assignment{Name: "B", Value: "2"})}},
		{"assignment alone", `PATH=/evil; git status`, []check{parsed, has("PATH=/evil"), assigns("PATH=/evil", abi.Assignment{Name: "PATH", Value: "/evil"}),
			assigns("git", abi.Assignment{Name: "PATH", Value: "/evil"})}},
		{"export", `export PATH=/evil; git status`, []check{parsed, static("export", "PATH=/evil"), assigns("git", abi.Assignment{Name: "PATH", Value: "/evil"})}},
		{"subshell assignment stays inside", `(PATH=/evil); git status`, []check{parsed, assigns("git")}},
	})
}

// §11.6: writes through redirections and tee are reported as paths.
func TestWritingRedirects(t *testing.T) {
	runScripts(t, []scriptCase{
		{"home file", `echo x > ~/.bashrc`, []check{parsed, touches(home+"/.bashrc", abi.AccessWrite, false, "redirect"),
			redirect("echo", abi.Redirect{Op: ">", Target: home + "/.bashrc", Write: true})}},
		{"append", `echo x >> .env`, []check{parsed, touches(cwd+"/.env", abi.AccessWrite, true, "redirect")}},
		{"every writing op", `a >| o1; a &> o2; a &>> o3; a <> o4; a 2> o5; a >& o6`, []check{parsed,
			touches(cwd+"/o1", "write", true, "redirect"), touches(cwd+"/o2", "write", true, "redirect"), touches(cwd+"/o3", "write", true, "redirect"),
			touches(cwd+"/o4", "write", true, "redirect"), touches(cwd+"/o5", "write", true, "redirect"), touches(cwd+"/o6", "write", true, "redirect")}},
		{"dup and dev null", `a 2>&1 >/dev/null`, []check{parsed, noPaths, redirect("a", abi.Redirect{Op: "2>&", Target: "1"}), redirect("a", abi.Redirect{Op: ">", Target: "/dev/null"})}},
		{"read", `wc < data.txt`, []check{parsed, touches(cwd+"/data.txt", "read", true, "redirect")}},
		{"tee", `echo x | tee -a ~/.profile /dev/null out`, []check{parsed, touches(home+"/.profile", "write", false, "argv"), touches(cwd+"/out", "write", true, "argv")}},
		{"cd then write", `cd sub && echo > out`, []check{parsed, touches(cwd+"/sub/out", "write", true, "redirect")}},
		{"cd out then write", `cd ../.. && echo > etc`, []check{parsed, touches("/home/etc", "write", false, "redirect")}},
		{"cd in subshell does not leak", `(cd /etc); echo > out`, []check{parsed, touches(cwd+"/out", "write", true, "redirect")}},
		{"cd in bash -c does not leak", `bash -c 'cd /etc'; echo > out`, []check{parsed, touches(cwd+"/out", "write", true, "redirect")}},
		{"cd inside bash -c", `bash -c 'cd /etc && echo > passwd'`, []check{parsed, touches("/etc/passwd", "write", false, "redirect")}},
		{"eval cd leaks", `eval cd /etc; echo > passwd`, []check{parsed, touches("/etc/passwd", "write", false, "redirect")}},
		{"cd to unknown", `cd "$X" && echo > out`, []check{unparsed("unknown"), noPaths}},
		{"conditional cd", `if x; then cd /etc; fi; echo > out`, []check{unparsed("unknown")}},
		{"cd home", `cd && echo > .bashrc`, []check{parsed, touches(home+"/.bashrc", "write", false, "redirect")}},
		{"dynamic target", `echo > "$HOME/.bashrc"`, []check{parsed, noPaths, redirect("echo", abi.Redirect{Op: ">", Target: `"$HOME/.bashrc"`, Write: true})}},
		{"block redirect", `{ echo a; echo b; } > out`, []check{parsed, redirect("echo", abi.Redirect{Op: ">", Target: "out", Write: true}), touches(cwd+"/out", "write", true, "redirect")}},
		{"wrapped redirect", `bash -c 'rm a' > log`, []check{parsed, redirect("rm", abi.Redirect{Op: ">", Target: "log", Write: true})}},
		{"find -fprint and time -o", `find . -fprint list; /usr/bin/time -o t.txt ls`, []check{parsed, touches(cwd+"/list", "write", true, "argv"), touches(cwd+"/t.txt", "write", true, "argv")}},
	})
}

// §11.8: no cap: a long script is walked to its last command.
func TestNoCap(t *testing.T) {
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "echo %d && ", i)
	}
	b.WriteString("rm -rf /")
	sh, _ := AnalyzeScript(b.String(), cwd, home)
	assert.True(t, sh.Parsed, sh.Reason)
	assert.Len(t, sh.Commands, 501)
	assert.Equal(t, []string{"rm", "-rf", "/"}, sh.Commands[500].Argv)

	// Deep nesting is walked too.
	nested := "rm -rf /"
	for range 50 {
		nested = "echo $(" + nested + ")"
	}
	sh, _ = AnalyzeScript(nested, cwd, home)
	assert.True(t, sh.Parsed, sh.Reason)
	assert.NotNil(t, find(sh, "rm", "-rf", "/"))
}

// §11.9: what parsers disagree on is never trusted.
func TestParserDifferentials(t *testing.T) {
	runScripts(t, []scriptCase{
		{"carriage return", "git status\r\nrm -rf /", []check{unparsed("carriage return")}},
		{"carriage return in bash -c", "bash -c $'ls\\r'", []check{unparsed("carriage return")}},
		{"zsh", `zsh -lc 'rm a'`, []check{unparsed("zsh"), in("wrapped", []string{"zsh"}, "rm", "a")}},
		{"parse error", `echo $(`, []check{unparsed("parse error")}},
		{"parse error in bash -c", `bash -c 'if then'`, []check{unparsed("parse error")}},
	})
}

// §11.10: a script run by an interpreter is at least visible.
func TestNonShellEscape(t *testing.T) {
	runScripts(t, []scriptCase{
		{"python", `echo 'import os' > x.py && python x.py`, []check{parsed, static("python", "x.py"), touches(cwd+"/x.py", "write", true, "redirect")}},
		{"bash file", `bash x.sh`, []check{parsed, static("bash", "x.sh")}},
	})
}

func TestAnalyzeRawInput(t *testing.T) {
	tests := []struct {
		name     string
		rawInput string
		argv     [][]string
		parsed   bool
		source   string
	}{
		{"claude", `{"command":"rm -rf build","description":"Remove build dir"}`, [][]string{{"rm", "-rf", "build"}}, true, "rm -rf build"},
		{"codex", `{"call_id":"c","command":["/bin/bash","-lc","rm -rf build"],"cwd":"/srv/app","parsed_cmd":[]}`, [][]string{{"rm", "-rf", "build"}}, true, "/bin/bash -lc 'rm -rf build'"},
		{"plain argv", `{"command":["rm","-rf","a b"]}`, [][]string{{"rm", "-rf", "a b"}}, true, "rm -rf 'a b'"},
		{"argv with wrapper", `{"command":["env","X=1","rm","a"]}`, [][]string{{"rm", "a"}}, true, "env 'X=1' rm a"},
		{"v2 subject", `{"type":"command","command":"ls","cwd":"/srv"}`, [][]string{{"ls"}}, true, "ls"},
		{"empty argv", `{"command":[]}`, nil, false, ""},
		{"wrong type", `{"command":42}`, nil, false, "42"},
		{"mixed argv", `{"command":["ls",1]}`, nil, false, `["ls",1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh, _ := Analyze(json.RawMessage(tt.rawInput), cwd, home)
			require.NotNil(t, sh)
			assert.Equal(t, tt.parsed, sh.Parsed, sh.Reason)
			assert.Equal(t, tt.source, sh.Source)
			var got [][]string
			for _, c := range sh.Commands {
				got = append(got, c.Argv)
			}
			assert.Equal(t, tt.argv, got)
			assert.NotNil(t, sh.Commands)
		})
	}
	for _, none := range []string{``, `null`, `{}`, `{"command":null}`, `{"file_path":"/x"}`, `"ls"`, `[1]`} {
		sh, paths := Analyze(json.RawMessage(none), cwd, home)
		assert.Nil(t, sh, none)
		assert.Nil(t, paths, none)
	}
	// codex's cwd is where the command runs; insideCwd is the session's.
	_, paths := Analyze(json.RawMessage(`{"command":["bash","-c","echo > out; echo > ../project/x"],"cwd":"/home/dev/app"}`), cwd, home)
	assert.Equal(t, []abi.Path{
		{Path: "/home/dev/app/out", Access: "write", InsideCwd: false, Source: "redirect"},
		{Path: cwd + "/x", Asked: "/home/dev/app/../project/x", Access: "write", InsideCwd: true, Source: "redirect"},
	}, paths)
}

func TestUnknownCwdAndHome(t *testing.T) {
	sh, paths := AnalyzeScript(`echo > out; echo > /abs; ls ~`, "", "")
	assert.True(t, sh.Parsed)
	assert.Equal(t, []abi.Path{{Path: "/abs", Access: "write", Source: "redirect"}}, paths)
	assert.NotNil(t, find(sh, "ls", "~"))
	assert.True(t, find(sh, "ls", "~").Dynamic)
}

// TestEachCommandOnce guards against walking a substitution twice.
func TestEachCommandOnce(t *testing.T) {
	sh, _ := AnalyzeScript(`declare x=$(rm a) y[$(rm b)]=1; a[$(rm c)]=$(rm d)`, cwd, home)
	var rms []string
	for _, c := range sh.Commands {
		if c.Argv[0] == "rm" {
			rms = append(rms, c.Argv[1])
		}
	}
	assert.ElementsMatch(t, []string{"a", "b", "c", "d"}, rms)
}
