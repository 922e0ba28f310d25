// Package suggestions validates and snapshots the durable changes a
// permission option would make (DESIGN §5), and tells which options are
// durable.
//
// Two descriptions of a change are accepted on an ACP PermissionOption:
//
//   - "acp-meta": option _meta.permission = {"version":1,"changes":[...]}
//     (claude-agent-acp PR #930, codex-acp PR #342). Each change is a
//     policy_rule (operation add/remove/replace, ruleBehavior allow/deny/ask),
//     a grant (operation grant) or a permission_mode (operation set, mode),
//     with a non-empty description, an optional lifetime {scope, storage?}
//     and targets of type tool, command, network or filesystem. The codex
//     revision {"version":1,"description":...} without changes describes the
//     effect in prose only and is reported as unknown.
//   - "claude-sdk": a list of Claude Agent SDK PermissionUpdate records under
//     option _meta.claudeCode.updatedPermissions, .suggestions or
//     .permissionUpdates.
//
// Validation takes the whole set or nothing: any unknown type, key or
// value, a wrong version, a string over 10,000 characters or holding a
// control or bidirectional-override character, more than 100 changes, or
// more than 100 rules, directories, targets or argv words in one change
// drops the set, and the option is shown as durable with unknown changes.
// A valid set is copied once into a snapshot that shares nothing with the
// input.
package suggestions
