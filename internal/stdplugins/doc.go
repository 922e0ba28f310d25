// Package stdplugins holds the standard plugins: small modules built
// reproducibly from plugins/std (Rust: plan-mode, protect-secrets,
// explainer, team-rules, whose Go reference implementations are in
// plugins/examples) and plugins/examples (C and AssemblyScript), embedded
// so that a permhost binary has a working policy with nothing else installed (no Go, no make,
// no network). A configuration names one as path = "std:NAME".
//
// The modules are committed here by `make plugins`, with TOOLCHAIN, the
// toolchains that built them. The package's test builds the plugins from
// their sources (plugins/examples/plugins.mk, reusing build/plugins when it
// is current) and fails when a committed module is not byte for byte what
// the sources build to, so the embedded bytes are exactly the sources.
// CONFIGKEYS lists the configuration keys each module declares, so that a
// configuration naming one is checked before the agent starts without
// compiling it first; plugins/examples' test holds it to the modules' own
// answers.
package stdplugins
