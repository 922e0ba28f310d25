// Package docs carries the reference documents into the permhost binary,
// so that `permhost help config`, `permhost help test-file`, `permhost
// help abi`, `permhost help agents`, `permhost help audit-log`, `permhost
// help web-approver`, `permhost help bundles` and
// `permhost plugins NAME` print them to a user who has only the binary. It
// has no compatibility promise.
//
// plugins/ holds a copy of each standard plugin's README
// (plugins/examples/NAME/README.md, which go:embed cannot reach from
// here), refreshed by `make plugin-docs`; the package's test fails when a
// copy differs from its source.
package docs

import (
	"embed"
	"path"
)

// Config is config.md, the reference of permhost.toml.
//
//go:embed config.md
var Config string

// TestFile is testing.md, the format of permhost test's files.
//
//go:embed testing.md
var TestFile string

// ABI is abi.md, the plugin ABI.
//
//go:embed abi.md
var ABI string

// WebApprover is web-approver.md, the leader's web page and its trust
// model.
//
//go:embed web-approver.md
var WebApprover string

// Bundles is bundles.md, policy bundles in OCI registries.
//
//go:embed bundles.md
var Bundles string

// AuditLog is audit-log.md, the format of the signed decision log.
//
//go:embed audit-log.md
var AuditLog string

// Agents is agents.md, the agents permhost reads and how.
//
//go:embed agents.md
var Agents string

//go:embed plugins/*.md
var plugins embed.FS

// PluginsDir is the directory, relative to this package, of the copies
// of the standard plugins' READMEs.
const PluginsDir = "plugins"

// Plugin returns the documentation of the standard plugin name, its
// README, and whether there is one.
func Plugin(name string) (string, bool) {
	b, err := plugins.ReadFile(path.Join(PluginsDir, name+".md"))
	if err != nil {
		return "", false
	}
	return string(b), true
}
