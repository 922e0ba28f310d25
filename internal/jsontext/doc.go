// Package jsontext holds permhost's one set of strict JSON helpers, for
// everything it acts on that came from a peer (the editor, the agent, a
// leader, a plugin's output):
//
//   - [Check] validates one value at any depth without recursion: syntax,
//     UTF-8, unpaired surrogate escapes, and duplicate keys compared after
//     unescaping and case folding, since Go's encoding/json matches keys
//     case-insensitively (keeping the last) while the agents' JavaScript and
//     Rust parsers match them exactly (keeping the last or failing);
//   - [Object] and [Fields] split a checked object into its members, the
//     latter refusing keys the caller does not name (exact match);
//   - [String] and [Quote] decode and encode strings ([Quote] never
//     HTML-escapes); [Fold] is the folding the duplicate check uses;
//   - [CanonicalID] gives a JSON-RPC id one canonical text, so ids are
//     matched by value.
//
// A value these helpers accept reads the same in every conforming parser.
package jsontext
