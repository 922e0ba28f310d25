// Package fspath resolves a path the way the kernel opens it, for the
// decisions that are about a file: the session's working directory joined
// first, then each component in turn, a symlink replaced by its target as
// soon as it is met and ".." taken from the directory reached so far, not
// from the text. Judging the cleaned text instead lets "k/../x" with
// k -> elsewhere, or a "config.txt" that is a symlink to ".env", pass for
// what they are not (RATIONALE.md, "Paths are judged as the OS opens them").
//
// [Resolve] is the one resolver every decision uses: the plugins' request
// (abi.Path.Resolved), permhost's grants, the allowances of a governed
// session and the files `permhost run --allow-fs` serves.
package fspath
