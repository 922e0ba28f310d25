package stdplugins

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
)

// Prefix starts a configuration path that names a standard plugin.
const Prefix = "std:"

// ErrUnknown is wrapped by the error for a name no standard plugin has.
var ErrUnknown = errors.New("stdplugins: no such standard plugin")

//go:embed *.wasm
var modules embed.FS

// Toolchain is TOOLCHAIN: the toolchains that built the modules, one
// "tool version" line each.
//
//go:embed TOOLCHAIN
var Toolchain string

// names are the plugins' names, sorted.
var names = sync.OnceValue(func() []string {
	entries, err := fs.ReadDir(modules, ".")
	if err != nil {
		panic(err) // an embed.FS always reads
	}
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".wasm"))
	}
	slices.Sort(out)
	return out
})

// Names returns the standard plugins' names, sorted.
func Names() []string { return slices.Clone(names()) }

// Name returns the plugin name of a "std:NAME" path and whether path is
// one. The name is not checked; [Module] does.
func Name(path string) (string, bool) {
	return strings.CutPrefix(path, Prefix)
}

// Module returns a copy of the module of the standard plugin name.
func Module(name string) ([]byte, error) {
	if !slices.Contains(names(), name) {
		return nil, unknown(name)
	}
	return modules.ReadFile(name + ".wasm")
}

// SHA256 returns the hex sha256 of the module of the standard plugin name,
// what a configuration's sha256 pins.
func SHA256(name string) (string, error) {
	if !slices.Contains(names(), name) {
		return "", unknown(name)
	}
	return sums()[name], nil
}

var sums = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, n := range names() {
		b, _ := modules.ReadFile(n + ".wasm")
		sum := sha256.Sum256(b)
		m[n] = hex.EncodeToString(sum[:])
	}
	return m
})

func unknown(name string) error {
	return fmt.Errorf("%w %q (the standard plugins are %s)", ErrUnknown, name, strings.Join(names(), ", "))
}

// configKeysFile is CONFIGKEYS: for each module, its sha256 and the
// configuration keys its permhost_describe declares, one line each
// ("NAME SHA256 KEY..."), written by plugins/examples' test with -update (which
// `make plugins` runs), which checks it against each module's own answer.
//
//go:embed CONFIGKEYS
var configKeysFile string

// ConfigKeysFile is the name of the file ConfigKeys reads, for the test
// that writes it.
const ConfigKeysFile = "CONFIGKEYS"

var configKeys = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for line := range strings.SplitSeq(configKeysFile, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		m[f[0]+" "+f[1]] = f[2:]
	}
	return m
})

// ConfigKeys returns the configuration keys the standard plugin name
// declares, known without loading it, when sha is its module's sha256
// (what CONFIGKEYS was written for); false otherwise. A configuration's
// keys can then be checked before the agent starts even on a first run, as
// the compile cache's remembered description allows on later ones. It is a
// hint: the loaded plugin's own description is authoritative.
func ConfigKeys(name, sha string) ([]string, bool) {
	keys, ok := configKeys()[name+" "+sha]
	if !ok {
		return nil, false
	}
	if keys == nil {
		keys = []string{}
	}
	return slices.Clone(keys), true
}
