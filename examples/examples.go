// Package examples holds permhost's example configuration, embedded so that
// `permhost demo` runs it with nothing to set up.
package examples

import _ "embed"

// Config is examples/permhost.toml: the default policy of `permhost demo`.
// Its plugin paths point into ../build/plugins, where `make plugins` puts
// the example plugins.
//
//go:embed permhost.toml
var Config []byte

// PluginsDir is how Config names the example plugins' directory.
const PluginsDir = "../build/plugins/"
