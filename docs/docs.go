// Package docs carries the reference documents into the permhost binary,
// so that `permhost help config`, `permhost help test-file`, `permhost
// help abi` and `permhost help audit-log` print them to a user who has only the binary. It has no
// compatibility promise.
package docs

import _ "embed" // the documents

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

// AuditLog is audit-log.md, the format of the signed decision log.
//
//go:embed audit-log.md
var AuditLog string
