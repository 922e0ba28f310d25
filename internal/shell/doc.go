// Package shell finds the shell command in a tool call and analyses it for
// plugins: every simple command wherever it sits (substitutions, process
// substitutions, subshells, blocks, control flow, functions, pipelines,
// background jobs), with wrappers such as bash -c, env, timeout, nice,
// nohup, command, exec, sudo, setsid, stdbuf, time, xargs, watch, flock,
// eval and find -exec peeled off, quotes resolved, assignments and
// redirects recorded, and the files a call writes or reads resolved
// against the session's working directory.
//
// The analysis never shortens a command silently: whatever it cannot fully
// understand (a parse error, a carriage return, a non-literal bash -c or
// eval script, alias definitions, zsh syntax, a write after cd into an
// unknown directory) sets Parsed to false with a Reason, and a plugin must
// then not treat the script as safe. There is no cap on the number of
// commands walked.
//
// Words are resolved with mvdan.cc/sh/v3/expand.Fields against an empty
// environment and without globbing; a word that depends on run-time values
// (parameters, substitutions, globs, brace expansion, ~user) is kept as
// written and marks its command Dynamic.
package shell
