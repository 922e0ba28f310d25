// Package examples holds permhost's example configuration, embedded so that
// `permhost demo` runs it and `permhost init` writes it with nothing to set
// up.
package examples

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"regexp"
)

// Config is examples/permhost.toml: the default policy of `permhost demo`
// and the starter of `permhost init`. Its plugins are standard plugins
// (path = "std:NAME"), inside the permhost binary.
//
//go:embed permhost.toml
var Config []byte

var stdPath = regexp.MustCompile(`(?m)^path = "std:([a-z0-9-]+)"`)

// WithPluginsDir returns cfg with each standard plugin's path replaced by
// DIR/NAME.wasm (quoted as a TOML string), so that the same policy runs
// plugins built from the sources: `permhost demo --plugins build/plugins`
// and the tests of the example plugins.
func WithPluginsDir(cfg []byte, dir string) []byte {
	return stdPath.ReplaceAllFunc(cfg, func(m []byte) []byte {
		name := stdPath.FindSubmatch(m)[1]
		return []byte("path = " + quote(filepath.Join(dir, string(name)+".wasm")))
	})
}

// quote writes s as a TOML basic string.
func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || r == 0x7f:
			b = fmt.Appendf(b, `\u%04X`, r)
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}
