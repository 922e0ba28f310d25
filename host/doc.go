// Package host loads permhost plugins and calls them under the limits of
// package sandbox.
//
// A plugin is an Extism-compatible WebAssembly module exporting
// permhost_decide and permhost_abi (see package abi). Load checks its pin,
// its imports and its ABI version once; [Plugin.Decide] and [Plugin.Call] then
// run one decision each on an instance taken from the plugin's own pool.
//
// The Extism host ABI (the "extism:host/env" module that Extism PDKs import)
// is implemented here in Go rather than through the Extism SDK's kernel: a
// call costs a few microseconds instead of tens, and the per-call state
// (input, output, the memory blocks the plugin allocates, its logs) lives in
// one arena per instance that is reused from call to call. RATIONALE.md
// explains the choice.
//
// Every phase of a plugin has a deadline: Load verifies the module against
// the load-time limits of sandbox.Limits before compiling it, compiles where
// the compile can be abandoned (CompileTimeout), and makes the first
// instance ready (instantiation with the start function, _initialize,
// permhost_abi, permhost_describe) under InitTimeout. Instances are made
// ready ahead of need by a background goroutine, under the same budget, and
// for modules with a runtime to start warmed up with one decision under the
// plugin's own Timeout, so that a decision almost never pays for them; a
// decision never waits for a warm-up that may not end, and waits for a free instance at most
// until its deadline. Each instance's linear memory is a mapping of the
// memory limit, so growing it never copies; linear memory, tables and the
// kernel's arena share the memory limit. Close waits for running guests at
// most a short grace.
//
// Only packages abi and plugins/pdk promise compatibility; this package's
// API may change with permhost. [Plugin] is usable wherever a plugin runs,
// in the proxy's process or in a worker process of its own.
//
// Every failure is an [*Error] whose [Kind] says what went wrong; an instance
// that failed in any way is discarded, never reused.
//
// A [Chain] runs plugins in layer order and combines their decisions
// (docs/abi.md); the option a decision answers with is chosen by
// internal/answer, preferring options that change nothing beyond the call.
// The chain cannot allow by accident: a member that fails or panics is that
// member's failure under its failure policy, and a decision whose context
// ends before the chain is done is a cancel. Members still loading
// ([Loading]) are passed over while the ready ones decide, then waited for
// only until their load deadline. The request is encoded once per decision
// for all its plugins, and each plugin checks its own input limit before
// anything is copied for it.
//
// Only packages abi and plugins/pdk carry a compatibility promise; this
// package's API may change between releases.
package host
