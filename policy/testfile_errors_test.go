package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLoadTestFileErrors: a test file's mistakes are reported as a
// configuration's: file, line, key, a suggestion, every one at once, and
// no internal "policy:" prefix.
func TestLoadTestFileErrors(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"typo in a case", `plugin = "p.wasm"
[[case]]
name = "ok"
kind = "execute"
command = "ls"
expect = "allow"
[[case]]
name = "rm"
kind = "execute"
comand = "rm -rf ~"
expect = "reject"
`, `tests.toml:10: case[1].comand: unknown key (did you mean "command"?)`},
		{"typo at the top", "plugn = \"p.wasm\"\n[[case]]\nkind = \"read\"\npath = \"a\"\nexpect = \"allow\"\n",
			`tests.toml:1: plugn: unknown key (did you mean "plugin"?)`},
		{"typo in defaults", "[defaults]\noptons = \"codex\"\n[[case]]\nkind = \"read\"\npath = \"a\"\nexpect = \"allow\"\n",
			`tests.toml:2: defaults.optons: unknown key (did you mean "options"?)`},
		{"bad outcome and no kind", "[[case]]\nname = \"x\"\nkind = \"read\"\npath = \"a\"\nexpect = \"rejct\"\n[[case]]\nname = \"y\"\nexpect = \"allow\"\n",
			"tests.toml:5: case[0].expect: (\"x\") \"rejct\" is not an outcome (did you mean \"reject\"?)\ntests.toml:6: case[1]: (\"y\") give kind (with command, path or url) or request"},
		{"syntax", "[[case]]\nkind = \"read\nexpect = \"allow\"\n", `tests.toml:2: `},
		{"no case", "plugin = \"p.wasm\"\n", `tests.toml: no [[case]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tests.toml"), []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir) // the file as a user names it
			_, err := LoadTestFile("tests.toml")
			if !errors.Is(err, ErrTestFile) {
				t.Fatalf("error %v does not wrap ErrTestFile", err)
			}
			got := err.Error()
			if tt.name == "syntax" {
				if len(got) < len(tt.want) || got[:len(tt.want)] != tt.want {
					t.Errorf("got %q, want it to start %q", got, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
