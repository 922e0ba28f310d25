// Package auditlog chains and signs a JSON-lines log so that an edit to it
// can be found (docs/audit-log.md is the format, for verifiers in other
// languages).
//
// Every line is one JSON object that starts with "seq" (its position in the
// chain, from 1) and "prev" (the hex sha256 of the previous line's bytes,
// its newline excluded). A seal line, {"seq","prev","seal":{…}}, signs with
// ed25519 the seq and prev it carries, so that everything before it is
// signed through the chain. The writer (writer.go) seals when its caller
// asks (policy's decision log: 0.1 s after an entry) and every sealEvery
// lines, and rotates
// the file by size: the next file's first line links to the previous
// file's last. Verify (verify.go) names the first line that breaks the
// chain and how (modified, removed, inserted, reordered, a seal forged or
// signed by another key, a file missing), and a tail left unsigned by a
// crash or a cut.
package auditlog
