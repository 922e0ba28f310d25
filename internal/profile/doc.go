// Package profile describes the ACP agents permhost sits in front of, so
// that one policy reads every agent the same way.
//
// Each agent puts the same facts in different places — claude-agent-acp a
// command in rawInput.command, codex-acp 0.16 an argv ["/bin/bash","-lc",…],
// Gemini CLI only in the title — names its tools differently, and means
// very different things by "always allow". A [Profile] is that knowledge as
// data, one small file per agent: which agentInfo names and versions it is
// for ([Match]), where the command, its directory, the paths and the URLs
// are for each tool family ([Fields] of [Source]s), the agent's own tool
// name and the family each tool belongs to, which of its modes ask and
// which decide by themselves ([Mode]), the mode to use so that it asks and
// how to switch to it ([Switch]), what each durable option really
// grants ([Grant]), and, for an agent whose own configuration decides what
// it asks whatever its mode, that configuration's setting that makes it
// ask ([Settings]). [Recognize] picks the profile from initialize's
// agentInfo; an agent no profile matches gets [Generic], which reads only
// what ACP itself defines plus the common rawInput keys, and never treats a
// title as a command.
//
// [Profile.Read] applies a profile to a merged tool call and returns the
// [Facts] that become the plugins' abi.Action: the same action looks the
// same whichever agent asks. The other methods answer what a governing
// proxy needs to know about modes, options and elicitations.
//
// The ACP SDK example agent sends no agentInfo; it is read with [Generic],
// which covers its shape (rawInput.path, locations) exactly.
package profile
