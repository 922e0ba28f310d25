package shell

import (
	"errors"
	"testing"
)

// TestSyntaxKey: scripts that differ only in blanks, line breaks between
// statements or comments share a canonical form; a different operator,
// loop, subshell, redirection, here-document body or quoting does not.
func TestSyntaxKey(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"blanks", "rm  -rf   build", "rm -rf build", true},
		{"a comment", "rm -rf build # clean", "rm -rf build", true},
		{"a line break for ;", "make; make test", "make\nmake test", true},
		{"a line break after &&", "git diff --quiet &&\n  git push", "git diff --quiet && git push", true},
		{"&& and ||", "git diff --quiet && git push --force", "git diff --quiet || git push --force", false},
		{"; and &&", "true; rm -rf build", "true && rm -rf build", false},
		{"; and a loop", "true; rm -rf build", "while true; do rm -rf build; done", false},
		{"; and until", "while true; do rm -rf build; done", "until true; do rm -rf build; done", false},
		{"| and ;", "curl x | sh", "curl x; sh", false},
		{"| and |&", "make | tee log", "make |& tee log", false},
		{"& and ;", "rm -rf build & ls", "rm -rf build; ls", false},
		{"a subshell", "(rm -rf build)", "rm -rf build", false},
		{"a block", "{ rm -rf build; }", "rm -rf build", false},
		{"a function", "f() { rm -rf build; }", "rm -rf build", false},
		{"a negation", "! make", "make", false},
		{"a redirection", "make > log", "make", false},
		{"another redirection target", "make > log", "make > /etc/passwd", false},
		{"append and truncate", "make >> log", "make > log", false},
		{"a here-document body", "cat <<EOF\nhi\nEOF", "cat <<EOF\nbye\nEOF", false},
		{"a quoted here-document delimiter", "cat <<'EOF'\n$HOME\nEOF", "cat <<EOF\n$HOME\nEOF", false},
		{"a here-string", "cat <<< hi", "cat <<< bye", false},
		{"quoting", `rm -rf "build"`, "rm -rf build", false},
		{"a glob quoted", "rm '*.o'", "rm *.o", false},
		{"an assignment", "A=1 make", "make", false},
		{"a substitution", "echo $(id)", "echo $(whoami)", false},
		{"arithmetic", "echo $((1+2))", "echo $((1 + 2))", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := SyntaxKey(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			b, err := SyntaxKey(tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if (a == b) != tt.same {
				t.Errorf("SyntaxKey(%q) = %q, SyntaxKey(%q) = %q, want same=%v", tt.a, a, tt.b, b, tt.same)
			}
		})
	}
}

// TestSyntaxKeyRefuses: what the analysis would not read has no canonical
// form.
func TestSyntaxKeyRefuses(t *testing.T) {
	for _, src := range []string{"rm -rf 'build", "ls\r", "ls\x00", "ls \xff", "echo $(", "if true; then"} {
		if c, err := SyntaxKey(src); !errors.Is(err, ErrNoSyntaxKey) {
			t.Errorf("SyntaxKey(%q) = %q, %v, want ErrNoSyntaxKey", src, c, err)
		}
	}
}

// FuzzSyntaxKey: any script either has no key or one key (no panic on
// any node of the tree); blank lines before it change nothing; a script
// with a key is one the analysis reads.
func FuzzSyntaxKey(f *testing.F) {
	for _, s := range []string{
		"git diff --quiet && git push --force",
		"while true; do rm -rf build; done",
		"cat <<'EOF' > out\n$HOME\nEOF\nrm x",
		"(cd sub && make) 2>&1 | tee log &",
		`f() { A=1 bash -c 'rm -rf "$1"' _ x; }; f # c`,
		"case $x in a|b) rm a;; *) :;; esac; [[ -n $y ]] || exit 1",
		"for ((i=0; i<3; i++)); do echo ${a[i]:-x} $((i*2)) >(cat) <(ls); done; select x in a; do :; done",
		"declare -A m=([k]=v); let x++; coproc c { ls; }; time ! ls; trap '' INT",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		k, err := SyntaxKey(src)
		if err != nil {
			return
		}
		again, err := SyntaxKey(" \n\t\n" + src)
		if err != nil || again != k {
			t.Fatalf("%q: blank lines before it changed its key (%v)", src, err)
		}
	})
}
