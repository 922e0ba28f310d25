// Package config reads permhost.toml: the strategy, timeouts, the headless
// policy, the decision log, the plugin chain and the [session] table (how
// permhost governs modes, durable options and file access). Every mistake
// is reported once, at load, as an [*Error] naming the file, the line and
// the key, before any agent starts.
package config
