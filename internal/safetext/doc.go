// Package safetext renders text that a peer (an agent, an editor, a
// worker), a plugin or a recording supplied, for a person: on a terminal
// ([Terminal], [TerminalLines]), in HTML ([HTML]) or in JSON a person may
// read on a terminal ([JSON]). Every place that shows
// such text to a person goes through it, so that the text can neither
// steer the terminal nor show the person something other than what it is.
//
// Ordinary text, including non-ASCII letters, emoji and CJK, is unchanged.
// What could steer or hide is shown escaped, in Go's notation, so that the
// person sees that it was there:
//
//   - control characters (C0, DEL, C1): "\x1b", "\a", "\n", "\u009b". An
//     escape sequence (CSI, OSC, ...) is inert once its ESC or C1
//     introducer is escaped: "\x1b]2;title\a" shows as it is written here.
//   - format characters (Unicode category Cf): bidi overrides, embeddings
//     and isolates (U+202A–U+202E, U+2066–U+2069), marks (U+200E, U+200F,
//     U+061C), zero-width characters (U+200B–U+200D, U+2060, U+FEFF), tags
//     (U+E0000–U+E007F): "\u202e", "\U000e0041". A zero-width joiner
//     between two pictographs is kept: it joins an emoji sequence.
//   - the line and paragraph separators U+2028 and U+2029: "\u2028".
//   - each byte of invalid UTF-8: "\xff".
//
// A backslash is not escaped: commands and Windows paths keep theirs. Text
// can therefore look like an escape without being one; it cannot act as
// one. Rendering is per character and stateless, so text that arrives in
// chunks may be rendered chunk by chunk, and it is idempotent: rendering
// rendered text changes nothing.
package safetext
