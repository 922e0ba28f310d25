// Package abi is the contract between permhost and its WebAssembly plugins,
// version 1.
//
// A plugin is an Extism-compatible module. It exports:
//
//   - permhost_decide: reads a JSON [Request] as its Extism input and sets a
//     JSON [Decision] as its output. A non-zero return or an Extism error is a
//     failure.
//   - permhost_abi: sets {"major":1,"minor":N} ([Version]) as its output.
//   - permhost_describe (optional): sets a JSON [Info] as its output.
//
// This package and plugins/pdk are the only permhost packages with a
// compatibility promise: fields are only ever added, never renamed or
// removed, within a major version. 1.1 added [Action] (what a call does, the
// same whichever agent asks), Session.Home, Peer.Profile, Option.Grants and
// the Pipeline, Stage and Source of each shell [Command]; 1.2 added
// Path.Asked and Path.Resolved (the file the OS opens, symlinks and ".."
// applied as the kernel does). A host runs the plugins of every older minor
// unchanged: a field they know keeps its meaning. It uses
// the standard library only and builds for GOOS=wasip1 so that Go plugins can
// import it. docs/abi.md describes the same contract for authors in other
// languages; request.schema.json and decision.schema.json are its JSON Schema,
// embedded as [RequestSchema] and [DecisionSchema]. Go plugins use it through
// github.com/permhost/permhost/plugins/pdk.
package abi
