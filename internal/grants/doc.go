// Package grants is permhost's own "always allow": a standing decision of
// the person, with a scope permhost states exactly and matches exactly,
// instead of the agent's durable options, which hand later decisions to the
// agent with a scope wider than their names say (docs/agents.md).
//
// A [Grant] allows either one exact command — the shell analysis' commands,
// argv after unwrapping, wrappers, assignments and redirects included, and
// the whole script's syntax tree (how the commands are joined: operators,
// loops, subshells, redirections, here-document bodies, quoting; blanks and
// comments aside), run in one directory — or edits under one directory or to
// a few files, in one project (the session's working directory) and, for
// scope "session", in one session only. [Offers] builds the options permhost
// shows the person for a request, each naming its grant; [Grant.Matches]
// decides whether a later request falls inside a grant, never widening:
// another argv, one more command, another operator or loop around the same
// commands, another directory, another project, a path that leaves the
// directory once cleaned or once its symlinks are resolved, all fall
// outside.
//
// A [Store] keeps grants in one JSON file (by default
// $XDG_STATE_HOME/permhost/grants.json), written atomically with mode 0600
// in a 0700 directory, changed under a lock so that several permhost
// processes can share it, and re-read when it changes so that `permhost
// grants revoke` takes effect at once. A file that cannot be trusted (not
// strict JSON, an unknown field, a grant that does not validate, writable
// by others) grants nothing.
package grants
