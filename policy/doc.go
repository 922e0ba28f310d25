// Package policy is the decision pipeline between the ACP proxy (or the
// headless client) and the plugin chain: it turns a session/request_permission
// plus what the proxy knows of its session into an [abi.Request], runs the
// chain, and turns the verdict back into an ACP answer — to the agent
// directly, or to the person with the plugins' explanations — and writes one
// decision-log line per decision.
//
// It is the only package where acp, host and builtin meet below the CLI, so
// that cmd/permhost stays wiring and flags.
package policy
