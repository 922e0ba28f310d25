// Package config reads permhost.toml: the strategy, timeouts, the headless
// policy, the decision log and the plugin chain. Every mistake is reported
// once, at load, as an [*Error] naming the file, the line and the key, before
// any agent starts.
package config
