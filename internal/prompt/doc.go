// Package prompt asks the person at a terminal to choose one of the options
// of a permission request: the title, the command or paths, the plugins'
// explanations and risk, and one key per offered option. Every field is
// the agent's, a worker's or a plugin's, and is shown as
// [github.com/permhost/permhost/internal/safetext.Terminal] renders it.
//
// Keys pressed within the grace period after the question appears (default
// 200 ms) are ignored, and so is anything typed before it appeared, so that
// a keystroke meant for something else never answers a question the person
// has not seen (an anti-misclick guard, as in Claude Code's permission
// dialog). Ctrl-C is left to the terminal: it raises SIGINT, and the caller
// cancels the context.
//
// [Terminal.Ask] is reusable by any front end (permhost run, demo, leader):
// it takes plain data, not ACP or plugin types.
package prompt
