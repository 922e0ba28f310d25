// Package acptest is test support for permhost's end-to-end tests: it loads
// recorded ACP transcripts, plays either side of one (a scripted fake agent,
// runnable as a separate process, and a fake client), drives real agents
// through a small JSON-RPC client, and installs the ACP SDK's example agent.
//
// Every comparison is byte for byte: a transcript's messages are kept as the
// exact bytes of the file, and a player expects to receive each of the other
// side's lines exactly as written, newline included.
//
// The recorded transcripts live in <repo>/testdata/transcripts, so a fresh
// clone tests on its own.
package acptest
