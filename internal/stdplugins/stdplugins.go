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
